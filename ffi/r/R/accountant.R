# A privacy accountant with budget (epsilon, delta). Charges compose (basic composition for
# (epsilon, delta) rounds, exact mu-GDP for Gaussian rounds, zCDP for zCDP rounds); a charge that would exceed the budget
# signals DPD_ERR_BUDGET_EXCEEDED and changes nothing, so charge BEFORE releasing.
accountant <- function(epsilon, delta) .Call(dpdr_accountant_new, epsilon, delta)

# Charges one Gaussian mechanism with L2 sensitivity `l2_sensitivity` and noise `sigma`
# (mu = l2 / sigma, composed exactly: a round calibrated for epsilon costs epsilon).
# Returns the accountant invisibly.
charge_gaussian <- function(accountant, l2_sensitivity, sigma) {
  .Call(dpdr_accountant_charge_gaussian, accountant, l2_sensitivity, sigma)
  invisible(accountant)
}

# Charges one (epsilon, delta)-DP round.
charge_approx <- function(accountant, epsilon, delta) {
  .Call(dpdr_accountant_charge_approx, accountant, epsilon, delta)
  invisible(accountant)
}

# Charges one epsilon-DP (pure) round.
charge_pure <- function(accountant, epsilon) {
  .Call(dpdr_accountant_charge_pure, accountant, epsilon)
  invisible(accountant)
}

# Charges one rho-zCDP round.
charge_zcdp <- function(accountant, rho) {
  .Call(dpdr_accountant_charge_zcdp, accountant, rho)
  invisible(accountant)
}

# Privacy spent so far: c(epsilon =, delta =, rounds =).
spent <- function(accountant) .Call(dpdr_accountant_spent, accountant)

print.dpdist_accountant <- function(x, ...) {
  s <- spent(x)
  cat(sprintf("<dpdist_accountant: spent epsilon %.6g, delta %.3g over %d rounds>\n",
              s[["epsilon"]], s[["delta"]], as.integer(s[["rounds"]])))
  invisible(x)
}
