/* Verified rounds from C (issue 43), in both validity modes (L∞ and L2): the bounds (τ, B or
 * τ₂, R) and δ_t, the total δ against values worked out by hand; an honest verified round
 * releases the plain round's sum bit for bit; a client that sends 10^6 times its bound is left
 * out, named, and the release is the honest clients' round; more than T invalid releases
 * nothing; an L2 client whose data are past the norm bound makes the round fail; bad calls
 * change nothing. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 8, M = 3, T = 2, D = 4, FRAC = 20 };

static double value(size_t i, size_t j) { return sin(0.37 * (double)(i * D + j)); }

static void make_inputs(double *inputs) {
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < D; j++) inputs[i * D + j] = value(i, j);
}

/* Round 43: N = 8 clients, M = 3 nodes, T = 2, d = 4, bound 1, seed mode, 2^-20 grid;
 * σ_total = 0.5 (noisy) or an exact NON-PRIVATE sum. */
static dpd_round_config *make_config(int noisy) {
    dpd_round_config *config = NULL;
    if (noisy) {
        CHECK_OK(dpd_round_config_new(43, N, M, T, D, 1.0, DPD_SHARE_MODE_SEED, 0.5, FRAC, &config));
    } else {
        CHECK_OK(dpd_round_config_new_exact(43, N, M, T, D, 1.0, DPD_SHARE_MODE_SEED, FRAC, &config));
    }
    return config;
}

/* Field by field (memcmp would compare the struct's padding too). */
static int same_info(const dpd_release_info *a, const dpd_release_info *b) {
    return a->n_clients == b->n_clients && a->n_included == b->n_included &&
           a->max_dropped == b->max_dropped && a->frac_bits == b->frac_bits &&
           a->noise_sigma_total == b->noise_sigma_total &&
           a->noise_sigma_client == b->noise_sigma_client &&
           a->noise_sigma_released == b->noise_sigma_released;
}

/* dpd_simulate_round (no validity) with seed 43. */
static void plain_round(int noisy, const uint64_t *dropped, size_t n_dropped, double *sum,
                        dpd_release_info *info) {
    static double inputs[N * D];
    make_inputs(inputs);
    dpd_round_config *config = make_config(noisy);
    dpd_rng *rng = NULL;
    size_t len = 0;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(43, &rng));
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, dropped, n_dropped, rng, sum, D, &len, info));
    CHECK(len == D);
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

/* The verified round with seed 43; returns the status, writes the outputs on success. */
static dpd_status verified_round(dpd_round_config *config, const uint64_t *dropped,
                                 size_t n_dropped, const uint64_t *malicious, size_t n_malicious,
                                 double *sum, uint64_t *invalid, size_t *n_invalid,
                                 dpd_release_info *info, double *truncation_delta) {
    static double inputs[N * D];
    make_inputs(inputs);
    dpd_rng *rng = NULL;
    size_t len = 0;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(43, &rng));
    dpd_status s = dpd_simulate_round_verified_testing_malicious(
        config, inputs, N * D, dropped, n_dropped, malicious, n_malicious, rng, sum, D, &len,
        invalid, T, n_invalid, info, truncation_delta);
    if (s == DPD_OK) CHECK(len == D);
    dpd_rng_free(rng);
    return s;
}

/* τ, B and δ_t by hand (python3 `math`, the formulas of verified_shares::bound):
 * σ_client = 0.5/sqrt(N − T − 1) = 0.5/sqrt(5), σ = σ_client·2^20 = 234468.72155748194 units;
 * τ = ceil(σ·sqrt(2·ln(2·N·d/1e-9))) = ceil(σ·sqrt(2·ln(6.4e10))) = 1654032;
 * B = 2^20 + τ = 2702608; δ_t = 2·N·d·exp(−τ²/(2σ²)) = 9.999940807445824e-10;
 * total δ at ε = 0.5, δ = 1e-6: δ + (1 + e^0.5)·δ_t = 1.0026487055922424e-06. */
