# Uncertainty of a private BLR fit: the noise-aware posterior of the coefficients (the released
# statistics treated as noisy observations of the true ones, with the public noise of the fit's
# own release) and the naive one (noise treated as data), as data frames of posterior means,
# standard deviations and central credible intervals for beta and for predictions.

# The noise-aware posterior of `model`'s coefficients ("dpdist_blr_noise_aware"): `draws` draws
# of the latent sum x x^T. Post-processing of the release: costs no privacy.
blr_noise_aware <- function(model, draws = 1000, rng = NULL) {
  .Call(dpdr_blr_noise_aware, model, draws, as_rng(rng))
}

noise_kinds <- c(gaussian = 0, laplace = 1)

# The public noise of `model`'s released statistics (blr_stats): list(xx_kind, xx, xy_kind, xy),
# kinds "gaussian" (xx, xy are standard deviations) or "laplace" (scales).
blr_stats_noise <- function(model) {
  v <- .Call(dpdr_blr_model_stats_noise, model)
  kind <- function(code) names(noise_kinds)[match(code, noise_kinds)]
  list(xx_kind = kind(v[1]), xx = v[2], xy_kind = kind(v[3]), xy = v[4])
}

# The noise-aware posterior from statistics the host released itself (layout as blr_stats) of
# n records and d features, with public noise `noise` (as blr_stats_noise returns it), the
# bounds every record was clipped to, the data model's second moments (NULL: bounds^2 / 3) and
# degrees of freedom (0: integrated over their posterior given the release), and the precisions.
# Equal to blr_noise_aware(model) for a model's statistics, noise and bounds.
blr_noise_aware_from_stats <- function(stats, n, d, noise, bounds_x = NULL,
                                       second_moments = NULL, dof = 0, lambda = 1, lambda0 = 1,
                                       draws = 1000, rng = NULL, with_yy = FALSE) {
  code <- function(kind) {
    k <- noise_kinds[tolower(as.character(kind))]
    if (length(k) != 1 || is.na(k)) {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                  sprintf("noise kind %s: use \"gaussian\" or \"laplace\"", format(kind)))
    }
    unname(k)
  }
  described <- c(code(noise$xx_kind), as.double(noise$xx), code(noise$xy_kind),
                 as.double(noise$xy))
  .Call(dpdr_blr_noise_aware_from_stats, as.double(stats),
        c(as.double(n), as.double(d), as.double(isTRUE(with_yy))), described,
        as.double(if (is.null(bounds_x)) numeric(0) else bounds_x),
        as.double(if (is.null(second_moments)) numeric(0) else second_moments),
        c(as.double(dof), as.double(lambda), as.double(lambda0)), draws, as_rng(rng))
}

summary_frame <- function(s) {
  data.frame(mean = s$mean, sd = s$sd, lower = s$lower, upper = s$upper)
}

# Posterior mean, sd and central `level` interval of each coefficient: noise-aware when `object`
# is a noise-aware posterior or a model fitted with noise_aware = TRUE (unless naive = TRUE),
# else naive.
blr_coefficients <- function(object, level = 0.9, naive = FALSE) {
  if (inherits(object, "dpdist_blr_noise_aware")) {
    return(summary_frame(.Call(dpdr_blr_noise_aware_coefficients, object, level)))
  }
  aware <- attr(object, "noise_aware", exact = TRUE)
  if (!isTRUE(naive) && !is.null(aware)) return(blr_coefficients(aware, level))
  summary_frame(.Call(dpdr_blr_model_coefficients, object, level))
}

# Noise-aware posterior of x^T beta for each row of `newdata`, or of a new observation
# x^T beta + e (observation = TRUE).
blr_predict_interval <- function(object, newdata, level = 0.9, observation = FALSE) {
  if (!inherits(object, "dpdist_blr_noise_aware")) {
    object <- attr(object, "noise_aware", exact = TRUE)
    if (is.null(object)) {
      dpdist_stop("DPD_ERR_INVALID_ARGUMENT",
                  "prediction intervals need the noise-aware posterior: fit with noise_aware = TRUE")
    }
  }
  summary_frame(.Call(dpdr_blr_noise_aware_predict, object, as_double_matrix(newdata, "newdata"),
                      as.double(isTRUE(observation)), level))
}

# Effective sample size (sum w)^2 / sum w^2 of the posterior's importance weights (at most the
# draws used: a fit whose first draws give an ESS below 10% of them draws more, up to 16x).
blr_effective_sample_size <- function(posterior) .Call(dpdr_blr_noise_aware_ess, posterior)

print.dpdist_blr_noise_aware <- function(x, ...) {
  cat(sprintf("<dpdist_blr_noise_aware: effective sample size %.1f>\n",
              blr_effective_sample_size(x)))
  invisible(x)
}
