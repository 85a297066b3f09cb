# Uncertainty of a private BLR fit through the C library: the noise-aware posterior approaches the
# naive one as epsilon grows and is wider at small epsilon; interval algebra checked by hand.
source("helpers.R")

n <- 400
i <- seq_len(n)
x <- cbind((0.6180339887 * i) %% 1 * 2 - 1, (0.7548776662 * i) %% 1 * 2 - 1)
y <- 0.8 * x[, 1] - 0.5 * x[, 2] + 0.5 * sin(7 * (i - 1))
settings <- function(epsilon) blr_settings(epsilon, 1e-5, c(1, 1), 3, projection = FALSE)

run_tests(list(
  large_epsilon_approaches_the_naive_posterior = function() {
    gap <- sapply(c(1, 100), function(eps) {
      m <- blr_fit(x, y, settings(eps), rng = dpdist_rng(insecure_seed = 21),
                   noise_aware = TRUE, draws = 200)
      a <- blr_coefficients(m)
      b <- blr_coefficients(m, naive = TRUE)
      stopifnot(identical(b$mean, blr_mean(m)), nrow(a) == 2)
      sum(abs(a$sd / b$sd - 1))
    })
    cat(sprintf("  sum |sd ratio - 1|: %.4f at epsilon 1, %.4f at epsilon 100\n", gap[1], gap[2]))
    stopifnot(gap[2] < gap[1], gap[2] < 0.1)
  },

  noise_widens_and_interval_algebra = function() {
    m <- blr_fit(x, y, settings(0.5), rng = dpdist_rng(insecure_seed = 22), noise_aware = TRUE,
                 draws = 200)
    a <- blr_coefficients(m, level = 0.9)
    b <- blr_coefficients(m, naive = TRUE)
    a50 <- blr_coefficients(m, level = 0.5)
    stopifnot(all(a$sd > b$sd))
    stopifnot(all(a$lower < a50$lower), all(a50$lower < a50$mean), all(a50$upper < a$upper))
    # The naive interval is mean +- z_0.95 sd, z_0.95 = 1.6448536269514722 (tables).
    expect_near(b$upper, b$mean + 1.6448536269514722 * b$sd, 1e-6 * max(b$sd))
    # A new observation adds 1/lambda = 1 to the predictive variance of every row.
    p <- blr_predict_interval(m, x[1:5, ])
    o <- blr_predict_interval(m, x[1:5, ], observation = TRUE)
    expect_near(o$sd^2 - p$sd^2, rep(1, 5), 1e-9)
    # At the unit rows the predictions are the coefficients.
    u <- blr_predict_interval(m, diag(2))
    expect_near(u$mean, a$mean, 1e-12)
    ess <- blr_effective_sample_size(attr(m, "noise_aware"))
    # At most the draws used: up to 16 x 200 when the first 200 weigh too unevenly.
    stopifnot(ess >= 1, ess <= 16 * 200)
  },

  bad_input_is_refused = function() {
    m <- blr_fit(x, y, settings(1), rng = dpdist_rng(insecure_seed = 23))
    expect_dpdist_error(blr_predict_interval(m, x), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_noise_aware(m, draws = 0), "DPD_ERR_INVALID_ARGUMENT")
    p <- blr_noise_aware(m, draws = 50, rng = dpdist_rng(insecure_seed = 24))
    expect_dpdist_error(blr_coefficients(p, level = 1), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_coefficients(p, level = NaN), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(blr_predict_interval(p, x[, 1, drop = FALSE]), "DPD_ERR_LENGTH_MISMATCH")
    stopifnot(nrow(blr_coefficients(m)) == 2) # naive: no noise-aware posterior attached
  },

  from_stats_equals_the_model_path = function() {
    # A host that released the statistics itself: same vector, noise, bounds and rng state give
    # the model's posterior to the bit; DCA's noise is the trusted one times sqrt(N/(N - T - 1)).
    m <- blr_fit(x, y, settings(0.5), rng = dpdist_rng(insecure_seed = 25))
    noise <- blr_stats_noise(m)
    stopifnot(noise$xx_kind == "gaussian", noise$xy_kind == "gaussian", noise$xx > 0)
    a <- blr_noise_aware(m, draws = 100, rng = dpdist_rng(insecure_seed = 26))
    b <- blr_noise_aware_from_stats(blr_stats(m), n, 2, noise, bounds_x = blr_bounds(m)$x,
                                    draws = 100, rng = dpdist_rng(insecure_seed = 26))
    stopifnot(identical(blr_coefficients(a), blr_coefficients(b)))
    stats <- blr_stats(m)
    expect_dpdist_error(blr_noise_aware_from_stats(stats[-1], n, 2, noise, blr_bounds(m)$x),
                        "DPD_ERR_LENGTH_MISMATCH")
    bad <- stats
    bad[2] <- NaN
    expect_dpdist_error(blr_noise_aware_from_stats(bad, n, 2, noise, blr_bounds(m)$x),
                        "DPD_ERR_NON_FINITE")
    expect_dpdist_error(blr_noise_aware_from_stats(stats, n, 2, noise), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_noise_aware_from_stats(stats, n, 2, modifyList(noise, list(xx = NaN)),
                                                   blr_bounds(m)$x), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(blr_noise_aware_from_stats(stats, n, 2, modifyList(noise,
                                                   list(xx_kind = "cauchy")), blr_bounds(m)$x),
                        "DPD_ERR_INVALID_ARGUMENT")
  }
))
