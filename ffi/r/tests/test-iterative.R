# Iterative private learning through the C library: published RDP figures, non-private runs
# (with and without intercept) against Newton solves in base R, a calibrated private run that lasts exactly its iterations
# and spends its budget, the budget refusal, DP-VI BLR, and bad input.
source("helpers.R")

grid <- function(n) {
  i <- seq_len(n)
  cbind((0.6180339887 * i) %% 1 * 2 - 1, (0.7548776662 * i) %% 1 * 2 - 1)
}

run_tests(list(
  accountant_matches_published_figures = function() {
    # TF Privacy compute_dp_sgd_privacy_statement (3 decimals) and example_privacy (7 places).
    expect_near(rdp_epsilon(64 / 10000, 1, 782, 1e-6)[["epsilon"]], 1.616, 5e-4)
    expect_near(rdp_epsilon(1, 0.7, 2, 1e-5)[["epsilon"]], 10.8602036, 5e-8)
    # compute_dp_sgd_privacy Test0 inverted: z = 1.3.
    expect_near(rdp_noise_multiplier(0.7242234026109595, 1e-5, 6000, 0.0025), 1.3, 3e-9)
    z <- rdp_noise_multiplier(1, 1e-5, 100, 0.05, sampling = "without_replacement")
    stopifnot(rdp_epsilon(0.05, z, 100, 1e-5, "without_replacement")[["epsilon"]] <= 1)
    stopifnot(rdp_epsilon(0.05, z * (1 - 1e-6), 100, 1e-5,
                          "without_replacement")[["epsilon"]] > 1)
    expect_dpdist_error(rdp_epsilon(0, 1, 5, 1e-5), "DPD_ERR_INVALID_ARGUMENT")
  },

  non_private_logistic_reaches_the_newton_optimum = function() {
    n <- 50
    x <- grid(n)
    labels <- as.double(x[, 1] - 0.5 * x[, 2] + 0.3 * sin(0:(n - 1)) > 0)
    lambda <- 0.1
    s <- 2 * labels - 1
    w <- c(0, 0)
    for (k in 1:50) {
      p <- 1 / (1 + exp(s * drop(x %*% w)))
      g <- -crossprod(x, s * p) / n + lambda * w
      h <- crossprod(x, x * (p * (1 - p))) / n + lambda * diag(2)
      w <- w - drop(solve(h, g))
    }
    # intercept = FALSE: the model these settings built before they had the option.
    st <- iterative_settings(l2 = lambda, rate = 1, optimizer = "sgd", learning_rate = 1,
                             private = FALSE, intercept = FALSE)
    t <- iterative_fit(x, labels, st, iterations = 300, rng = dpdist_rng(insecure_seed = 11))
    stopifnot(identical(names(coef(t)), c("x1", "x2")))
    expect_near(iterative_params(t), w, 1e-6)
    sp <- iterative_spent(t)
    stopifnot(is.infinite(sp[["epsilon"]]), sp[["iterations"]] == 300)
    expect_near(predict(t, x), 1 / (1 + exp(-drop(x %*% w))), 1e-6)

    # The released sum of one iteration from w = 0 with every client sampled and no noise: the
    # gradient sum -sum_i s_i x_i / 2, computed here.
    t1 <- iterative_trainer(st, n, 2, 1, dpdist_rng(insecure_seed = 3))
    stopifnot(length(iterative_last_release(t1)) == 0)
    iterative_step(t1, x, labels)
    expect_near(iterative_last_release(t1), -drop(crossprod(x, s)) / 2, 1e-9)
  },

  # The default, as glm: an intercept b, theta = (w, b), b unpenalised. Labels off the origin;
  # Newton's method on (w, b) in base R; a clip norm of 10 never clips |(x, 1)| <= sqrt(3).
  non_private_logistic_with_intercept_reaches_the_newton_optimum = function() {
    n <- 50
    x <- grid(n)
    labels <- as.double(x[, 1] - 0.5 * x[, 2] + 0.3 * sin(0:(n - 1)) > 0.4)
    lambda <- 0.1
    s <- 2 * labels - 1
    z <- cbind(x, 1)
    theta <- c(0, 0, 0)
    penalty <- c(lambda, lambda, 0)
    for (k in 1:50) {
      p <- 1 / (1 + exp(s * drop(z %*% theta)))
      g <- -crossprod(z, s * p) / n + penalty * theta
      h <- crossprod(z, z * (p * (1 - p))) / n + diag(penalty)
      theta <- theta - drop(solve(h, g))
    }
    stopifnot(theta[3] < -0.1)
    st <- iterative_settings(l2 = lambda, rate = 1, optimizer = "sgd", learning_rate = 1,
                             clip_norm = 10, private = FALSE)
    t <- iterative_fit(x, labels, st, iterations = 3000, rng = dpdist_rng(insecure_seed = 11))
    expect_near(iterative_params(t), theta, 1e-6)
    cf <- coef(t)
    stopifnot(identical(names(cf), c("(Intercept)", "x1", "x2")))
    expect_near(unname(cf), theta[c(3, 1, 2)], 1e-6)
    expect_near(predict(t, x), 1 / (1 + exp(-drop(z %*% iterative_params(t)))), 1e-12)
    expect_dpdist_error(iterative_settings(model = "blr_vi", intercept = TRUE),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(iterative_settings(intercept = NA), "DPD_ERR_INVALID_ARGUMENT")
  },

  calibrated_private_run_spends_exactly_its_budget = function() {
    n <- 200
    x <- grid(n)
    labels <- as.double(x[, 1] + x[, 2] > 0)
    st <- iterative_settings(l2 = 0.01, rate = 0.2, learning_rate = 0.05, clip_norm = 1.5,
                             max_dropped = 2, epsilon = 2, delta = 1e-5)
    z <- iterative_calibrate(st, n, 2, 20)
    t <- iterative_fit(x, labels, st, iterations = 1, rng = dpdist_rng(insecure_seed = 13))
    stopifnot(iterative_spent(t)[["noise_multiplier"]] < z) # calibrated for 1 iteration only
    t <- iterative_trainer(st, n, 2, 20, rng = dpdist_rng(insecure_seed = 13))
    info <- iterative_step(t, x, labels, dropped = 7)
    stopifnot(info[["iteration"]] == 0, info[["n_included"]] == n - 1)
    # sigma released = z C sqrt(N - 1) / sqrt(N - T - 1), by hand.
    expect_near(info[["noise_sigma_released"]], z * 1.5 * sqrt(199 / 197), 1e-9 * z)
    stopifnot(iterative_train(t, x, labels, 1000) == 19)
    sp <- iterative_spent(t)
    stopifnot(sp[["epsilon"]] <= 2, sp[["epsilon"]] > 2 * (1 - 1e-6), sp[["delta"]] == 1e-5)
    before <- iterative_params(t)
    e <- expect_dpdist_error(iterative_step(t, x, labels), "DPD_ERR_BUDGET_EXCEEDED")
    stopifnot(grepl("nothing was released", conditionMessage(e)))
    stopifnot(identical(iterative_params(t), before), iterative_spent(t)[["iterations"]] == 20)
    expect_dpdist_error(iterative_step(t, x, labels, dropped = c(1, 2, 3)),
                        "DPD_ERR_TOO_MANY_DROPPED")
  },

  vi_blr_parameters_and_predictions = function() {
    x <- grid(200)
    y <- 0.8 * x[, 1] - 0.3 * x[, 2]
    st <- iterative_settings(model = "blr_vi", rate = 1, optimizer = "sgd", learning_rate = 0.5,
                             private = FALSE)
    t <- iterative_fit(x, y, st, iterations = 50, rng = dpdist_rng(insecure_seed = 5))
    theta <- iterative_params(t)
    stopifnot(length(theta) == 4)
    expect_near(predict(t, x), drop(x %*% theta[1:2]), 1e-12)
  },

  public_ranges_map_records_and_new_rows = function() {
    # Ranges [0, 10] and [-2, 2]: (2.5, 3) -> (-0.5, 1), (12.5, -1) -> (1, -0.5). At theta = 0
    # the gradients -y sigma(0) (x~, 1), y read as +-1, are (0.25, -0.5, -0.5) and
    # (0.5, -0.25, 0.5): one SGD step of rate 1 over the batch of 2 gives
    # theta = (-0.375, 0.375, 0), worked out by hand.
    x <- rbind(c(2.5, 3), c(12.5, -1))
    y <- c(1, 0)
    st <- iterative_settings(sampling = "fixed_size", batch = 2, optimizer = "sgd",
                             learning_rate = 1, n_nodes = 2, private = FALSE)
    fit <- function(ranges) {
      iterative_fit(x, y, st, iterations = 1, rng = dpdist_rng(insecure_seed = 3),
                    ranges = ranges)
    }
    t <- fit(list(lo = c(0, -2), hi = c(10, 2)))
    expect_near(iterative_params(t), c(-0.375, 0.375, 0), 1e-9)
    stopifnot(identical(iterative_params(fit(cbind(c(0, -2), c(10, 2)))), iterative_params(t)))
    # (12.5, -5) lies outside both ranges: it predicts as (10, -2), sigma(-0.75).
    p <- predict(t, rbind(c(12.5, -5), c(10, -2)))
    stopifnot(p[1] == p[2])
    expect_near(p[1], 1 / (1 + exp(0.75)), 1e-9)
    e <- expect_dpdist_error(fit(list(lo = c(0, 1), hi = c(10, 1))), "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("column 2", conditionMessage(e)))
    expect_dpdist_error(fit(list(lo = 0, hi = 1)), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(iterative_fit(x, c(0.5, 1), iterative_settings(model = "blr_vi",
                                                                      private = FALSE),
                                      1, ranges = list(lo = c(0, -2), hi = c(10, 2))),
                        "DPD_ERR_INVALID_ARGUMENT")
  },

  bad_settings_are_refused = function() {
    x <- grid(20)
    y <- as.double(x[, 1] > 0)
    # A private run needs its budget.
    e <- expect_dpdist_error(iterative_fit(x, y, iterative_settings(), iterations = 5),
                             "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("needs its budget", conditionMessage(e)))
    expect_dpdist_error(iterative_fit(x, y, iterative_settings(rate = 0, private = FALSE), 5),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(iterative_fit(x, y, iterative_settings(sampling = "fixed_size",
                                                               batch = 21, private = FALSE), 5),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(iterative_fit(x, y, list(), 5), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(iterative_fit(x, y[-1], iterative_settings(private = FALSE), 5),
                        "DPD_ERR_LENGTH_MISMATCH")
  }
))
