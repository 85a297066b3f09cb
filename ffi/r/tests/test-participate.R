# participate(): the arguments an R user can get wrong are refused with their cause, before any
# network traffic, and an interrupt stops a follow. The job itself (an R session among a dozen
# participants, bit for bit equal to the in-process fit) is tested by scripts/test-net-hosts.sh.
source("helpers.R")

rows <- data.frame(age = c(50, 60), bmi = c(20, 30), target = c(100, 150))
dir <- tempfile("participate")
dir.create(dir)
token <- file.path(dir, "token")
writeLines("participant-token-r", token)
policy <- file.path(dir, "policy.toml")
writeLines(c('columns = ["age", "bmi", "target"]', "max_epsilon_per_job = 2.0",
             "total_epsilon = 10.0"), policy)
job <- strrep("ab", 32)
# Nothing listens on port 9: a participant that gets as far as the network keeps asking, with
# backoff, until it is stopped.
call <- function(data = rows, net_lib = Sys.getenv("DPDIST_NET_LIB"), ca = token, ...) {
  participate("https://127.0.0.1:9", ca = ca, token_file = token, policy = policy,
              state_dir = file.path(dir, "state"), data = data, job = job, net_lib = net_lib, ...)
}

# Tests that load libdpdist_net (DPDIST_NET_LIB) or also need a CA (DPDIST_TEST_CA) are left
# out, said loudly, without them; CI sets both (scripts/test-all.sh).
needs <- function(variables, tests) {
  missing <- variables[!nzchar(Sys.getenv(variables))]
  if (length(missing) == 0) return(tests)
  if (nzchar(Sys.getenv("CI"))) stop("CI must set ", paste(missing, collapse = ", "))
  message("SKIPPED (", paste(missing, collapse = ", "), " unset): ",
          paste(names(tests), collapse = ", "))
  list()
}

run_tests(c(
  list(
    a_missing_net_lib_is_named = function() {
      e <- expect_dpdist_error(call(net_lib = ""), "DPD_ERR_INVALID_ARGUMENT")
      stopifnot(grepl("DPDIST_NET_LIB", conditionMessage(e)))
      e <- expect_dpdist_error(call(net_lib = file.path(dir, "nothing.so")),
                               "DPD_ERR_INVALID_ARGUMENT")
      stopifnot(grepl("does not exist", conditionMessage(e)))
    }
  ),
  needs("DPDIST_NET_LIB", list(
    a_column_that_is_not_numeric_is_named = function() {
      e <- expect_dpdist_error(call(data = data.frame(age = 1, who = "x", target = 2)),
                               "DPD_ERR_INVALID_ARGUMENT")
      stopifnot(grepl("who", conditionMessage(e)))
    },
    rows_without_column_names_are_refused = function() {
      e <- expect_dpdist_error(call(data = unname(as.matrix(rows))), "DPD_ERR_INVALID_ARGUMENT")
      stopifnot(grepl("column names", conditionMessage(e)))
    },
    a_ca_that_is_not_a_certificate_is_named = function() {
      e <- expect_dpdist_error(call(), "DPD_NET_ERR_TLS")
      stopifnot(grepl("token", conditionMessage(e)))
    }
  )),
  needs(c("DPDIST_NET_LIB", "DPDIST_TEST_CA"), list(
    a_missing_value_is_named_by_row_and_column = function() {
      # R's 1-based row and the column's name.
      with_na <- rows
      with_na$bmi[2] <- NA
      e <- expect_dpdist_error(call(data = with_na, ca = Sys.getenv("DPDIST_TEST_CA")),
                               "DPD_NET_ERR_INVALID_ARGUMENT")
      stopifnot(grepl('row 2, column "bmi"', conditionMessage(e), fixed = TRUE))
    },
    a_poll_interval_below_10_ms_is_refused = function() {
      e <- expect_dpdist_error(call(ca = Sys.getenv("DPDIST_TEST_CA"), poll_ms = 1L),
                               "DPD_NET_ERR_INVALID_ARGUMENT")
      stopifnot(grepl("poll_ms", conditionMessage(e)))
    },
    an_interrupt_stops_the_follow = function() {
      # A shell sends SIGINT (what Ctrl-C sends) after 2 s; a watchdog kills this process if
      # the interrupt is not honoured within 60 s, so a regression fails the check instead of
      # hanging it.
      pid <- Sys.getpid()
      system(sprintf(paste(
        "(sleep 2; kill -INT %d) >/dev/null 2>&1 &",
        "(for i in $(seq 60); do sleep 1; kill -0 %d 2>/dev/null || exit 0; done;",
        "kill -9 %d) >/dev/null 2>&1 &"), pid, pid, pid))
      started <- Sys.time()
      e <- expect_dpdist_error(call(ca = Sys.getenv("DPDIST_TEST_CA"), poll_ms = 20L),
                               "DPD_NET_ERR_STOPPED")
      waited <- as.numeric(difftime(Sys.time(), started, units = "secs"))
      stopifnot(grepl("interrupted", conditionMessage(e)), waited >= 1.5)
      cat(sprintf("  interrupted after %.1f s\n", waited))
    }
  ))
))
