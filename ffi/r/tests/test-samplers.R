# Samplers: reproducible only through an insecure fixed seed; moments within alpha <= 1e-6
# bounds (and the seeds are fixed, so these checks cannot flake).
source("helpers.R")

run_tests(list(
  fixed_seed_is_reproducible_and_labelled_insecure = function() {
    a <- rdiscrete_gaussian(100, 5, rng = dpdist_rng(insecure_seed = 7))
    b <- rdiscrete_gaussian(100, 5, rng = dpdist_rng(insecure_seed = 7))
    c <- rdiscrete_gaussian(100, 5, rng = dpdist_rng(insecure_seed = 8))
    stopifnot(identical(a, b), !identical(a, c))
    stopifnot(isTRUE(attr(dpdist_rng(insecure_seed = 1), "insecure")))
    stopifnot(identical(attr(dpdist_rng(), "insecure"), FALSE))
    # One generator hands out independent child streams: two draws differ.
    rng <- dpdist_rng(insecure_seed = 7)
    stopifnot(!identical(rgaussian_noise(10, 1, rng), rgaussian_noise(10, 1, rng)))
  },

  os_generator_gives_fresh_noise = function() {
    stopifnot(!identical(rgaussian_noise(20, 1), rgaussian_noise(20, 1)))
  },

  discrete_gaussian_moments = function() {
    # n = 20000, sigma = 3: sd(mean) = 3/sqrt(20000) = 0.0212, 5.3 sd = 0.113 (alpha ~1e-7);
    # sd(var) ~ sqrt(2 sigma^4 / n) = 0.090, 5.3 sd = 0.48.
    x <- rdiscrete_gaussian(20000, 3, rng = dpdist_rng(insecure_seed = 11))
    stopifnot(length(x) == 20000, all(x == round(x)))
    stopifnot(abs(mean(x)) < 0.113, abs(var(x) - 9) < 0.48)
  },

  discrete_laplace_moments = function() {
    # scale b = 2: P(y) ∝ exp(-|y|/2). Exact moments by summing the pmf over |y| <= 400
    # (the tail beyond is below e^-200): v = 7.91997, and sd(sample var) = sqrt((m4 - v^2)/n).
    y <- -400:400
    p <- exp(-abs(y) / 2)
    p <- p / sum(p)
    v <- sum(p * y^2)
    m4 <- sum(p * y^4)
    expect_near(v, 2 * exp(-1 / 2) / (1 - exp(-1 / 2))^2, 1e-9, "closed-form variance")
    n <- 20000
    x <- rdiscrete_laplace(n, 2, rng = dpdist_rng(insecure_seed = 12))
    stopifnot(all(x == round(x)))
    # 5.3 standard deviations each (alpha ~1e-7).
    stopifnot(abs(mean(x)) < 5.3 * sqrt(v / n), abs(var(x) - v) < 5.3 * sqrt((m4 - v^2) / n))
  },

  continuous_samplers_moments = function() {
    g <- rgaussian_noise(20000, 2, rng = dpdist_rng(insecure_seed = 13))
    # sd(mean) = 2/sqrt(20000) = 0.0141 -> 0.075; sd(var) = sqrt(2*16/20000) = 0.040 -> 0.21
    stopifnot(abs(mean(g)) < 0.075, abs(var(g) - 4) < 0.21)
    l <- rlaplace_noise(20000, 1, rng = dpdist_rng(insecure_seed = 14))
    # Laplace(1): var 2, E|x| = 1; sd(mean |x|) = 1/sqrt(20000) = 0.0071 -> 0.038
    stopifnot(abs(mean(abs(l)) - 1) < 0.038, abs(mean(l)) < 0.075)
  },

  objective_perturbation_norm_is_gamma = function() {
    # ||b|| ~ Gamma(shape d = 3, scale 2 / eps' = 2): mean 6, sd sqrt(3) * 2 = 3.46;
    # 2000 draws: sd(mean) = 0.0775, 5.3 sd = 0.41.
    rng <- dpdist_rng(insecure_seed = 15)
    norms <- vapply(1:2000, function(i) sqrt(sum(robjective_perturbation(3, 1, rng)^2)), 0)
    stopifnot(abs(mean(norms) - 6) < 0.41)
  },

  sampler_arguments_are_checked = function() {
    expect_dpdist_error(rdiscrete_gaussian(10, NaN), "DPD_ERR_NON_FINITE")
    expect_dpdist_error(rdiscrete_gaussian(10, -1), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(rgaussian_noise(-1, 1), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(rgaussian_noise(10, 1, rng = "not an rng"), "DPD_ERR_INVALID_ARGUMENT")
    expect_dpdist_error(dpdist_rng(insecure_seed = 1.5), "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(length(rgaussian_noise(0, 1)) == 0)
  },

  freed_handle_is_refused = function() {
    rng <- dpdist_rng(insecure_seed = 1)
    dpdist_free(rng)
    dpdist_free(rng) # a second free is a no-op
    expect_dpdist_error(rgaussian_noise(3, 1, rng), "DPD_ERR_NULL_POINTER")
  }
))
