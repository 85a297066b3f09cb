# Verified rounds (issue 43), L-infinity and L2: tau, B (tau2, R), delta_t and the total delta
# against values worked out by hand; an honest verified round is the plain round bit for bit; a
# client sending 10^6 times its bound is left out and named and the release is the round without
# it; an L2 client whose row is past the norm bound makes the round fail; refusals.
source("helpers.R")

x <- matrix(sin(0:31 * 0.37), nrow = 8, ncol = 4, byrow = TRUE)

run_tests(list(
  bound_by_hand = function() {
    # python3 `math`: sigma = 0.5 / sqrt(5) * 2^20 units; tau = ceil(sigma * sqrt(2 *
    # log(2 * 8 * 4 / 1e-9))) = 1654032; B = 2^20 + tau = 2702608;
    # delta_t = 2 * 8 * 4 * exp(-tau^2 / (2 sigma^2)) = 9.999940807445824e-10.
    config <- dca_config(43, 8, 3, 2, 4, 1, noise_sigma_total = 0.5, frac_bits = 20)
    stopifnot(identical(dca_validity_info(config)$kind, "none"))
    dca_set_validity(config, "linf", 1e-9)
    v <- dca_validity_info(config)
    stopifnot(identical(v$kind, "linf"), v$data_units == 2^20, v$slice_units == 1654032,
              v$bound_units == 2702608, v$truncation_delta_target == 1e-9)
    expect_near(v$truncation_delta, 9.999940807445824e-10, 1e-22)
    # 1e-6 + (1 + e^0.5) * delta_t = 1.0026487055922424e-06.
    expect_near(dca_verified_total_delta(0.5, 1e-6, v$truncation_delta),
                1.0026487055922424e-06, 1e-20)
  },

  honest_round_is_the_plain_round = function() {
    for (mode in c("seed", "full")) {
      plain <- dca_simulate_round(x, n_nodes = 3, max_dropped = 2, mode = mode, sigma_total = 0.5,
                                  bound = 1, dropped = 6, rng = dpdist_rng(insecure_seed = 43))
      verified <- dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, mode = mode,
                                              sigma_total = 0.5, bound = 1, dropped = 6,
                                              rng = dpdist_rng(insecure_seed = 43))
      stopifnot(identical(verified$sum, plain$sum), length(verified$invalid) == 0,
                verified$n_included == 7, verified$truncation_delta > 0,
                verified$truncation_delta <= 1e-9 * (1 + 1e-12))
      stopifnot(identical(verified[names(plain)], plain))
    }
  },

  a_client_a_million_times_its_bound_is_left_out = function() {
    plain <- dca_simulate_round(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5, bound = 1,
                                dropped = c(1, 5), rng = dpdist_rng(insecure_seed = 43))
    verified <- dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5,
                                            bound = 1, dropped = 1, testing_malicious = 5,
                                            rng = dpdist_rng(insecure_seed = 43))
    stopifnot(identical(verified$invalid, 5), verified$n_included == 6,
              identical(verified$sum, plain$sum))
    # NON-PRIVATE exact round: the encoded sum of the honest clients, by hand.
    exact <- dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, bound = 1,
                                         frac_bits = 20, non_private = TRUE,
                                         testing_malicious = 5)
    stopifnot(identical(exact$invalid, 5),
              identical(exact$sum, colSums(round(x[-6, ] * 2^20)) / 2^20))
  },

  refusals = function() {
    e <- expect_dpdist_error(
      dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5, bound = 1,
                                  testing_malicious = c(0, 3, 6)),
      "DPD_ERR_TOO_MANY_DROPPED")
    stopifnot(grepl("(clients 0, 3, 6)", conditionMessage(e), fixed = TRUE))
    expect_dpdist_error(
      dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5, bound = 1,
                                  truncation_delta = 0),
      "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    config <- dca_config(43, 8, 3, 2, 4, 1, noise_sigma_total = 0.5)
    expect_dpdist_error(dca_set_validity(config, "linf", NA_real_), "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    stopifnot(identical(dca_validity_info(config)$kind, "none"))
    dca_set_validity(config)
    e <- expect_dpdist_error(dca_client(config, 0, dpdist_rng(insecure_seed = 1)),
                             "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("dca_simulate_round_verified|dpd_simulate_round_verified",
                    conditionMessage(e)))
    dca_set_validity(config, "none")
    stopifnot(identical(dca_validity_info(config)$kind, "none"))
    expect_dpdist_error(dca_verified_total_delta(0, 1e-6, 1e-9),
                        "DPD_ERR_INVALID_PRIVACY_PARAMETER")
  },

  l2_bound_by_hand = function() {
    # python3 with mpmath (the formulas of verified_shares::l2): sigma = 0.5 / sqrt(5) * 2^20
    # units; x = log(8 / 1e-9) = 22.802707378626247; tau2 = ceil(sigma * sqrt(4 + 2 * sqrt(4 *
    # x) + 2 * x)) = ceil(1943493.779...) = 1943494; data_norm 2: 2097152 units, R = 4040646;
    # delta_t = 8 * exp(-y^2), y = (sqrt(2 t - 4) - 2) / 2, t = tau2^2 / sigma^2:
    # 9.9999354351203662e-10; total delta at 0.5, 1e-6: 1.002648704169263e-06.
    config <- dca_config(43, 8, 3, 2, 4, 1, noise_sigma_total = 0.5, frac_bits = 20)
    dca_set_validity(config, "l2", 1e-9, data_norm = 2)
    v <- dca_validity_info(config)
    stopifnot(identical(v$kind, "l2"), v$data_units == 2097152, v$slice_units == 1943494,
              v$bound_units == 4040646, v$truncation_delta_target == 1e-9)
    expect_near(v$truncation_delta, 9.9999354351203662e-10, 1e-21)
    expect_near(dca_verified_total_delta(0.5, 1e-6, v$truncation_delta),
                1.002648704169263e-06, 1e-20)
  },

  l2_rounds = function() {
    # Every row of x has L2 norm <= 1.833 < 2.
    plain <- dca_simulate_round(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5, bound = 1,
                                dropped = 6, rng = dpdist_rng(insecure_seed = 43))
    verified <- dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5,
                                            bound = 1, dropped = 6, validity = "l2",
                                            data_norm = 2, rng = dpdist_rng(insecure_seed = 43))
    stopifnot(identical(verified[names(plain)], plain), length(verified$invalid) == 0,
              verified$truncation_delta > 0)
    without_five <- dca_simulate_round(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5,
                                       bound = 1, dropped = c(5, 6),
                                       rng = dpdist_rng(insecure_seed = 43))
    cheated <- dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, sigma_total = 0.5,
                                           bound = 1, dropped = 6, testing_malicious = 5,
                                           validity = "l2", data_norm = 2,
                                           rng = dpdist_rng(insecure_seed = 43))
    stopifnot(identical(cheated$invalid, 5), cheated$n_included == 6,
              identical(cheated$sum, without_five$sum))
    exact <- dca_simulate_round_verified(x, n_nodes = 3, max_dropped = 2, bound = 1,
                                         frac_bits = 20, non_private = TRUE,
                                         testing_malicious = 5, validity = "l2", data_norm = 2)
    stopifnot(identical(exact$invalid, 5),
              identical(exact$sum, colSums(round(x[-6, ] * 2^20)) / 2^20))
  },

  l2_refusals = function() {
    # Every row halved (norms <= 0.92) but client 3's (row 4, norm 1.778 > 1.5): it refuses.
    long_three <- x * 0.5
    long_three[4, ] <- x[4, ]
    e <- expect_dpdist_error(
      dca_simulate_round_verified(long_three, n_nodes = 3, max_dropped = 2, sigma_total = 0.5,
                                  bound = 1, validity = "l2", data_norm = 1.5),
      "DPD_ERR_INVALID_ARGUMENT")
    stopifnot(grepl("client 3: its data's L2 norm", conditionMessage(e), fixed = TRUE))
    config <- dca_config(43, 8, 3, 2, 4, 1, noise_sigma_total = 0.5)
    for (norm in list(-1, NA_real_, Inf, NULL)) {
      e <- expect_dpdist_error(dca_set_validity(config, "l2", data_norm = norm),
                               "DPD_ERR_INVALID_ARGUMENT")
      stopifnot(grepl("data_norm", conditionMessage(e), fixed = TRUE))
    }
    expect_dpdist_error(dca_set_validity(config, "l2", 0, data_norm = 1),
                        "DPD_ERR_INVALID_PRIVACY_PARAMETER")
    stopifnot(identical(dca_validity_info(config)$kind, "none"))
  }
))