static void bound_by_hand(void) {
    dpd_round_config *config = make_config(1);
    dpd_validity_info v;
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.kind == DPD_VALIDITY_NONE && v.bound_units == 0 && v.truncation_delta == 0.0);

    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, 1e-9));
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.kind == DPD_VALIDITY_LINF);
    CHECK(v.truncation_delta_target == 1e-9);
    CHECK(v.data_units == 1048576);
    CHECK(v.slice_units == 1654032);
    CHECK(v.bound_units == 2702608);
    CHECK(fabs(v.truncation_delta - 9.999940807445824e-10) <= 1e-22);
    CHECK(v.truncation_delta <= 1e-9);
    /* The same quantities from the formulas, computed here. */
    double sigma = 0.5 / sqrt(5.0) * 1048576.0;
    double tau = ceil(sigma * sqrt(2.0 * log(2.0 * N * D / 1e-9)));
    CHECK((double)v.slice_units == tau);
    double dt = 2.0 * N * D * exp(-tau * tau / (2.0 * sigma * sigma));
    CHECK(fabs(v.truncation_delta - dt) <= 1e-12 * dt);

    double total = -1.0;
    CHECK_OK(dpd_verified_total_delta(0.5, 1e-6, v.truncation_delta, &total));
    CHECK(fabs(total - 1.0026487055922424e-06) <= 1e-20);
    CHECK(fabs(total - (1e-6 + (1.0 + exp(0.5)) * dt)) <= 1e-20);

    /* Without noise: no slice, δ_t = 0, B = the data's bound. */
    dpd_round_config *exact = make_config(0);
    CHECK_OK(dpd_round_config_set_validity(exact, DPD_VALIDITY_LINF, 1e-9));
    CHECK_OK(dpd_round_config_validity_info(exact, &v));
    CHECK(v.slice_units == 0 && v.bound_units == 1048576 && v.truncation_delta == 0.0);
    dpd_round_config_free(exact);
    dpd_round_config_free(config);
}

/* An honest verified round releases what the plain round releases, bit for bit. */
static void honest_equals_plain(void) {
    dpd_round_config *config = make_config(1);
    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, 1e-9));
    const uint64_t dropped[1] = {6};
    double plain[D], verified[D], dt = -1.0;
    uint64_t invalid[T] = {99, 99};
    size_t n_invalid = 99;
    dpd_release_info plain_info, verified_info;
    plain_round(1, dropped, 1, plain, &plain_info);
    CHECK_OK(verified_round(config, dropped, 1, NULL, 0, verified, invalid, &n_invalid,
                            &verified_info, &dt));
    CHECK(n_invalid == 0);
    CHECK(memcmp(plain, verified, sizeof plain) == 0);
    CHECK(same_info(&plain_info, &verified_info));
    CHECK(verified_info.n_included == N - 1);
    dpd_validity_info v;
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(dt == v.truncation_delta);
    /* The noise is there (else the comparison above could not fail on the noise): the sum is
     * not the exact one. */
    double exact[D];
    plain_round(0, dropped, 1, exact, NULL);
    int differs = 0;
    for (size_t j = 0; j < D; j++) differs |= exact[j] != verified[j];
    CHECK(differs);
    dpd_round_config_free(config);
}

/* Validity turned on and off again: the plain round runs as on a config that never had it. */
static void off_again_is_the_plain_round(void) {
    static double inputs[N * D];
    make_inputs(inputs);
    dpd_round_config *config = make_config(1);
    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, 1e-9));
    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_NONE, 0.0));
    double plain[D], again[D];
    dpd_release_info plain_info, again_info;
    plain_round(1, NULL, 0, plain, &plain_info);
    dpd_rng *rng = NULL;
    size_t len = 0;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(43, &rng));
    CHECK_OK(dpd_simulate_round(config, inputs, N * D, NULL, 0, rng, again, D, &len, &again_info));
    CHECK(memcmp(plain, again, sizeof plain) == 0 && same_info(&plain_info, &again_info));
    dpd_rng_free(rng);
    dpd_round_config_free(config);
}

