# Uncertainty of a private BLR fit: the noise-aware posterior of the coefficients (the released
# statistics treated as noisy observations of the true ones, with the public noise of the fit's
# own release) and the naive one (noise treated as data), as data frames of posterior means,
# standard deviations and central credible intervals for beta and for predictions.

# The noise-aware posterior of `model`'s coefficients ("dpdist_blr_noise_aware"): `draws` draws
# of the latent sum x x^T. Post-processing of the release: costs no privacy.
blr_noise_aware <- function(model, draws = 1000, rng = NULL) {
  .Call(dpdr_blr_noise_aware, model, draws, as_rng(rng))
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

# Effective sample size (sum w)^2 / sum w^2 of the posterior's importance weights (<= draws).
blr_effective_sample_size <- function(posterior) .Call(dpdr_blr_noise_aware_ess, posterior)

print.dpdist_blr_noise_aware <- function(x, ...) {
  cat(sprintf("<dpdist_blr_noise_aware: effective sample size %.1f>\n",
              blr_effective_sample_size(x)))
  invisible(x)
}
