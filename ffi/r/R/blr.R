# Private Bayesian linear regression (DCA paper Alg. 2; robust LR paper's Laplace variant).
# blr_settings() describes a private fit (budget, public assumed bounds, who adds the noise,
# mechanism, projection, prior); blr_fit() runs it on a matrix of records and returns a
# "dpdist_blr_model". Neighbouring data sets differ in one record (n is public).

# Settings of a private fit. `assumed_x` (one bound per column) and `assumed_y` must be public
# knowledge, never computed from the private data. aggregation: "trusted" (a trusted aggregator
# adds the noise), "distributed" (the clients, through DCA with `n_nodes` compute nodes and at
# most `max_dropped` missing or colluding clients) or "input" (input perturbation). With
# `projection`, `std` says where the standard deviations that scale the thresholds come from:
# "pooled" (default: one DP sigma for all x columns) or "per_dimension" (one per column), spending
# `std_share` of the budget, or "public" (`public_std_x`, `public_std_y`: known by construction
# of the preprocessing, never computed from the private data; no budget spent). With projection,
# `clipped_share` > 0 spends that fraction of the budget releasing the shares of records the
# bounds clipped (blr_clipped_share()): every interval is for the clipped records' regression.
blr_settings <- function(epsilon, delta, assumed_x, assumed_y,
                         aggregation = c("trusted", "distributed", "input"), n_nodes = 3,
                         max_dropped = 0, share_mode = c("seed", "full"),
                         mechanism = c("gaussian", "laplace"),
                         laplace_split = c(0.6, 0.35, 0.05), projection = TRUE,
                         std = c("pooled", "per_dimension", "public"), std_share = 0.1,
                         public_std_x = NULL, public_std_y = NULL, lambda = 1,
                         lambda0 = 1, release_yy = FALSE, clipped_share = 0) {
  aggregation <- match.arg(aggregation)
  mechanism <- match.arg(mechanism)
  # The library's one validation of the privacy parameters (dp-noise, through the C ABI), at
  # once rather than at the first fit.
  if (mechanism == "gaussian") {
    gaussian_sigma(epsilon, delta, 1)
  } else {
    laplace_scale(epsilon, 1)
  }
  std <- match.arg(std)
  if (std == "public" && (is.null(public_std_x) || is.null(public_std_y))) {
    dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                "std = \"public\" needs public_std_x and public_std_y")
  }
  share_mode <- match.arg(share_mode)
  flag <- function(v, name) {
    if (!is.logical(v) || length(v) != 1 || is.na(v)) {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT", paste0("`", name, "` must be TRUE or FALSE"))
    }
    as.double(v)
  }
  structure(
    list(epsilon = epsilon, delta = delta, assumed_x = as.double(assumed_x),
         assumed_y = assumed_y,
         aggregation = match(aggregation, c("trusted", "distributed", "input")) - 1,
         n_nodes = n_nodes, max_dropped = max_dropped,
         share_mode = if (share_mode == "seed") 1 else 0,
         laplace = as.double(mechanism == "laplace"), laplace_split = as.double(laplace_split),
         projection = flag(projection, "projection"), lambda = lambda, lambda0 = lambda0,
         release_yy = flag(release_yy, "release_yy"),
         std = match(std, c("pooled", "per_dimension", "public")) - 1,
         std_share = as.double(std_share),
         public_std_x = as.double(if (is.null(public_std_x)) numeric(0) else public_std_x),
         public_std_y = as.double(if (is.null(public_std_y)) NA else public_std_y),
         clipped_share = as.double(clipped_share)),
    class = "dpdist_blr_settings"
  )
}

# Fits privately; the budget is charged before anything is released. noise_aware = TRUE also
# computes the noise-aware posterior of the coefficients (`draws` draws; no privacy cost), which
# blr_coefficients() and blr_predict_interval() then report.
blr_fit <- function(x, y, settings, rng = NULL, noise_aware = FALSE, draws = 1000) {
  rng <- as_rng(rng)
  x <- as_double_matrix(x, "x")
  model <- .Call(dpdr_blr_fit, x, as_double_vector(y, "y"), settings, rng)
  attr(model, "coef_names") <- colnames(x)
  if (isTRUE(noise_aware)) attr(model, "noise_aware") <- blr_noise_aware(model, draws, rng)
  model
}

# Posterior mean (the coefficients), named after the columns of `x` when it had names.
blr_mean <- function(model) {
  mu <- .Call(dpdr_blr_model_mean, model)
  names(mu) <- attr(model, "coef_names")
  mu
}

