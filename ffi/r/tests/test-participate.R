# participate(): the arguments an R user can get wrong are refused with their cause, before any
# network traffic. The job itself (an R session among a dozen participants, bit for bit equal to
# the in-process fit) is tested by scripts/test-net-hosts.sh.
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
call <- function(data = rows, net_lib = Sys.getenv("DPDIST_NET_LIB"), ca = token, ...) {
  participate("https://127.0.0.1:9", ca = ca, token_file = token, policy = policy,
              state_dir = file.path(dir, "state"), data = data, job = job, net_lib = net_lib, ...)
}

e <- expect_dpdist_error(call(net_lib = ""), "DPD_ERR_INVALID_ARGUMENT")
stopifnot(grepl("DPDIST_NET_LIB", conditionMessage(e)))
e <- expect_dpdist_error(call(net_lib = file.path(dir, "nothing.so")), "DPD_ERR_INVALID_ARGUMENT")
stopifnot(grepl("does not exist", conditionMessage(e)))

net_lib <- Sys.getenv("DPDIST_NET_LIB")
if (!nzchar(net_lib)) {
  if (nzchar(Sys.getenv("CI"))) stop("CI must set DPDIST_NET_LIB (scripts/test-all.sh does)")
  message("DPDIST_NET_LIB is not set: skipping the checks that load libdpdist_net")
} else {
  e <- expect_dpdist_error(call(data = data.frame(age = 1, who = "x", target = 2)),
                           "DPD_ERR_INVALID_ARGUMENT")
  stopifnot(grepl("who", conditionMessage(e)))
  e <- expect_dpdist_error(call(data = unname(as.matrix(rows))), "DPD_ERR_INVALID_ARGUMENT")
  stopifnot(grepl("column names", conditionMessage(e)))
  # The CA file is not a certificate: the library says so and names it.
  e <- expect_dpdist_error(call(), "DPD_NET_ERR_TLS")
  stopifnot(grepl("token", conditionMessage(e)))
  # A missing value is refused with its place, R's 1-based row and the column's name.
  ca <- Sys.getenv("DPDIST_TEST_CA")
  if (nzchar(ca)) {
    with_na <- rows
    with_na$bmi[2] <- NA
    e <- expect_dpdist_error(call(data = with_na, ca = ca), "DPD_NET_ERR_INVALID_ARGUMENT")
    stopifnot(grepl('row 2, column "bmi"', conditionMessage(e), fixed = TRUE))
    e <- expect_dpdist_error(call(ca = ca, poll_ms = 1L), "DPD_NET_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("poll_ms", conditionMessage(e)))
  } else if (nzchar(Sys.getenv("CI"))) {
    stop("CI must set DPDIST_TEST_CA (scripts/test-all.sh does)")
  }
}
cat("participate(): argument checks passed\n")
