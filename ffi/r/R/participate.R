# An R session as a data holder in a dpdist job: its rows stay in this process and leave it only
# as sealed shares. The network side lives in a separate library, libdpdist_net, which this
# package loads only when participate() is called (its own build has no network code).

# The libdpdist_net functions net.c calls, in the order it expects them.
net_functions <- c(
  "dpd_net_participant_new", "dpd_net_participant_set_rows",
  "dpd_net_participant_set_insecure_fixed_seed", "dpd_net_participant_set_poll_ms",
  "dpd_net_participant_follow_job", "dpd_net_participant_outcome_reason",
  "dpd_net_participant_free", "dpd_net_last_error_message", "dpd_net_status_name",
  "dpd_net_participant_stop"
)

# Follows `job` to its end as one participant (documented in man/participate.Rd).
participate <- function(aggregator, ca, token_file, policy, state_dir, data, job,
                        poll_ms = 200L, insecure_seed = NULL,
                        net_lib = Sys.getenv("DPDIST_NET_LIB")) {
  single_string <- function(x, name) {
    if (!is.character(x) || length(x) != 1L || is.na(x) || !nzchar(x)) {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT", sprintf("`%s` must be a single non-empty string", name))
    }
    x
  }
  for (arg in c("aggregator", "ca", "token_file", "policy", "state_dir", "job")) {
    single_string(get(arg), arg)
  }
  if (!is.character(net_lib) || length(net_lib) != 1L || !nzchar(net_lib)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", paste(
      "`net_lib` must name libdpdist_net (build it with `cargo build --release -p",
      "dpdist-capi-net`; it is target/release/libdpdist_net.so), or set DPDIST_NET_LIB"))
  }
  if (!file.exists(net_lib)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", sprintf("`net_lib` %s does not exist", net_lib))
  }
  matrix <- participant_matrix(data)
  if (!is.null(insecure_seed)) {
    message("NON-PRIVATE: participate() draws noise and masks from the fixed seed ",
            format(insecure_seed, scientific = FALSE), " (tests only)")
  }
  dll <- dyn.load(net_lib, local = TRUE, now = TRUE)
  functions <- lapply(net_functions, function(f) getNativeSymbolInfo(f, dll)$address)
  files <- c(aggregator, path.expand(c(ca, token_file, policy, state_dir)))
  out <- .Call(dpdr_net_participate, functions, files, matrix, colnames(matrix), job,
               poll_ms, insecure_seed)
  structure(out, class = "dpdist_participation")
}

# The rows as a double matrix with column names: a data.frame of numeric columns or a numeric
# matrix. Missing values are refused by the library, with their row and column.
participant_matrix <- function(data) {
  if (is.data.frame(data)) {
    numeric <- vapply(data, is.numeric, logical(1))
    if (!all(numeric)) {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT", sprintf(
        "`data` column(s) %s are not numeric", paste(names(data)[!numeric], collapse = ", ")))
    }
    data <- as.matrix(data)
  }
  if (!is.matrix(data) || !is.numeric(data)) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`data` must be a data.frame or a numeric matrix")
  }
  if (is.null(colnames(data))) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT", "`data` needs column names (the job reads columns by name)")
  }
  storage.mode(data) <- "double"
  data
}

print.dpdist_participation <- function(x, ...) {
  cat(sprintf("dpdist job %s; this participant %s%s\n", x$state,
              if (x$took_part) "took part" else "did not take part",
              if (nzchar(x$reason)) paste0(" (", x$reason, ")") else ""))
  invisible(x)
}