# c(epsilon, delta) the accountant charged for the fit.
blr_spent <- function(model) .Call(dpdr_blr_model_spent, model)

# list(x, y): the clipping bounds the statistics round used.
blr_bounds <- function(model) .Call(dpdr_blr_model_bounds, model)

# c(y, x, sd): the released shares of records whose y, or some x, the bounds clipped, and the
# sd of the noise on each (settings' clipped_share > 0; an error otherwise).
blr_clipped_share <- function(model) .Call(dpdr_blr_model_clipped_share, model)

# The released (noisy) statistics vector (with sum y^2 iff release_yy).
blr_stats <- function(model) .Call(dpdr_blr_model_stats, model)

# x^T mu for the rows of `newdata`.
predict.dpdist_blr_model <- function(object, newdata, ...) {
  .Call(dpdr_blr_predict, object, as_double_matrix(newdata, "newdata"))
}

print.dpdist_blr_model <- function(x, ...) {
  s <- blr_spent(x)
  cat(sprintf("<dpdist_blr_model: %d coefficients, privacy spent epsilon %g, delta %g>\n",
              length(blr_mean(x)), s[["epsilon"]], s[["delta"]]))
  print(blr_mean(x), ...)
  invisible(x)
}

print.dpdist_blr_settings <- function(x, ...) {
  aggregation <- c("trusted aggregator", "distributed (DCA)", "input perturbation")
  cat(sprintf("<dpdist_blr_settings: epsilon %g, delta %g, %s mechanism, %s%s>\n",
              x$epsilon, x$delta, if (x$laplace == 1) "Laplace" else "Gaussian",
              aggregation[x$aggregation + 1],
              if (x$projection == 1) ", with projection" else ", no projection"))
  cat(sprintf("  assumed bounds: x %s, y %g\n", paste(format(x$assumed_x), collapse = " "),
              x$assumed_y))
  invisible(x)
}

# The non-private posterior mean (lambda0 I + lambda X'X)^-1 lambda X'y (baseline).
blr_fit_non_private <- function(x, y, lambda = 1, lambda0 = 1) {
  x <- as_double_matrix(x, "x")
  mu <- .Call(dpdr_blr_fit_non_private, x, as_double_vector(y, "y"), lambda, lambda0)
  names(mu) <- colnames(x)
  mu
}

# One record's statistics vector [x_j x_k (j <= k), x_j y, (y^2)] (a DCA client's input).
blr_record_stats <- function(x_row, y, with_yy = FALSE) {
  .Call(dpdr_blr_record_stats, as.double(x_row), y, as.double(isTRUE(with_yy)))
}

# Posterior mean from a (noisy) summed statistics vector of n records and d features.
blr_posterior_mean <- function(stats, n, d, with_yy = FALSE, lambda = 1, lambda0 = 1) {
  .Call(dpdr_blr_posterior_mean, as.double(stats), n, d, as.double(isTRUE(with_yy)), lambda,
        lambda0)
}

# Gamma-prior variant (lambda ~ Gamma(a, b), lambda0 ~ Gamma(a0, b0), shape/rate) fitted by
# coordinate ascent from a statistics vector that carries sum y^2.
blr_fit_gamma_prior <- function(stats, n, d, prior = c(a = 2, b = 2, a0 = 2, b0 = 2),
                                max_iter = 1000, tol = 1e-12) {
  .Call(dpdr_blr_fit_gamma_prior, as.double(stats), n, d, as.double(prior), max_iter, tol)
}

# Chooses the projection multipliers (omega_x, omega_y) on auxiliary data for a release of n
# records with standard deviations sigma_x, sigma_y under `settings`. Costs no privacy.
blr_search_thresholds <- function(sigma_x, sigma_y, n, settings,
                                  measure = c("mae", "rmse", "spearman"), rng = NULL) {
  measure <- match(match.arg(measure), c("mae", "rmse", "spearman")) - 1
  .Call(dpdr_blr_search_thresholds, as.double(sigma_x), sigma_y, n, settings, measure,
        as_rng(rng))
}

# Regression metrics of `predicted` against `truth`.
mae <- function(truth, predicted) .Call(dpdr_mae, as.double(truth), as.double(predicted))
rmse <- function(truth, predicted) .Call(dpdr_rmse, as.double(truth), as.double(predicted))
spearman <- function(truth, predicted) {
  .Call(dpdr_spearman, as.double(truth), as.double(predicted))
}