/* On a NON-PRIVATE exact round with validity on, client 5 cheats: it is left out and the release
 * is Σ round(x·2^20)/2^20 over the honest clients. */
static void exact_round_without_five(dpd_round_config *exact) {
    const uint64_t malicious[1] = {5};
    double verified[D];
    uint64_t invalid[T] = {99, 99};
    size_t n_invalid = 0;
    dpd_release_info info;
    CHECK_OK(verified_round(exact, NULL, 0, malicious, 1, verified, invalid, &n_invalid, &info,
                            NULL));
    CHECK(n_invalid == 1 && invalid[0] == 5);
    for (size_t j = 0; j < D; j++) {
        double by_hand = 0.0;
        for (size_t i = 0; i < N; i++)
            if (i != 5) by_hand += nearbyint(value(i, j) * 1048576.0);
        CHECK(verified[j] == by_hand / 1048576.0);
    }
}

/* A client whose shares sum to its vector plus 10^6·2^20 units in coordinate 0 is left out and
 * named; the release is the round of the others. */
static void malicious_is_left_out(void) {
    dpd_round_config *config = make_config(1);
    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, 1e-9));
    const uint64_t malicious[1] = {5};
    double verified[D], plain[D];
    uint64_t invalid[T] = {99, 99};
    size_t n_invalid = 0;
    dpd_release_info info, plain_info;
    CHECK_OK(verified_round(config, NULL, 0, malicious, 1, verified, invalid, &n_invalid, &info,
                            NULL));
    CHECK(n_invalid == 1 && invalid[0] == 5);
    CHECK(info.n_included == N - 1);
    plain_round(1, malicious, 1, plain, &plain_info);
    CHECK(memcmp(plain, verified, sizeof plain) == 0);
    CHECK(same_info(&plain_info, &info));

    /* With a dropout too: the round of the other six. */
    const uint64_t dropped[1] = {1}, both[2] = {1, 5};
    CHECK_OK(verified_round(config, dropped, 1, malicious, 1, verified, invalid, &n_invalid,
                            &info, NULL));
    CHECK(n_invalid == 1 && invalid[0] == 5 && info.n_included == N - 2);
    plain_round(1, both, 2, plain, NULL);
    CHECK(memcmp(plain, verified, sizeof plain) == 0);
    dpd_round_config_free(config);

    dpd_round_config *exact = make_config(0);
    CHECK_OK(dpd_round_config_set_validity(exact, DPD_VALIDITY_LINF, 1e-9));
    exact_round_without_five(exact);
    dpd_round_config_free(exact);
}

