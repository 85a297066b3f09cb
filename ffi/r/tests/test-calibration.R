# Calibration values against the formulas, computed independently in base R.
source("helpers.R")

run_tests(list(
  classic_gaussian_matches_formula = function() {
    # sqrt(2 ln(1.25 / 1e-5)) * 1 / 0.5 = sqrt(2 * 11.7360690) / 0.5 = 9.68961052521
    expect_near(gaussian_sigma(0.5, 1e-5, 1, method = "classic"), 9.68961052521, 1e-9)
    # Linear in the sensitivity: Δ = 3 gives 3 * 9.68961052521 = 29.0688315756.
    expect_near(gaussian_sigma(0.5, 1e-5, 3, method = "classic"), 29.0688315756, 3e-9)
  },

  classic_gaussian_refuses_epsilon_at_least_one = function() {
    e <- expect_dpdist_error(gaussian_sigma(1, 1e-5, 1, method = "classic"),
                             "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("analytic", conditionMessage(e)))
  },

  analytic_gaussian_is_the_smallest_sigma_meeting_balle_wang = function() {
    # delta(sigma) = Phi(D/(2s) - e s/D) - exp(e) Phi(-D/(2s) - e s/D) must be <= delta at the
    # returned sigma and > delta just below it (the library bisects to 1e-12 and rounds up).
    bw_delta <- function(s, eps, d) {
      pnorm(d / (2 * s) - eps * s / d) - exp(eps) * pnorm(-d / (2 * s) - eps * s / d)
    }
    for (case in list(c(1, 1e-5, 1), c(0.5, 1e-6, 2), c(4, 1e-3, 1))) {
      s <- gaussian_sigma(case[1], case[2], case[3], method = "analytic")
      stopifnot(bw_delta(s, case[1], case[3]) <= case[2] * (1 + 1e-9))
      stopifnot(bw_delta(s * (1 - 1e-6), case[1], case[3]) > case[2])
    }
    # Below the classic value where both apply.
    stopifnot(gaussian_sigma(0.5, 1e-5, 1) < 9.68961052521)
  },

  distributed_sigma_divides_by_honest_clients = function() {
    # 10 / sqrt(10 - 2 - 1) = 10 / sqrt(7) = 3.77964473009
    expect_near(distributed_sigma(10, 10, 2), 3.77964473009, 1e-10)
    expect_dpdist_error(distributed_sigma(10, 3, 2), "DPD_ERR_INVALID_ARGUMENT")
  },

  laplace_scale_is_sensitivity_over_epsilon = function() {
    expect_near(laplace_scale(0.5, 2), 4, 1e-12)
  },

  bad_numbers_are_conditions_not_crashes = function() {
    expect_dpdist_error(gaussian_sigma(NaN, 1e-5, 1), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(gaussian_sigma(-1, 1e-5, 1), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(laplace_scale(Inf, 1), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(gaussian_sigma(c(1, 2), 1e-5, 1), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(gaussian_sigma("a", 1e-5, 1), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(distributed_sigma(1, 2.5, 0), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(distributed_sigma(1, -3, 0), "DPD_ERR_INVALID_ARGUMENT")
  },

  version_is_reported = function() {
    stopifnot(is.character(dpdist_version()), nzchar(dpdist_version()))
    stopifnot(dpdist_abi_version() == 3L)
  }
))
