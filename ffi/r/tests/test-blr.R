# Bayesian linear regression through the C library: the non-private posterior against an
# independent base-R solve, private fits (trusted, DCA, Laplace) spending at most their budget,
# the building blocks, the threshold search, metrics against base R, and bad input.
source("helpers.R")

# Linear data in [-1, 1]^3; R's own generator makes the DATA (not any DP noise).
make_data <- function(n, seed) {
  set.seed(seed)
  x <- matrix(runif(n * 3, -1, 1), ncol = 3)
  y <- drop(x %*% c(1, -0.5, 0.25)) + runif(n, -0.1, 0.1)
  list(x = x, y = y)
}

run_tests(list(
  non_private_fit_matches_a_base_r_solve = function() {
    d <- make_data(2000, 1)
    for (prior in list(c(1, 1), c(3, 0.5))) {
      mu <- blr_fit_non_private(d$x, d$y, lambda = prior[1], lambda0 = prior[2])
      by_hand <- solve(prior[2] * diag(3) + prior[1] * crossprod(d$x),
                       prior[1] * crossprod(d$x, d$y))
      expect_near(mu, drop(by_hand), 1e-8)
    }
  },

  summed_record_statistics_give_the_same_posterior = function() {
    d <- make_data(300, 2)
    stats <- Reduce(`+`, lapply(seq_len(nrow(d$x)),
                                function(i) blr_record_stats(d$x[i, ], d$y[i])))
    stopifnot(length(stats) == 3 * 4 / 2 + 3)
    expect_near(blr_posterior_mean(stats, n = 300, d = 3),
                blr_fit_non_private(d$x, d$y), 1e-9)
  },

  private_fits_spend_at_most_their_budget = function() {
    d <- make_data(2000, 3)
    truth_mae <- mean(abs(d$y - drop(d$x %*% blr_fit_non_private(d$x, d$y))))
    rng <- dpdist_rng(insecure_seed = 11)
    cases <- list(
      trusted = blr_settings(1, 1e-5, c(1, 1, 1), 2),
      distributed = blr_settings(1, 1e-5, c(1, 1, 1), 2, aggregation = "distributed",
                                 n_nodes = 3, max_dropped = 2),
      laplace = blr_settings(1, 1e-5, c(1, 1, 1), 2, mechanism = "laplace")
    )
    for (name in names(cases)) {
      m <- blr_fit(d$x, d$y, cases[[name]], rng = rng)
      s <- blr_spent(m)
      stopifnot(s[["epsilon"]] > 0, s[["epsilon"]] <= 1 + 1e-9)
      stopifnot(s[["delta"]] >= 0, s[["delta"]] <= 1e-5)
      pred <- predict(m, d$x)
      stopifnot(length(blr_mean(m)) == 3, length(pred) == nrow(d$x))
      expect_near(pred, drop(d$x %*% blr_mean(m)), 1e-12)
      b <- blr_bounds(m)
      stopifnot(length(b$x) == 3, b$y > 0)
      err <- mae(d$y, pred)
      cat(sprintf("  BLR %s: epsilon %.4f, delta %.2g, MAE %.4f (non-private %.4f)\n",
                  name, s[["epsilon"]], s[["delta"]], err, truth_mae))
      # mean |y| is ~0.5: a fit that learned nothing is far above this.
      stopifnot(err < 0.25)
    }
  },

  fixed_seed_fits_are_reproducible = function() {
    d <- make_data(500, 4)
    s <- blr_settings(1, 1e-5, c(1, 1, 1), 2)
    a <- blr_mean(blr_fit(d$x, d$y, s, rng = dpdist_rng(insecure_seed = 5)))
    b <- blr_mean(blr_fit(d$x, d$y, s, rng = dpdist_rng(insecure_seed = 5)))
    stopifnot(identical(a, b))
  },

  std_settings_scale_the_bounds = function() {
    d <- make_data(500, 4)
    rng <- function() dpdist_rng(insecure_seed = 5)
    # Pooled DP sigma (the default): one bound for every x column.
    pooled <- blr_bounds(blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2), rng = rng()))
    stopifnot(length(pooled$x) == 3, all(pooled$x == pooled$x[1]))
    # Public sigma: bounds proportional to them, whatever the data.
    sx <- c(0.6, 0.2, 0.4)
    pub <- blr_settings(1, 1e-5, c(1, 1, 1), 2, std = "public", public_std_x = sx,
                        public_std_y = 0.5)
    ratio <- blr_bounds(blr_fit(d$x, d$y, pub, rng = rng()))$x / sx
    expect_near(ratio, rep(ratio[1], 3), 1e-12 * ratio[1])
    per_dim <- blr_settings(1, 1e-5, c(1, 1, 1), 2, std = "per_dimension", std_share = 0.3)
    stopifnot(length(blr_bounds(blr_fit(d$x, d$y, per_dim, rng = rng()))$x) == 3)
    expect_dpdist_error(blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2,
                                                       std = "per_dimension", std_share = 1)),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2, std = "public",
                                                       public_std_x = c(0.6, 0.2),
                                                       public_std_y = 0.5)),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_settings(1, 1e-5, c(1, 1, 1), 2, std = "public"),
                        "DPD_ERR_INVALID_ARGUMENT")
  },

  clipped_shares_are_released_on_request = function() {
    d <- make_data(500, 4)
    rng <- function() dpdist_rng(insecure_seed = 5)
    none <- blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2), rng = rng())
    expect_dpdist_error(blr_clipped_share(none), "DPD_ERR_INVALID_STATE")
    # epsilon = 50 with 20% on the counts: sd 1/sqrt(0.2 rho)/n by hand, and the shares within
    # 6 sd of the ones counted here from the fit's bounds.
    s <- blr_settings(50, 1e-5, c(1, 1, 1), 2, clipped_share = 0.2)
    m <- blr_fit(d$x, d$y, s, rng = rng())
    got <- blr_clipped_share(m)
    b <- blr_bounds(m)
    want_y <- mean(abs(d$y) > b$y)
    want_x <- mean(apply(abs(d$x) > matrix(b$x, nrow(d$x), 3, byrow = TRUE), 1, any))
    l <- log(1e5)
    rho <- (sqrt(50 + l) - sqrt(l))^2
    expect_near(got[["sd"]], 1 / sqrt(0.2 * rho) / 500, 1e-8 * got[["sd"]])
    stopifnot(abs(got[["y"]] - want_y) < 6 * got[["sd"]],
              abs(got[["x"]] - want_x) < 6 * got[["sd"]])
    expect_dpdist_error(blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2,
                                                       clipped_share = 1)),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2, std_share = 0.5,
                                                       clipped_share = 0.6)),
                        "DPD_ERR_INVALID_ARGUMENT")
  },

  gamma_prior_fit_from_released_statistics = function() {
    d <- make_data(2000, 5)
    exact <- Reduce(`+`, lapply(seq_len(nrow(d$x)),
                                function(i) blr_record_stats(d$x[i, ], d$y[i], with_yy = TRUE)))
    g <- blr_fit_gamma_prior(exact, n = 2000, d = 3)
    stopifnot(g$converged, g$iterations >= 1)
    expect_near(g$lambda_shape, 2 + 2000 / 2, 1e-9)
    # At convergence the mean is the ridge solution at E[lambda], E[lambda0] (base R solve).
    el <- g$lambda_shape / g$lambda_rate
    el0 <- g$lambda0_shape / g$lambda0_rate
    by_hand <- solve(el0 * diag(3) + el * crossprod(d$x), el * crossprod(d$x, d$y))
    expect_near(g$mean, drop(by_hand), 1e-8)
    # A private release with sum y^2 feeds it too.
    m <- blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2, release_yy = TRUE),
                 rng = dpdist_rng(insecure_seed = 6))
    stopifnot(length(blr_stats(m)) == 10)
    stopifnot(all(is.finite(blr_fit_gamma_prior(blr_stats(m), 2000, 3)$mean)))
    expect_dpdist_error(blr_fit_gamma_prior(exact[-10], 2000, 3), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(blr_fit_gamma_prior(exact, 2000, 3, prior = c(0, 2, 2, 2)),
                        "DPD_ERR_INVALID_ARGUMENT")
  },

  threshold_search = function() {
    s <- blr_settings(1, 1e-5, c(1, 1, 1), 2)
    a <- blr_search_thresholds(rep(1 / sqrt(3), 3), 0.66, 2000, s, rng = dpdist_rng(insecure_seed = 7))
    b <- blr_search_thresholds(rep(1 / sqrt(3), 3), 0.66, 2000, s, rng = dpdist_rng(insecure_seed = 7))
    stopifnot(identical(a, b))
    stopifnot(a[["omega_x"]] >= 0.1 - 1e-12, a[["omega_x"]] <= 2.1 + 1e-12)
    stopifnot(a[["omega_y"]] >= 0.1 - 1e-12, a[["omega_y"]] <= 2.1 + 1e-12)
    stopifnot(is.finite(a[["error"]]), a[["error"]] > 0)
    cat(sprintf("  threshold search: omega_x %.4f, omega_y %.4f\n", a[["omega_x"]],
                a[["omega_y"]]))
    expect_dpdist_error(blr_search_thresholds(c(0.5, NaN, 0.5), 0.66, 2000, s),
                        "DPD_ERR_NON_FINITE")
    expect_dpdist_error(blr_search_thresholds(c(0.5, 0.5), 0.66, 2000, s),
                        "DPD_ERR_LENGTH_MISMATCH")
  },

  metrics_match_base_r = function() {
    set.seed(8)
    t <- rnorm(50)
    p <- t + rnorm(50, sd = 0.3)
    expect_near(mae(t, p), mean(abs(t - p)), 1e-12)
    expect_near(rmse(t, p), sqrt(mean((t - p)^2)), 1e-12)
    expect_near(spearman(t, p), cor(t, p, method = "spearman"), 1e-12)
    expect_dpdist_error(rmse(t, p[-1]), "DPD_ERR_LENGTH_MISMATCH")
  },

  bad_input_is_refused = function() {
    d <- make_data(100, 9)
    s <- blr_settings(1, 1e-5, c(1, 1, 1), 2)
    x_nan <- d$x
    x_nan[3, 2] <- NaN
    expect_dpdist_error(blr_fit(x_nan, d$y, s), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(blr_fit(d$x, d$y[-1], s), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(blr_fit(d$x[, 1:2], d$y, s), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(blr_fit_non_private(d$x, d$y[-1]), "DPD_ERR_LENGTH_MISMATCH")
    y_nan <- d$y
    y_nan[1] <- NA_real_
    expect_dpdist_error(blr_fit_non_private(d$x, y_nan), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(blr_fit(d$x, d$y, blr_settings(NaN, 1e-5, c(1, 1, 1), 2)),
                        "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(blr_fit(d$x, d$y, list()), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(blr_fit(d$x, d$y, blr_settings(1, 1e-5, c(1, 1, 1), 2,
                                                       aggregation = "distributed",
                                                       n_nodes = 1)),
                        "DPD_ERR_INVALID_ARGUMENT")
    m <- blr_fit(d$x, d$y, s, rng = dpdist_rng(insecure_seed = 10))
    expect_dpdist_error(predict(m, d$x[, 1:2]), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(blr_record_stats(c(1, NaN), 1), "DPD_ERR_NON_FINITE")
  },

  settings_are_checked_at_once_and_print = function() {
    # The library's validation of (epsilon, delta), when the settings are made, not at the fit.
    for (bad in list(c(-1, 1e-5), c(0, 1e-5), c(1, 0.5), c(NA, 1e-5))) {
      e <- expect_dpdist_error(blr_settings(bad[1], bad[2], c(1, 1, 1), 2),
                               "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    }
    expect_dpdist_error(blr_settings(-1, 0, c(1, 1, 1), 2, mechanism = "laplace"),
                        "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    out <- capture.output(print(blr_settings(1, 1e-5, c(1, 1, 1), 2,
                                             aggregation = "distributed")))
    stopifnot(grepl("epsilon 1, delta 1e-05, Gaussian mechanism, distributed", out[1]),
              grepl("assumed bounds: x 1 1 1, y 2", out[2]))
  },

  data_frames_positions_and_names = function() {
    d <- make_data(100, 9)
    df <- data.frame(age = d$x[, 1], bmi = d$x[, 2], bp = d$x[, 3])
    s <- blr_settings(1, 1e-5, c(1, 1, 1), 2)
    m <- blr_fit(df, d$y, s, rng = dpdist_rng(insecure_seed = 10))
    m2 <- blr_fit(d$x, d$y, s, rng = dpdist_rng(insecure_seed = 10))
    stopifnot(identical(names(blr_mean(m)), c("age", "bmi", "bp")),
              identical(unname(blr_mean(m)), blr_mean(m2)))
    stopifnot(identical(names(blr_fit_non_private(df, d$y)), c("age", "bmi", "bp")))
    out <- capture.output(print(m))
    stopifnot(grepl("privacy spent epsilon 1", out[1]), any(grepl("bmi", out)))
    df$bp <- as.character(df$bp)
    e <- expect_dpdist_error(blr_fit(df, d$y, s), "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("column 3 ('bp') is not numeric", conditionMessage(e), fixed = TRUE))
    x_na <- d$x
    x_na[3, 2] <- NA
    e <- expect_dpdist_error(blr_fit(x_na, d$y, s), "DPD_ERR_NON_FINITE")
    stopifnot(grepl("NA at row 3, column 2 (1-based)", conditionMessage(e), fixed = TRUE))
    y_na <- d$y
    y_na[7] <- NA
    e <- expect_dpdist_error(blr_fit(d$x, y_na, s), "DPD_ERR_NON_FINITE")
    stopifnot(grepl("NA at position 7 (1-based)", conditionMessage(e), fixed = TRUE))
  }
))
