# PLR and the stacking ensembles through the C library, checked against an independent base-R
# fit of the same objective and a base-R AUC.
source("helpers.R")

# Logistic data with a known direction; R's own generator makes the DATA (not any DP noise).
make_data <- function(n, seed) {
  set.seed(seed)
  x <- matrix(rnorm(n * 4), ncol = 4) / 2
  w <- c(2, -1.5, 1, 0)
  y <- as.double(runif(n) < plogis(drop(x %*% w) * 2))
  list(x = x, y = y)
}

# Rows projected onto the unit ball, as the library does before the fit: x / max(1, ||x||).
project_rows <- function(x) x / pmax(1, sqrt(rowSums(x^2)))

# Mann-Whitney AUC with average ranks (ties count 1/2), written independently of the library.
auc_by_ranks <- function(s, y) {
  r <- rank(s)
  n1 <- sum(y == 1)
  n0 <- sum(y != 1)
  (sum(r[y == 1]) - n1 * (n1 + 1) / 2) / (n1 * n0)
}

run_tests(list(
  non_private_plr_matches_a_base_r_fit = function() {
    d <- make_data(1500, 1)
    lambda <- 0.01
    m <- plr_fit(d$x, d$y, epsilon = Inf, lambda = lambda)
    # The same objective minimised by optim: (1/n) sum log(1 + exp(-y w'x)) + lambda ||w||^2 / 2
    # with y in {-1, +1} and projected rows.
    xp <- project_rows(d$x)
    ypm <- 2 * d$y - 1
    f <- function(w) mean(log1p(exp(-ypm * drop(xp %*% w)))) + lambda * sum(w^2) / 2
    g <- function(w) {
      p <- plogis(-ypm * drop(xp %*% w))
      -drop(crossprod(xp, ypm * p)) / nrow(xp) + lambda * w
    }
    ref <- optim(rep(0, 4), f, g, method = "BFGS",
                 control = list(reltol = 1e-14, maxit = 1000))$par
    w <- plr_weights(m)
    expect_near(w$weights, ref, 1e-4, "PLR weights vs optim")
    info <- plr_model_info(m)
    stopifnot(info$kind == "logistic", info$n_features == 4, info$epsilon == Inf)
    p <- predict(m, d$x)
    expect_near(p, plogis(drop(xp %*% w$weights) * w$input_radius), 1e-12, "predict")
  },

  auc_matches_mann_whitney = function() {
    set.seed(3)
    s <- round(rnorm(300), 1) # ties on purpose
    y <- as.double(runif(300) < plogis(s))
    expect_near(auc(s, y), auc_by_ranks(s, y), 1e-12, "auc")
    expect_near(auc(s, 2 * y - 1), auc_by_ranks(s, y), 1e-12, "auc with -1/+1 labels")
    expect_dpdist_error(auc(s, y[-1]), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(auc(s, rep(1, 300)), "DPD_ERR_INVALID_ARGUMENT") # one class only
  },

  private_plr_is_noisy_reproducible_and_still_useful = function() {
    d <- make_data(4000, 2)
    m1 <- plr_fit(d$x, d$y, epsilon = 1, lambda = 0.01, rng = dpdist_rng(insecure_seed = 21))
    m2 <- plr_fit(d$x, d$y, epsilon = 1, lambda = 0.01, rng = dpdist_rng(insecure_seed = 21))
    m0 <- plr_fit(d$x, d$y, epsilon = Inf, lambda = 0.01)
    stopifnot(identical(plr_weights(m1), plr_weights(m2)))
    stopifnot(max(abs(plr_weights(m1)$weights - plr_weights(m0)$weights)) > 1e-6)
    stopifnot(plr_model_info(m1)$epsilon == 1)
    p <- predict(m1, d$x)
    stopifnot(length(p) == 4000, all(p > 0 & p < 1))
    # The non-private fit ranks well; a printed AUC documents the private one.
    stopifnot(auc(predict(m0, d$x), d$y) > 0.75)
    cat(sprintf("      AUC on training data: non-private %.3f, epsilon = 1 %.3f\n",
                auc(predict(m0, d$x), d$y), auc(p, d$y)))
  },

  stacking_ensembles = function() {
    d <- make_data(3000, 4)
    s <- pst_s_fit(d$x, d$y, n_parts = 3, epsilon = 2, lambda = 0.01,
                   rng = dpdist_rng(insecure_seed = 5))
    stopifnot(plr_model_info(s)$kind == "stacked", plr_model_info(s)$n_low_level == 3)
    stopifnot(length(predict(s, d$x)) == 3000)

    f <- pst_f_fit(d$x, d$y, groups = c(1, 1, 2, NA), importance = c(0.6, 0.4), epsilon = 2,
                   lambda = 0.01, rng = dpdist_rng(insecure_seed = 6))
    stopifnot(plr_model_info(f)$n_low_level == 2)
    stopifnot(identical(plr_low_level(f, 1)$features, c(1, 2)),
              identical(plr_low_level(f, 2)$features, 3))
    stopifnot(length(plr_weights(f)$weights) == 2) # the high level reads K = 2 outputs

    src <- make_data(3000, 7)
    h <- pst_h_fit(src$x, src$y, d$x, d$y, groups = c(1, 1, 2, 2), importance = c(0.5, 0.5),
                   epsilon_source = 1, epsilon_target = 1, lambda_source = 0.01,
                   lambda_target = 0.01, rng = dpdist_rng(insecure_seed = 8))
    stopifnot(plr_model_info(h)$kind == "stacked", plr_model_info(h)$epsilon == 1)
    p <- predict(h, d$x)
    stopifnot(all(p > 0 & p < 1))
  },

  imported_weights_predict_by_the_formula = function() {
    m <- plr_model_from_weights(c(1, -2, 0.5), input_radius = 1)
    x <- matrix(c(0.1, 0.2, 0.3, 3, 4, 0, -0.5, 0.5, 0.5), ncol = 3, byrow = TRUE)
    expect_near(predict(m, x), plogis(drop(project_rows(x) %*% c(1, -2, 0.5))), 1e-12,
                "imported model")
    stopifnot(is.nan(plr_model_info(m)$epsilon))
  },

  bad_input_is_an_error = function() {
    d <- make_data(200, 9)
    y2 <- d$y
    y2[5] <- 2
    expect_dpdist_error(plr_fit(d$x, y2, 1, 0.01), "DPD_ERR_INVALID_ARGUMENT")
    x2 <- d$x
    x2[3, 2] <- NaN
    expect_dpdist_error(plr_fit(x2, d$y, 1, 0.01), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(plr_fit(d$x, d$y[-1], 1, 0.01), "DPD_ERR_LENGTH_MISMATCH")
    expect_dpdist_error(plr_fit(d$x, d$y, -1, 0.01), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    expect_dpdist_error(plr_fit(d$x, d$y, 1, 0), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(plr_fit(as.vector(d$x), d$y, 1, 0.01), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(pst_f_fit(d$x, d$y, c(1, 1, 2, 2), c(0.5, 0.6), 1, 0.01),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(pst_f_fit(d$x, d$y, c(0, 1, 2, 2), c(0.5, 0.5), 1, 0.01),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(pst_f_fit(d$x, d$y, c(1, 1, 2), c(0.5, 0.5), 1, 0.01),
                        "DPD_ERR_LENGTH_MISMATCH")
    m <- plr_fit(d$x, d$y, Inf, 0.01)
    # 200 x 3 = 600 values would also pass as 150 rows of 4: the binding checks the width.
    expect_dpdist_error(predict(m, d$x[, 1:3]), "DPD_ERR_LENGTH_MISMATCH")
    stopifnot(length(predict(m, d$x[1:3, , drop = FALSE])) == 3)
    expect_dpdist_error(plr_low_level(m, 1), "DPD_ERR_INVALID_ARGUMENT") # not a stack
  }
))
