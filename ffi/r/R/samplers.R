# `n` exact discrete Gaussian samples (integers, returned as doubles) with parameter
# `sigma_units` (Canonne, Kamath & Steinke 2020).
rdiscrete_gaussian <- function(n, sigma_units, rng = NULL) {
  .Call(dpdr_sample_discrete_gaussian, as_rng(rng), sigma_units, n)
}

# `n` exact discrete Laplace samples, P(y) proportional to exp(-|y| / scale_units).
rdiscrete_laplace <- function(n, scale_units, rng = NULL) {
  .Call(dpdr_sample_discrete_laplace, as_rng(rng), scale_units, n)
}

# `n` continuous N(0, sigma^2) samples drawn from a CSPRNG (trusted-aggregator path).
rgaussian_noise <- function(n, sigma, rng = NULL) {
  .Call(dpdr_sample_gaussian, as_rng(rng), sigma, n)
}

# `n` continuous Laplace(0, scale) samples drawn from a CSPRNG.
rlaplace_noise <- function(n, scale, rng = NULL) {
  .Call(dpdr_sample_laplace, as_rng(rng), scale, n)
}

# One objective-perturbation vector b in R^d with density proportional to
# exp(-epsilon_prime * ||b|| / 2).
robjective_perturbation <- function(d, epsilon_prime, rng = NULL) {
  .Call(dpdr_sample_objective_perturbation, as_rng(rng), epsilon_prime, d)
}
