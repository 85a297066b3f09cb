# The accountant composes charges and refuses, without changing anything, to exceed the budget.
source("helpers.R")

run_tests(list(
  pure_rounds_add_up_and_the_overdraft_is_refused = function() {
    acc <- accountant(1, 1e-5)
    charge_pure(acc, 0.4)
    charge_pure(acc, 0.4)
    s <- spent(acc)
    expect_near(s[["epsilon"]], 0.8, 1e-12)
    stopifnot(s[["delta"]] == 0, s[["rounds"]] == 2)
    e <- expect_dpdist_error(charge_pure(acc, 0.4), "DPD_ERR_BUDGET_EXCEEDED")
    stopifnot(inherits(e, "DPD_ERR_BUDGET_EXCEEDED"))
    stopifnot(identical(spent(acc), s)) # unchanged by the refused charge
    charge_pure(acc, 0.2)               # what is left can still be spent
    expect_near(spent(acc)[["epsilon"]], 1.0, 1e-12)
  },

  approx_rounds_add_delta = function() {
    acc <- accountant(1, 1e-5)
    charge_approx(acc, 0.25, 4e-6)
    charge_approx(acc, 0.25, 4e-6)
    expect_near(spent(acc)[["delta"]], 8e-6, 1e-18)
    expect_dpdist_error(charge_approx(acc, 0.1, 4e-6), "DPD_ERR_BUDGET_EXCEEDED")
    expect_near(spent(acc)[["epsilon"]], 0.5, 1e-12)
  },

  gaussian_round_is_composed_exactly_and_zcdp_rounds_through_zcdp = function() {
    # mu = 1/10: the smallest eps with Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) <= 1e-5
    # is 0.340669364684326 (mpmath, 50 digits, bisection).
    acc <- accountant(1, 1e-5)
    charge_gaussian(acc, 1, 10)
    s <- spent(acc)
    expect_near(s[["epsilon"]], 0.340669364684326, 1e-9)
    expect_near(s[["delta"]], 1e-5, 1e-18)
    # A zCDP round joins the Gaussian one as rho = mu^2 / 2 = 0.005: total rho 0.01,
    # eps = 0.01 + 2 sqrt(0.01 * 11.5129255) = 0.688612
    charge_zcdp(acc, 0.005)
    expect_near(spent(acc)[["epsilon"]], 0.01 + 2 * sqrt(0.01 * log(1e5)), 1e-9)
    expect_dpdist_error(charge_gaussian(acc, 1, 1), "DPD_ERR_BUDGET_EXCEEDED")
  },

  bad_budgets_are_refused = function() {
    expect_dpdist_error(accountant(-1, 1e-5), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(accountant(1, 1.5), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(accountant(NaN, 1e-5), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    acc <- accountant(1, 1e-5)
    expect_dpdist_error(charge_pure(acc, NaN), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(charge_pure(dpdist_rng(), 0.1), "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(spent(acc)[["rounds"]] == 0)
  }
))
