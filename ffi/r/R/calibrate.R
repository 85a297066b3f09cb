# Gaussian noise standard deviation for (epsilon, delta)-DP at L2 sensitivity
# `l2_sensitivity`. "analytic" (Balle & Wang 2018) is valid for every epsilon > 0 and gives
# the smallest sigma; "classic" is sqrt(2 ln(1.25/delta)) * l2 / epsilon, proven for
# epsilon < 1 only (larger epsilon is an error).
gaussian_sigma <- function(epsilon, delta, l2_sensitivity, method = c("analytic", "classic")) {
  method <- match.arg(method)
  if (method == "analytic") {
    .Call(dpdr_gaussian_sigma_analytic, epsilon, delta, l2_sensitivity)
  } else {
    .Call(dpdr_gaussian_sigma_classic, epsilon, delta, l2_sensitivity)
  }
}

# Per-client sigma when `n_clients` each add Gaussian noise and up to `max_dropped` of them may
# drop out or collude: sigma_total / sqrt(n_clients - max_dropped - 1).
distributed_sigma <- function(sigma_total, n_clients, max_dropped) {
  .Call(dpdr_distributed_sigma, sigma_total, n_clients, max_dropped)
}

# Laplace scale for epsilon-DP at L1 sensitivity `l1_sensitivity`: l1 / epsilon.
laplace_scale <- function(epsilon, l1_sensitivity) {
  .Call(dpdr_laplace_scale, epsilon, l1_sensitivity)
}