/* Too many invalid: nothing released, the invalid named. Bad calls: nothing written. */
static void refusals(void) {
    dpd_round_config *config = make_config(1);
    double sum[D] = {-7.0, -7.0, -7.0, -7.0};
    uint64_t invalid[T] = {99, 99};
    size_t n_invalid = 99;
    double dt = -1.0;
    dpd_release_info info;
    info.n_included = 12345;

    /* Validity off: the verified round refuses, naming the setter. */
    CHECK_FAILS(verified_round(config, NULL, 0, NULL, 0, sum, invalid, &n_invalid, &info, &dt),
                DPD_ERR_INVALID_ARGUMENT, "dpd_round_config_set_validity");
    /* Bad settings leave the config as it was. */
    CHECK_FAILS(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, 0.0),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "truncation_delta");
    CHECK_FAILS(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, NAN),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "truncation_delta");
    CHECK_FAILS(dpd_round_config_set_validity(config, 7, 1e-9), DPD_ERR_INVALID_ARGUMENT, "kind");
    CHECK_FAILS(dpd_round_config_set_validity(NULL, DPD_VALIDITY_LINF, 1e-9),
                DPD_ERR_NULL_POINTER, "config");
    dpd_validity_info v;
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.kind == DPD_VALIDITY_NONE);

    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_LINF, 1e-9));
    /* The parties of a distributed round and the plain round refuse it (not implemented). */
    dpd_client *client = NULL;
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(1, &rng));
    CHECK_FAILS(dpd_client_new(config, 0, rng, &client), DPD_ERR_INVALID_ARGUMENT,
                "dpd_simulate_round_verified");
    CHECK(client == NULL);
    dpd_rng_free(rng);

    /* Three cheats, T = 2. */
    const uint64_t three[3] = {0, 3, 6};
    CHECK_FAILS(verified_round(config, NULL, 0, three, 3, sum, invalid, &n_invalid, &info, &dt),
                DPD_ERR_TOO_MANY_DROPPED, "(clients 0, 3, 6)");
    /* A dropped client cannot also cheat; ids must be clients of the round. */
    const uint64_t one[1] = {3}, eight[1] = {8};
    CHECK_FAILS(verified_round(config, one, 1, one, 1, sum, invalid, &n_invalid, &info, &dt),
                DPD_ERR_INVALID_ARGUMENT, "both");
    CHECK_FAILS(verified_round(config, NULL, 0, eight, 1, sum, invalid, &n_invalid, &info, &dt),
                DPD_ERR_INVALID_ARGUMENT, "");
    for (size_t j = 0; j < D; j++) CHECK(sum[j] == -7.0);
    CHECK(invalid[0] == 99 && invalid[1] == 99 && n_invalid == 99);
    CHECK(dt == -1.0 && info.n_included == 12345);

    /* The invalid ids' buffer must hold T: a size query answers T before any work. */
    static double inputs[N * D];
    make_inputs(inputs);
    size_t len = 0;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(1, &rng));
    CHECK(dpd_simulate_round_verified(config, inputs, N * D, NULL, 0, rng, sum, D, &len, NULL, 0,
                                      &n_invalid, NULL, NULL) == DPD_ERR_BUFFER_TOO_SMALL);
    CHECK(n_invalid == T);
    dpd_rng_free(rng);

    /* Total δ: ε must be positive, δ and δ_t in [0, 1). */
    double total = -1.0;
    CHECK_FAILS(dpd_verified_total_delta(0.0, 1e-6, 1e-9, &total),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK_FAILS(dpd_verified_total_delta(1.0, 1e-6, -1.0, &total),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "truncation_delta");
    CHECK(total == -1.0);
    dpd_round_config_free(config);
}

/* τ₂, R and δ_t of the L2 mode by hand (python3 with mpmath at 50 digits, the formulas of
 * verified_shares::l2): σ = 0.5/sqrt(5)·2^20 = 234468.72155748194807 units (as above);
 * x = ln(N/δ_t) = ln(8/1e-9) = 22.802707378626247022;
 * τ₂ = ceil(σ·sqrt(d + 2·sqrt(d·x) + 2x)) = ceil(σ·sqrt(4 + 2·sqrt(4x) + 2x))
 *    = ceil(1943493.7791183832212) = 1943494;
 * data_norm 2 → data 2·2^20 = 2097152 units, R = 2097152 + 1943494 = 4040646;
 * δ_t = N·exp(−y²), y = (sqrt(2t − d) − sqrt(d))/2, t = τ₂²/σ²: δ_t = 9.9999354351203662e-10;
 * total δ at ε = 0.5, δ = 1e-6: 1e-6 + (1 + e^0.5)·δ_t = 1.002648704169263e-06. */
