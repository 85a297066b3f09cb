# The thread cap: settable once, before any parallel work (this file runs in its own process).
source("helpers.R")

run_tests(list(
  thread_cap_is_set_once = function() {
    dpdist_set_threads(1)
    stopifnot(dpdist_threads() == 1)
    expect_dpdist_error(dpdist_set_threads(2), "DPD_ERR_ALREADY_INITIALIZED")
    # Work still runs on the capped pool.
    x <- matrix(1, nrow = 10, ncol = 2)
    r <- dca_simulate_round(x, bound = 1, rng = dpdist_rng(insecure_seed = 1), non_private = TRUE)
    expect_near(r$sum, c(10, 10), 10 * 2^-r$frac_bits)
  }
))
