# PLR and the stacking ensembles through the C library, checked against an independent base-R
# fit of the same objective and a base-R AUC; the intercept (on by default, as glm) against
# values computed here, and intercept = FALSE against the model without intercept.
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
    m <- plr_fit(d$x, d$y, epsilon = Inf, lambda = lambda, intercept = FALSE)
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
    stopifnot(is.na(plr_intercept(m)), identical(names(coef(m)), paste0("x", 1:4)))
  },

  # The same with an intercept (the default): the solver's rows are (x~, c) with x~ the row
  # projected to radius 1/sqrt(2) and c = 1/sqrt(2); its weight on c times c is b.
  non_private_plr_with_intercept_matches_a_base_r_fit = function() {
    d <- make_data(1500, 1)
    d$y <- as.double(d$x[, 1] + 0.3 * d$x[, 2] > 0.25) # off the origin: b matters
    colnames(d$x) <- c("age", "dose", "bmi", "noise")
    lambda <- 0.01
    m <- plr_fit(d$x, d$y, epsilon = Inf, lambda = lambda)
    c0 <- 1 / sqrt(2)
    xp <- cbind(d$x / pmax(1, sqrt(rowSums(d$x^2)) / c0), c0)
    ypm <- 2 * d$y - 1
    f <- function(w) mean(log1p(exp(-ypm * drop(xp %*% w)))) + lambda * sum(w^2) / 2
    g <- function(w) {
      p <- plogis(-ypm * drop(xp %*% w))
      -drop(crossprod(xp, ypm * p)) / nrow(xp) + lambda * w
    }
    ref <- optim(rep(0, 5), f, g, method = "BFGS",
                 control = list(reltol = 1e-14, maxit = 1000))$par
    w <- plr_weights(m)
    expect_near(w$weights, ref[1:4], 1e-4, "PLR weights with intercept vs optim")
    expect_near(plr_intercept(m), ref[5] * c0, 1e-4, "PLR intercept vs optim")
    stopifnot(plr_intercept(m) < 0)
    # coef as glm: "(Intercept)" first, then the columns by name.
    cf <- coef(m)
    stopifnot(identical(names(cf), c("(Intercept)", "age", "dose", "bmi", "noise")))
    stopifnot(cf[["(Intercept)"]] == plr_intercept(m), identical(unname(cf[-1]), w$weights))
    # predict uses b: plogis(b + w'x~).
    p <- predict(m, d$x)
    expect_near(p, plogis(plr_intercept(m) + drop(xp[, 1:4] %*% w$weights)), 1e-12,
                "predict with intercept")
    stopifnot(auc(p, d$y) > 0.95)
    # Export and import: the same predictions, bit for bit.
    back <- plr_model_from_weights(w$weights, w$input_radius, intercept = plr_intercept(m))
    stopifnot(identical(predict(back, d$x), p))
  },

  imported_intercept_model_predicts_by_hand = function() {
    # w = (0.5, -1), b = 0.3, r = 2: rows projected to radius sqrt(2). Row (1, 0.5) is inside:
    # plogis(0.3) = 0.574442516811659; row (3, 4) becomes (3, 4) sqrt(2)/5: plogis(0.3 -
    # 0.5 sqrt(2)) = 0.39960606322120307 (both worked out by hand, 1/(1 + exp(-t))).
    m <- plr_model_from_weights(c(0.5, -1), input_radius = 2, intercept = 0.3)
    x <- matrix(c(1, 0.5, 3, 4), ncol = 2, byrow = TRUE)
    expect_near(predict(m, x), c(0.574442516811659, 0.39960606322120307), 1e-15, "by hand")
    stopifnot(plr_intercept(m) == 0.3, identical(names(coef(m)), c("(Intercept)", "x1", "x2")))
    expect_dpdist_error(plr_model_from_weights(c(0.5, -1), 2, intercept = NaN),
                        "DPD_ERR_NON_FINITE")
    expect_dpdist_error(plr_intercept(m, 1), "DPD_ERR_INVALID_ARGUMENT") # not a stack
  },

  # Public ranges: w = (2, -1), b = 0.5, ranges [0, 4] x [-1, 1], r = 1 (rows mapped, then
  # projected to radius 1/sqrt(2)). (10, 0.5) -> (1, 0.5), norm sqrt(1.25), scaled by
  # sqrt(0.5/1.25): margin 1.5 sqrt(0.4) + 0.5; (1, 0) -> (-0.5, 0): -0.5; (3, 0) -> (0.5, 0):
  # 1.5 (worked out by hand).
  imported_ranges_model_predicts_by_hand = function() {
    rg <- list(lo = c(0, -1), hi = c(4, 1))
    m <- plr_model_from_weights(c(2, -1), input_radius = 1, intercept = 0.5, ranges = rg)
    x <- matrix(c(10, 0.5, 1, 0, 3, 0), ncol = 2, byrow = TRUE)
    expect_near(predict(m, x), plogis(c(1.5 * sqrt(0.4) + 0.5, -0.5, 1.5)), 1e-15, "by hand")
    stopifnot(identical(plr_ranges(m), rg), plr_intercept(m) == 0.5)
    stopifnot(is.null(plr_ranges(plr_model_from_weights(c(2, -1), 1))))
    expect_dpdist_error(plr_model_from_weights(c(2, -1), 1, 0.5, list(lo = c(0, 1), hi = c(4, 1))),
                        "DPD_ERR_INVALID_ARGUMENT")
  },

  # A fit with ranges on a tiny data set (row 6 outside its range): predictions against the
  # map applied here to the exported parts; list and matrix forms equal; bad ranges refused
  # before anything is drawn (the same generator then fits what a fresh one of its seed fits).
  plr_fit_with_ranges_predicts_through_the_map = function() {
    x <- matrix(c(0.5, 0.2, 1, -0.5, 1.5, 0.9, 3, 0.1, 3.5, -0.3, 10, 0.5, -7, 3, 2.5, -0.8),
                ncol = 2, byrow = TRUE)
    y <- c(0, 0, 0, 1, 1, 1, 0, 1)
    lo <- c(0, -1)
    hi <- c(4, 1)
    rng <- dpdist_rng(insecure_seed = 40)
    expect_dpdist_error(plr_fit(x, y, 1, 0.01, rng = rng, ranges = list(lo = lo, hi = c(4, -1))),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(plr_fit(x, y, 1, 0.01, rng = rng, ranges = list(lo = lo, hi = c(NA, 1))),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(plr_fit(x, y, 1, 0.01, rng = rng, ranges = list(lo = 0, hi = 4)),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(plr_fit(x, y, 1, 0.01, rng = rng, ranges = c(0, 4)),
                        "DPD_ERR_INVALID_ARGUMENT")
    m <- plr_fit(x, y, 1, 0.01, rng = rng, ranges = list(lo = lo, hi = hi))
    m2 <- plr_fit(x, y, 1, 0.01, rng = dpdist_rng(insecure_seed = 40), ranges = cbind(lo, hi))
    p <- predict(m, x)
    stopifnot(identical(p, predict(m2, x)))
    w <- plr_weights(m)
    b <- plr_intercept(m)
    stopifnot(identical(plr_ranges(m), list(lo = lo, hi = hi)))
    phi <- sweep(sweep(pmin(pmax(x, rep(lo, each = 8)), rep(hi, each = 8)), 2, (lo + hi) / 2),
                 2, (hi - lo) / 2, "/")
    r <- w$input_radius / sqrt(2)
    phi <- phi * pmin(1, r / sqrt(rowSums(phi^2)))
    expect_near(p, plogis(b + drop(phi %*% w$weights)), 1e-12, "mapped by hand")
    stopifnot(identical(predict(m, matrix(c(4, 0.5), 1)), p[6])) # (10, 0.5) clamped to (4, 0.5)
    back <- plr_model_from_weights(w$weights, w$input_radius, b, plr_ranges(m))
    stopifnot(identical(predict(back, x), p))
  },

  # The stacked fits with ranges on a tiny data set (rows 5, 8 and 11 outside their ranges):
  # each prediction against the chain worked out here from the exported parts -- low-level model
  # k maps its columns (clamp, centre, half-width), projects them to r_k/sqrt(2) and has margin
  # b_k + w_k'phi; the high level reads m_k = (2 plogis(z_k) - 1)/sqrt(K), projected likewise.
  # Bad ranges are refused before anything is drawn.
  stacks_with_ranges_predict_through_the_map = function() {
    x <- matrix(c(0.5, 0.2, 12, 1, -0.5, 15, 1.5, 0.9, 11, 3, 0.1, 18, 10, 0.5, 14,
                  3.5, -0.3, 16, 0.2, 0.4, 19, -7, 3, 13, 2.5, -0.8, 12.5, 1.2, 0, 17,
                  3.8, 0.3, 40, 2.9, -0.6, 15.5), ncol = 3, byrow = TRUE)
    y <- c(0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1)
    lo <- c(0, -1, 10)
    hi <- c(4, 1, 20)
    groups <- c(2, 1, 2)
    importance <- c(0.25, 0.75)
    project <- function(v, r) v * min(1, r / sqrt(sum(v^2)))
    by_hand <- function(model, row) {
      K <- plr_model_info(model)$n_low_level
      meta <- vapply(seq_len(K), function(k) {
        low <- plr_low_level(model, k)
        j <- low$features
        stopifnot(identical(plr_ranges(model, k), list(lo = lo[j], hi = hi[j])))
        phi <- (pmin(pmax(row[j], lo[j]), hi[j]) - (lo[j] + hi[j]) / 2) / ((hi[j] - lo[j]) / 2)
        phi <- project(phi, low$input_radius / sqrt(2))
        (2 * plogis(plr_intercept(model, k) + sum(low$weights * phi)) - 1) / sqrt(K)
      }, numeric(1))
      top <- plr_weights(model)
      plogis(plr_intercept(model) + sum(top$weights * project(meta, top$input_radius / sqrt(2))))
    }
    rg <- list(lo = lo, hi = hi)
    rng <- dpdist_rng(insecure_seed = 43)
    fits <- list(
      pst_s_fit(x, y, 2, 1, 0.01, 0.1, rng = rng, ranges = rg),
      pst_f_fit(x, y, groups, importance, Inf, 0.01, 0.1, rng = rng, ranges = cbind(lo, hi)),
      pst_h_fit(x, y, x, y, groups, importance, 1, 2, 0.01, 0.5, 0.1, rng = rng, ranges = rg))
    for (m in fits) {
      p <- predict(m, x)
      expect_near(p, apply(x, 1, function(row) by_hand(m, row)), 1e-12, "stack by hand")
      stopifnot(identical(predict(m, matrix(c(4, 0.5, 14), 1)), p[5])) # row 5 clamped
      stopifnot(is.null(plr_ranges(m)))
    }
    stopifnot(is.null(plr_ranges(pst_s_fit(x, y, 2, 1, 0.01, rng = rng), 1)))

    fresh <- dpdist_rng(insecure_seed = 7)
    rng <- dpdist_rng(insecure_seed = 7)
    expect_dpdist_error(pst_f_fit(x, y, groups, importance, 1, 0.01, rng = rng,
                                  ranges = list(lo = lo, hi = c(4, 1, 10))),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(pst_s_fit(x, y, 2, 1, 0.01, rng = rng, ranges = list(lo = 0, hi = 4)),
                        "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(pst_h_fit(x, y, x, y, groups, importance, 1, 2, 0.01, 0.5, rng = rng,
                                  ranges = list(lo = c(0, NA, 10), hi = hi)),
                        "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(identical(
      predict(pst_f_fit(x, y, groups, importance, 1, 0.01, rng = rng, ranges = rg), x),
      predict(pst_f_fit(x, y, groups, importance, 1, 0.01, rng = fresh, ranges = rg), x)))
  },

  # intercept = FALSE is what plr_fit and pst_s_fit returned before they had the option. The
  # expected values were printed (%a) by a C program linked against the library built at
  # commit 0980f78, before the intercept reached the C ABI, calling its dpd_plr_fit and
  # dpd_pst_s_fit on the same rows (integer arithmetic, so C and R build the same doubles).
  intercept_false_reproduces_the_previous_fits_bit_for_bit = function() {
    i <- 0:199
    x <- sapply(0:2, function(j) ((i * 7 + j * 13 + i * i) %% 17 - 8) / 10)
    y <- as.double(x[, 1] - x[, 2] + 0.5 * x[, 3] > 0.1)
    m <- plr_fit(x, y, epsilon = 1, lambda = 0.01, rng = dpdist_rng(insecure_seed = 21),
                 intercept = FALSE)
    stopifnot(identical(plr_weights(m)$weights,
                        c(0x1.da9c4a04031dap+1, -0x1.eae277485aa48p+0, 0x1.86b0d87a4fe9bp+0)))
    stopifnot(is.na(plr_intercept(m)), !("(Intercept)" %in% names(coef(m))))
    s <- pst_s_fit(x, y, n_parts = 2, epsilon = 2, lambda = 0.01,
                   rng = dpdist_rng(insecure_seed = 5), intercept = FALSE)
    stopifnot(identical(plr_weights(s)$weights, c(0x1.592585e8c1fa4p+0, 0x1.a84f93b521c58p+1)))
    stopifnot(identical(predict(s, x[1:3, ]),
                        c(0x1.4254ae62d87c7p-5, 0x1.1baba7456a67ep-1, 0x1.42a5712daac79p-5)))
    # The default (intercept = TRUE) is a different model on the same seed.
    with_b <- plr_fit(x, y, epsilon = 1, lambda = 0.01, rng = dpdist_rng(insecure_seed = 21))
    stopifnot(!is.na(plr_intercept(with_b)))
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
    stopifnot(!is.na(plr_intercept(m1)), names(coef(m1))[1] == "(Intercept)")
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
    # Intercepts by default: every level has one; coef is the high level's, b first.
    stopifnot(!is.na(plr_intercept(s)), all(!is.na(sapply(1:3, function(k) plr_intercept(s, k)))))
    stopifnot(identical(names(coef(s)), c("(Intercept)", "level1", "level2", "level3")))
    s0 <- pst_s_fit(d$x, d$y, n_parts = 3, epsilon = 2, lambda = 0.01,
                    rng = dpdist_rng(insecure_seed = 5), intercept = FALSE)
    stopifnot(is.na(plr_intercept(s0)), is.na(plr_intercept(s0, 1)),
              identical(names(coef(s0)), c("level1", "level2", "level3")))

    f <- pst_f_fit(d$x, d$y, groups = c(1, 1, 2, NA), importance = c(0.6, 0.4), epsilon = 2,
                   lambda = 0.01, rng = dpdist_rng(insecure_seed = 6))
    stopifnot(plr_model_info(f)$n_low_level == 2)
    stopifnot(identical(plr_low_level(f, 1)$features, c(1, 2)),
              identical(plr_low_level(f, 2)$features, 3))
    stopifnot(length(plr_weights(f)$weights) == 2) # the high level reads K = 2 outputs
    stopifnot(!is.na(plr_intercept(f)), !is.na(plr_intercept(f, 2)))
    f0 <- pst_f_fit(d$x, d$y, groups = c(1, 1, 2, NA), importance = c(0.6, 0.4), epsilon = 2,
                    lambda = 0.01, rng = dpdist_rng(insecure_seed = 6), intercept = FALSE)
    stopifnot(is.na(plr_intercept(f0)), is.na(plr_intercept(f0, 2)))

    src <- make_data(3000, 7)
    h <- pst_h_fit(src$x, src$y, d$x, d$y, groups = c(1, 1, 2, 2), importance = c(0.5, 0.5),
                   epsilon_source = 1, epsilon_target = 1, lambda_source = 0.01,
                   lambda_target = 0.01, rng = dpdist_rng(insecure_seed = 8))
    stopifnot(plr_model_info(h)$kind == "stacked", plr_model_info(h)$epsilon == 1)
    p <- predict(h, d$x)
    stopifnot(all(p > 0 & p < 1))
    stopifnot(!is.na(plr_intercept(h)), !is.na(plr_intercept(h, 1)))
    h0 <- pst_h_fit(src$x, src$y, d$x, d$y, groups = c(1, 1, 2, 2), importance = c(0.5, 0.5),
                    epsilon_source = 1, epsilon_target = 1, lambda_source = 0.01,
                    lambda_target = 0.01, rng = dpdist_rng(insecure_seed = 8), intercept = FALSE)
    stopifnot(is.na(plr_intercept(h0)), is.na(plr_intercept(h0, 1)))
    # A stack's prediction recomputed from its parts with intercepts: low level k gives
    # m_k = (2 plogis(b_k + w_k'x~_k) - 1)/sqrt(K), the high level plogis(b + v'm~).
    by_hand <- function(model, x) {
      K <- plr_model_info(model)$n_low_level
      meta <- sapply(seq_len(K), function(k) {
        l <- plr_low_level(model, k)
        xk <- x[, l$features, drop = FALSE]
        xk <- xk / pmax(1, sqrt(rowSums(xk^2)) / (l$input_radius / sqrt(2)))
        (2 * plogis(plr_intercept(model, k) + drop(xk %*% l$weights)) - 1) / sqrt(K)
      })
      top <- plr_weights(model)
      meta <- meta / pmax(1, sqrt(rowSums(meta^2)) / (top$input_radius / sqrt(2)))
      plogis(plr_intercept(model) + drop(meta %*% top$weights))
    }
    expect_near(p, by_hand(h, d$x), 1e-12, "PST-H with intercepts by hand")
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
    expect_dpdist_error(plr_fit(d$x, d$y, 1, 0.01, intercept = NA), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(pst_s_fit(d$x, d$y, 2, 1, 0.01, intercept = "yes"),
                        "DPD_ERR_INVALID_ARGUMENT")
  }
))