static void l2_bound_by_hand(void) {
    dpd_round_config *config = make_config(1);
    dpd_validity_info v;
    CHECK_OK(dpd_round_config_set_validity_l2(config, 2.0, 1e-9));
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.kind == DPD_VALIDITY_L2);
    CHECK(v.truncation_delta_target == 1e-9);
    CHECK(v.data_units == 2097152);
    CHECK(v.slice_units == 1943494);
    CHECK(v.bound_units == 4040646);
    CHECK(fabs(v.truncation_delta - 9.9999354351203662e-10) <= 1e-21);
    CHECK(v.truncation_delta <= 1e-9);
    double total = -1.0;
    CHECK_OK(dpd_verified_total_delta(0.5, 1e-6, v.truncation_delta, &total));
    CHECK(fabs(total - 1.002648704169263e-06) <= 1e-20);

    /* A norm bound off the grid rounds up: 0.3·2^20 = 314572.8 → 314573. */
    CHECK_OK(dpd_round_config_set_validity_l2(config, 0.3, 1e-9));
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.data_units == 314573 && v.bound_units == 314573 + 1943494);
    dpd_round_config_free(config);

    /* Without noise: no slice, δ_t = 0, R = the data's bound. */
    dpd_round_config *exact = make_config(0);
    CHECK_OK(dpd_round_config_set_validity_l2(exact, 2.0, 1e-9));
    CHECK_OK(dpd_round_config_validity_info(exact, &v));
    CHECK(v.kind == DPD_VALIDITY_L2 && v.slice_units == 0 && v.bound_units == 2097152 &&
          v.truncation_delta == 0.0);
    dpd_round_config_free(exact);
}

/* L2: an honest round releases the plain round's sum bit for bit (seed 43 scales no slice: the
 * comparison would fail otherwise); a cheat is left out and named, the release is the honest
 * clients' round. Every row of make_inputs has norm ≤ 1.833 < 2. */
static void l2_rounds(void) {
    dpd_round_config *config = make_config(1);
    CHECK_OK(dpd_round_config_set_validity_l2(config, 2.0, 1e-9));
    const uint64_t dropped[1] = {6}, malicious[1] = {5}, both[2] = {5, 6};
    double plain[D], verified[D], exact[D], dt = -1.0;
    uint64_t invalid[T] = {99, 99};
    size_t n_invalid = 99;
    dpd_release_info plain_info, info;
    plain_round(1, dropped, 1, plain, &plain_info);
    CHECK_OK(verified_round(config, dropped, 1, NULL, 0, verified, invalid, &n_invalid, &info,
                            &dt));
    CHECK(n_invalid == 0);
    CHECK(memcmp(plain, verified, sizeof plain) == 0);
    CHECK(same_info(&plain_info, &info));
    dpd_validity_info v;
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(dt == v.truncation_delta && dt > 0.0);
    /* The noise is there. */
    plain_round(0, dropped, 1, exact, NULL);
    int differs = 0;
    for (size_t j = 0; j < D; j++) differs |= exact[j] != verified[j];
    CHECK(differs);

    /* Client 5 sends shares of its vector plus 10^6·2^21 units in coordinate 0. */
    CHECK_OK(verified_round(config, dropped, 1, malicious, 1, verified, invalid, &n_invalid,
                            &info, NULL));
    CHECK(n_invalid == 1 && invalid[0] == 5 && info.n_included == N - 2);
    plain_round(1, both, 2, plain, &plain_info);
    CHECK(memcmp(plain, verified, sizeof plain) == 0);
    CHECK(same_info(&plain_info, &info));
    /* Three cheats, T = 2: nothing released, the cheats named. */
    const uint64_t three[3] = {1, 4, 7};
    CHECK_FAILS(verified_round(config, NULL, 0, three, 3, verified, invalid, &n_invalid, &info,
                               NULL),
                DPD_ERR_TOO_MANY_DROPPED, "(clients 1, 4, 7)");
    dpd_round_config_free(config);

    dpd_round_config *exact_config = make_config(0);
    CHECK_OK(dpd_round_config_set_validity_l2(exact_config, 2.0, 1e-9));
    exact_round_without_five(exact_config);
    dpd_round_config_free(exact_config);
}

/* L2: a client whose row is longer than the norm bound refuses; the call fails naming it and
 * writes nothing. Bad settings leave the config as it was. */
static void l2_refusals(void) {
    static double inputs[N * D];
    make_inputs(inputs);
    /* Rows halved (norms ≤ 0.92), then client 6's row (0.6, 0.6, 0.6, 0.6): norm 1.2 > 1. */
    for (size_t k = 0; k < N * D; k++) inputs[k] *= 0.5;
    for (size_t j = 0; j < D; j++) inputs[6 * D + j] = 0.6;
    dpd_round_config *config = make_config(1);
    CHECK_OK(dpd_round_config_set_validity_l2(config, 1.0, 1e-9));
    double sum[D] = {-7.0, -7.0, -7.0, -7.0}, dt = -1.0;
    uint64_t invalid[T] = {99, 99};
    size_t len = 99, n_invalid = 99;
    dpd_release_info info;
    info.n_included = 12345;
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(43, &rng));
    CHECK_FAILS(dpd_simulate_round_verified(config, inputs, N * D, NULL, 0, rng, sum, D, &len,
                                            invalid, T, &n_invalid, &info, &dt),
                DPD_ERR_INVALID_ARGUMENT, "client 6: its data's L2 norm 1.2");
    CHECK(strstr(last_error(), "exceeds the round's bound 1") != NULL);
    for (size_t j = 0; j < D; j++) CHECK(sum[j] == -7.0);
    CHECK(len == 99 && n_invalid == 99 && invalid[0] == 99 && invalid[1] == 99);
    CHECK(dt == -1.0 && info.n_included == 12345);
    /* Dropped, it sends nothing: the round of the others runs. */
    const uint64_t six[1] = {6};
    CHECK_OK(dpd_simulate_round_verified(config, inputs, N * D, six, 1, rng, sum, D, &len, invalid,
                                         T, &n_invalid, &info, &dt));
    CHECK(len == D && n_invalid == 0 && info.n_included == N - 1);
    dpd_rng_free(rng);

    dpd_validity_info was, v;
    CHECK_OK(dpd_round_config_validity_info(config, &was));
    CHECK_FAILS(dpd_round_config_set_validity_l2(config, -1.0, 1e-9), DPD_ERR_INVALID_ARGUMENT,
                "data_norm");
    CHECK_FAILS(dpd_round_config_set_validity_l2(config, NAN, 1e-9), DPD_ERR_INVALID_ARGUMENT,
                "data_norm");
    CHECK_FAILS(dpd_round_config_set_validity_l2(config, INFINITY, 1e-9),
                DPD_ERR_INVALID_ARGUMENT, "data_norm");
    CHECK_FAILS(dpd_round_config_set_validity_l2(config, 1.0, 0.0),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "truncation_delta");
    CHECK_FAILS(dpd_round_config_set_validity_l2(config, 1.0, 1.0),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "truncation_delta");
    CHECK_FAILS(dpd_round_config_set_validity(config, DPD_VALIDITY_L2, 1e-9),
                DPD_ERR_INVALID_ARGUMENT, "dpd_round_config_set_validity_l2");
    CHECK_FAILS(dpd_round_config_set_validity_l2(NULL, 1.0, 1e-9), DPD_ERR_NULL_POINTER,
                "config");
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.kind == was.kind && v.data_units == was.data_units &&
          v.bound_units == was.bound_units && v.truncation_delta == was.truncation_delta);
    /* NONE turns it off. */
    CHECK_OK(dpd_round_config_set_validity(config, DPD_VALIDITY_NONE, 0.0));
    CHECK_OK(dpd_round_config_validity_info(config, &v));
    CHECK(v.kind == DPD_VALIDITY_NONE && v.bound_units == 0);
    dpd_round_config_free(config);
}

int main(void) {
    bound_by_hand();
    honest_equals_plain();
    off_again_is_the_plain_round();
    malicious_is_left_out();
    refusals();
    l2_bound_by_hand();
    l2_rounds();
    l2_refusals();
    return check_exit("test_verified");
}
