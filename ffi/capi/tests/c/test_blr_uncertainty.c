/* Uncertainty of a private BLR fit from C: the noise-aware posterior against the naive one (equal
 * without noise, wider with it), interval algebra checked by hand, the posterior from statistics
 * the host released itself (equal to the model's), and the documented errors. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

enum { N = 400, D = 2, DRAWS = 200 };

static double x[N * D], y[N];

static void make_data(void) {
    for (size_t i = 0; i < N; i++) {
        x[2 * i] = fmod(0.6180339887 * (double)(i + 1), 1.0) * 2.0 - 1.0;
        x[2 * i + 1] = fmod(0.7548776662 * (double)(i + 1), 1.0) * 2.0 - 1.0;
        y[i] = 0.8 * x[2 * i] - 0.5 * x[2 * i + 1] + 0.5 * sin(7.0 * (double)i);
    }
}

/* A fit at (epsilon, 1e-5) without projection (statistics at the assumed bounds); `setting`
 * 0 = trusted aggregator, 1 = DCA (M = 3, T = 5), 2 = input perturbation. */
static dpd_blr_model *fit(double epsilon, int setting, dpd_rng *rng) {
    const double assumed_x[D] = {1.0, 1.0};
    dpd_blr_config *config = NULL;
    dpd_blr_model *model = NULL;
    CHECK_OK(dpd_blr_config_new(epsilon, 1e-5, assumed_x, D, 3.0, &config));
    CHECK_OK(dpd_blr_config_set_projection(config, 0));
    if (setting == 1) CHECK_OK(dpd_blr_config_set_distributed(config, 3, 5, DPD_SHARE_MODE_SEED));
    if (setting == 2) CHECK_OK(dpd_blr_config_set_input_perturbation(config));
    CHECK_OK(dpd_blr_fit(x, N * D, y, N, D, config, rng, &model));
    dpd_blr_config_free(config);
    return model;
}

typedef struct {
    double mean[D], sd[D], lower[D], upper[D];
} summaries;

static void coefficients(const dpd_blr_noise_aware *na, double level, summaries *s) {
    size_t len = 0;
    CHECK_OK(dpd_blr_noise_aware_coefficients(na, level, s->mean, s->sd, s->lower, s->upper, D,
                                              &len));
    CHECK(len == D);
}

static void naive(const dpd_blr_model *m, double level, summaries *s) {
    size_t len = 0;
    CHECK_OK(dpd_blr_model_coefficients(m, level, s->mean, s->sd, s->lower, s->upper, D, &len));
    CHECK(len == D);
}

/* As epsilon grows the noise-aware posterior tends to the naive one (the Rust tests check the
 * limit itself, with no noise at all): at epsilon = 100 — the largest budget a caller may ask
 * for — the standard deviations agree within 5%, and the gap is smaller than at epsilon = 1. */
static void test_large_epsilon_approaches_the_naive_posterior(dpd_rng *rng) {
    double gap[2] = {0.0, 0.0};
    const double epsilons[2] = {1.0, 100.0};
    for (int k = 0; k < 2; k++) {
        dpd_blr_model *m = fit(epsilons[k], 0, rng);
        dpd_blr_noise_aware *na = NULL;
        CHECK_OK(dpd_blr_model_noise_aware(m, DRAWS, rng, &na));
        summaries a, b;
        coefficients(na, 0.9, &a);
        naive(m, 0.9, &b);
        for (int j = 0; j < D; j++) gap[k] += fabs(a.sd[j] / b.sd[j] - 1.0);
        if (k == 1) {
            for (int j = 0; j < D; j++) {
                CHECK(fabs(a.sd[j] / b.sd[j] - 1.0) < 0.05);
                CHECK(fabs(a.mean[j] - b.mean[j]) < 0.5 * b.sd[j]);
            }
        }
        /* The naive posterior mean is the model's mean. */
        double mu[D];
        size_t len = 0;
        CHECK_OK(dpd_blr_model_mean(m, mu, D, &len));
        CHECK(mu[0] == b.mean[0] && mu[1] == b.mean[1]);
        dpd_blr_noise_aware_free(na);
        dpd_blr_model_free(m);
    }
    CHECK(gap[1] < gap[0]);
}

/* At epsilon = 0.5 the noise-aware intervals are wider than the naive ones, nested by level, and
 * the naive one is mean +- z_{0.95} sd with z_{0.95} = 1.6448536269514722 (tables). */
static void test_noise_widens_and_interval_algebra(dpd_rng *rng) {
    for (int setting = 0; setting < 3; setting++) {
        dpd_blr_model *m = fit(0.5, setting, rng);
        dpd_blr_noise_aware *na = NULL;
        CHECK_OK(dpd_blr_model_noise_aware(m, DRAWS, rng, &na));
        summaries a90, a50, b90;
        coefficients(na, 0.9, &a90);
        coefficients(na, 0.5, &a50);
        naive(m, 0.9, &b90);
        for (int j = 0; j < D; j++) {
            CHECK(a90.sd[j] > b90.sd[j]);
            CHECK(a90.upper[j] - a90.lower[j] > b90.upper[j] - b90.lower[j]);
            CHECK(a90.lower[j] < a50.lower[j] && a50.lower[j] < a50.mean[j]);
            CHECK(a50.mean[j] < a50.upper[j] && a50.upper[j] < a90.upper[j]);
            CHECK(a50.mean[j] == a90.mean[j] && a50.sd[j] == a90.sd[j]);
            CHECK(fabs(b90.upper[j] - (b90.mean[j] + 1.6448536269514722 * b90.sd[j])) <
                  1e-6 * b90.sd[j]);
            CHECK(fabs(b90.lower[j] - (b90.mean[j] - 1.6448536269514722 * b90.sd[j])) <
                  1e-6 * b90.sd[j]);
        }
        /* Predictions: at the unit rows they are the coefficients; a new observation adds the
         * noise variance 1/lambda = 1 (the prior's default) to every component, so exactly 1 to
         * the variance of the mixture. */
        const double rows[2 * D] = {1.0, 0.0, 0.0, 1.0};
        summaries p, o;
        size_t len = 0;
        CHECK_OK(dpd_blr_noise_aware_predict(na, rows, 2 * D, 0, 0.9, p.mean, p.sd, p.lower,
                                             p.upper, D, &len));
        CHECK(len == 2);
        CHECK_OK(dpd_blr_noise_aware_predict(na, rows, 2 * D, 1, 0.9, o.mean, o.sd, o.lower,
                                             o.upper, D, &len));
        for (int j = 0; j < D; j++) {
            CHECK(fabs(p.mean[j] - a90.mean[j]) < 1e-12 * (1.0 + fabs(a90.mean[j])));
            CHECK(fabs(p.sd[j] - a90.sd[j]) < 1e-12 * a90.sd[j]);
            CHECK(fabs(o.sd[j] * o.sd[j] - p.sd[j] * p.sd[j] - 1.0) < 1e-9);
            CHECK(o.lower[j] < p.lower[j] && p.upper[j] < o.upper[j]);
        }
        size_t d = 0;
        double ess = -1.0;
        CHECK_OK(dpd_blr_noise_aware_info(na, &d, &ess));
        CHECK(d == D && ess >= 1.0 && ess <= 16.0 * DRAWS); /* at most the draws used */
        dpd_blr_noise_aware_free(na);
        dpd_blr_model_free(m);
    }
}

static void test_bad_input(dpd_rng *rng) {
    dpd_blr_model *m = fit(1.0, 0, rng);
    dpd_blr_noise_aware *na = NULL;
    CHECK_FAILS(dpd_blr_model_noise_aware(m, 0, rng, &na), DPD_ERR_INVALID_ARGUMENT, "draws");
    CHECK_FAILS(dpd_blr_model_noise_aware(m, SIZE_MAX, rng, &na), DPD_ERR_OVERFLOW, "draws");
    CHECK_FAILS(dpd_blr_model_noise_aware(NULL, 10, rng, &na), DPD_ERR_NULL_POINTER, "model");
    CHECK_FAILS(dpd_blr_model_noise_aware(m, 10, NULL, &na), DPD_ERR_NULL_POINTER, "rng");
    CHECK_FAILS(dpd_blr_model_noise_aware(m, 10, rng, NULL), DPD_ERR_NULL_POINTER, "out");
    CHECK(na == NULL);
    CHECK_OK(dpd_blr_model_noise_aware(m, 50, rng, &na));

    summaries s = {{7, 7}, {7, 7}, {7, 7}, {7, 7}};
    size_t len = 0;
    CHECK_FAILS(dpd_blr_noise_aware_coefficients(na, 0.9, NULL, NULL, NULL, NULL, 0, &len),
                DPD_ERR_BUFFER_TOO_SMALL, "needs 2");
    CHECK(len == D);
    CHECK_FAILS(dpd_blr_noise_aware_coefficients(na, 0.9, s.mean, s.sd, s.lower, s.upper, 1, &len),
                DPD_ERR_BUFFER_TOO_SMALL, "");
    CHECK_FAILS(dpd_blr_noise_aware_coefficients(na, 0.9, s.mean, NULL, s.lower, s.upper, D, &len),
                DPD_ERR_NULL_POINTER, "out_sd");
    CHECK_FAILS(dpd_blr_noise_aware_coefficients(na, 1.0, s.mean, s.sd, s.lower, s.upper, D, &len),
                DPD_ERR_INVALID_ARGUMENT, "credible level");
    CHECK_FAILS(dpd_blr_noise_aware_coefficients(na, NAN, s.mean, s.sd, s.lower, s.upper, D, &len),
                DPD_ERR_NON_FINITE, "credible level");
    CHECK_FAILS(dpd_blr_noise_aware_coefficients(na, 0.9, s.mean, s.sd, s.lower, s.upper, D, NULL),
                DPD_ERR_NULL_POINTER, "out_len");
    CHECK_FAILS(dpd_blr_model_coefficients(m, 0.0, s.mean, s.sd, s.lower, s.upper, D, &len),
                DPD_ERR_INVALID_ARGUMENT, "credible level");
    CHECK(s.mean[0] == 7 && s.sd[1] == 7 && s.lower[0] == 7 && s.upper[1] == 7);

    const double rows[3] = {1.0, 0.0, 0.5};
    CHECK_FAILS(dpd_blr_noise_aware_predict(na, rows, 3, 0, 0.9, s.mean, s.sd, s.lower, s.upper,
                                            D, &len),
                DPD_ERR_LENGTH_MISMATCH, "multiple");
    CHECK_FAILS(dpd_blr_noise_aware_predict(na, rows, 2, 2, 0.9, s.mean, s.sd, s.lower, s.upper,
                                            D, &len),
                DPD_ERR_INVALID_ARGUMENT, "observation");
    CHECK_FAILS(dpd_blr_noise_aware_predict(na, rows, 2, 0, 0.9, NULL, NULL, NULL, NULL, 0, &len),
                DPD_ERR_BUFFER_TOO_SMALL, "");
    CHECK(len == 1);
    const double bad[2] = {NAN, 0.0};
    CHECK_FAILS(dpd_blr_noise_aware_predict(na, bad, 2, 0, 0.9, s.mean, s.sd, s.lower, s.upper,
                                            D, &len),
                DPD_ERR_NON_FINITE, "");
    CHECK(s.mean[0] == 7);
    CHECK_FAILS(dpd_blr_noise_aware_info(NULL, NULL, NULL), DPD_ERR_NULL_POINTER, "posterior");
    dpd_blr_noise_aware_free(na);
    dpd_blr_noise_aware_free(NULL);
    dpd_blr_model_free(m);
}

/* The model's released statistics, bounds and noise, as a host with its own rounds has them. */
typedef struct {
    double stats[D * (D + 1) / 2 + D];
    size_t len;
    double bounds[D];
    dpd_blr_stats_noise noise;
} release;

static void release_of(const dpd_blr_model *m, release *r) {
    size_t len = 0;
    CHECK_OK(dpd_blr_model_stats(m, r->stats, sizeof r->stats / sizeof r->stats[0], &r->len));
    CHECK(r->len == D * (D + 1) / 2 + D);
    CHECK_OK(dpd_blr_model_bounds(m, r->bounds, D, &len, NULL));
    CHECK(len == D);
    CHECK_OK(dpd_blr_model_stats_noise(m, &r->noise));
}

static dpd_status from_stats(const release *r, uint64_t seed, dpd_blr_noise_aware **out) {
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(seed, &rng));
    dpd_status s = dpd_blr_noise_aware_from_stats(r->stats, r->len, N, D, 0, &r->noise, r->bounds,
                                                  D, NULL, 0, DPD_BLR_DOF_FROM_RELEASE, 1.0, 1.0,
                                                  DRAWS, rng, out);
    dpd_rng_free(rng);
    return s;
}

/* A host that released the statistics itself gets exactly the model's posterior: same released
 * vector, bounds, noise, default priors and rng state → the same numbers to the bit, for each
 * aggregation. The described noise is Gaussian on both blocks, and DCA's is the trusted one
 * times sqrt(N / (N - T - 1)) = sqrt(400 / 394) (hand value). */
static void test_from_stats_equals_the_model_path(void) {
    double trusted_sd = 0.0;
    for (int setting = 0; setting < 3; setting++) {
        dpd_rng *fit_rng = NULL, *rng = NULL;
        CHECK_OK(dpd_rng_new_insecure_fixed_seed(31, &fit_rng));
        dpd_blr_model *m = fit(0.5, setting, fit_rng);
        release r;
        release_of(m, &r);
        CHECK(r.noise.xx_kind == DPD_NOISE_GAUSSIAN && r.noise.xy_kind == DPD_NOISE_GAUSSIAN);
        CHECK(r.noise.xx == r.noise.xy && r.noise.xx > 0.0);
        if (setting == 0) trusted_sd = r.noise.xx;
        if (setting == 1) CHECK(fabs(r.noise.xx / trusted_sd - sqrt(400.0 / 394.0)) < 1e-12);
        if (setting == 2) CHECK(fabs(r.noise.xx / trusted_sd - sqrt(400.0)) < 1e-9);

        dpd_blr_noise_aware *from_model = NULL, *from_host = NULL;
        CHECK_OK(dpd_rng_new_insecure_fixed_seed(77, &rng));
        CHECK_OK(dpd_blr_model_noise_aware(m, DRAWS, rng, &from_model));
        CHECK_OK(from_stats(&r, 77, &from_host));
        summaries a, b;
        coefficients(from_model, 0.9, &a);
        coefficients(from_host, 0.9, &b);
        for (int j = 0; j < D; j++) {
            CHECK(a.mean[j] == b.mean[j] && a.sd[j] == b.sd[j]);
            CHECK(a.lower[j] == b.lower[j] && a.upper[j] == b.upper[j]);
        }
        double ess_a = 0.0, ess_b = 0.0;
        CHECK_OK(dpd_blr_noise_aware_info(from_model, NULL, &ess_a));
        CHECK_OK(dpd_blr_noise_aware_info(from_host, NULL, &ess_b));
        CHECK(ess_a == ess_b);
        /* Another seed draws other latent matrices: not the same numbers. */
        dpd_blr_noise_aware *other = NULL;
        CHECK_OK(from_stats(&r, 78, &other));
        summaries c;
        coefficients(other, 0.9, &c);
        CHECK(c.sd[0] != b.sd[0]);
        dpd_blr_noise_aware_free(other);
        dpd_blr_noise_aware_free(from_host);
        dpd_blr_noise_aware_free(from_model);
        dpd_blr_model_free(m);
        dpd_rng_free(rng);
        dpd_rng_free(fit_rng);
    }
}

/* Every bad input is refused with its status, creates nothing, and leaves the rng where it was
 * (the next good call gives what a fresh generator of the same seed gives). */
static void test_from_stats_bad_input(void) {
    dpd_rng *fit_rng = NULL, *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(41, &fit_rng));
    dpd_blr_model *m = fit(1.0, 0, fit_rng);
    release r;
    release_of(m, &r);
    const size_t P = r.len;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(5, &rng));
    dpd_blr_noise_aware *na = NULL;
#define FROM(stats, len, noise, bounds, blen, moments, mlen, draws, g, out)                    \
    dpd_blr_noise_aware_from_stats(stats, len, N, D, 0, noise, bounds, blen, moments, mlen,      \
                                   DPD_BLR_DOF_FROM_RELEASE, 1.0, 1.0, draws, g, out)
    const dpd_blr_stats_noise *z = &r.noise;
    CHECK_FAILS(FROM(NULL, P, z, r.bounds, D, NULL, 0, 20, rng, &na), DPD_ERR_NULL_POINTER,
                "stats");
    CHECK_FAILS(FROM(r.stats, P - 1, z, r.bounds, D, NULL, 0, 20, rng, &na),
                DPD_ERR_LENGTH_MISMATCH, "statistics");
    CHECK_FAILS(FROM(r.stats, P, NULL, r.bounds, D, NULL, 0, 20, rng, &na),
                DPD_ERR_NULL_POINTER, "noise");
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D - 1, NULL, 0, 20, rng, &na),
                DPD_ERR_LENGTH_MISMATCH, "bounds_x");
    CHECK_FAILS(FROM(r.stats, P, z, NULL, 0, NULL, 0, 20, rng, &na),
                DPD_ERR_INVALID_ARGUMENT, "second moments");
    const double moments_nan[D] = {0.3, NAN}, moments_short[1] = {0.3};
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D, moments_nan, D, 20, rng, &na),
                DPD_ERR_NON_FINITE, "second_moments");
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D, moments_short, 1, 20, rng, &na),
                DPD_ERR_LENGTH_MISMATCH, "second_moments");
    CHECK_FAILS(dpd_blr_noise_aware_from_stats(r.stats, P, N, D, 0, z, r.bounds, D, NULL, 0, -1.0,
                                               1.0, 1.0, 20, rng, &na),
                DPD_ERR_INVALID_ARGUMENT, "dof");
    CHECK_FAILS(dpd_blr_noise_aware_from_stats(r.stats, P, N, D, 0, z, r.bounds, D, NULL, 0, NAN,
                                               1.0, 1.0, 20, rng, &na),
                DPD_ERR_NON_FINITE, "dof");
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D, NULL, 0, 0, rng, &na),
                DPD_ERR_INVALID_ARGUMENT, "draws");
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D, NULL, 0, SIZE_MAX, rng, &na),
                DPD_ERR_OVERFLOW, "draws");
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D, NULL, 0, 20, NULL, &na),
                DPD_ERR_NULL_POINTER, "rng");
    CHECK_FAILS(FROM(r.stats, P, z, r.bounds, D, NULL, 0, 20, rng, NULL),
                DPD_ERR_NULL_POINTER, "out");
    double stats_nan[D * (D + 1) / 2 + D];
    memcpy(stats_nan, r.stats, sizeof stats_nan);
    stats_nan[1] = NAN;
    CHECK_FAILS(FROM(stats_nan, P, z, r.bounds, D, NULL, 0, 20, rng, &na),
                DPD_ERR_NON_FINITE, "statistics");
    const double bounds_nan[D] = {1.0, NAN};
    CHECK_FAILS(FROM(r.stats, P, z, bounds_nan, D, NULL, 0, 20, rng, &na),
                DPD_ERR_NON_FINITE, "bounds_x");
    dpd_blr_stats_noise bad = r.noise;
    bad.xx_kind = 7;
    CHECK_FAILS(FROM(r.stats, P, &bad, r.bounds, D, NULL, 0, 20, rng, &na),
                DPD_ERR_INVALID_ARGUMENT, "xx_kind");
    bad = r.noise;
    bad.xy = -1.0;
    CHECK_FAILS(FROM(r.stats, P, &bad, r.bounds, D, NULL, 0, 20, rng, &na),
                DPD_ERR_INVALID_ARGUMENT, "noise sd");
    bad = r.noise;
    bad.xx = NAN;
    CHECK_FAILS(FROM(r.stats, P, &bad, r.bounds, D, NULL, 0, 20, rng, &na),
                DPD_ERR_NON_FINITE, "noise sd");
    CHECK_FAILS(dpd_blr_noise_aware_from_stats(r.stats, P, N, D, 2, z, r.bounds, D, NULL, 0,
                                               DPD_BLR_DOF_FROM_RELEASE, 1.0, 1.0, 20, rng, &na),
                DPD_ERR_INVALID_ARGUMENT, "with_yy");
    CHECK_FAILS(dpd_blr_noise_aware_from_stats(r.stats, P, N, D, 0, z, r.bounds, D, NULL, 0,
                                               DPD_BLR_DOF_FROM_RELEASE, NAN, 1.0, 20, rng, &na),
                DPD_ERR_NON_FINITE, "");
    CHECK_FAILS(dpd_blr_model_stats_noise(NULL, &bad), DPD_ERR_NULL_POINTER, "model");
    CHECK_FAILS(dpd_blr_model_stats_noise(m, NULL), DPD_ERR_NULL_POINTER, "out");
    CHECK(na == NULL);

    /* The failures consumed nothing: the rng's next draw is a fresh seed-5 generator's first. */
    dpd_blr_noise_aware *after = NULL, *fresh = NULL;
    CHECK_OK(FROM(r.stats, P, z, r.bounds, D, NULL, 0, 20, rng, &after));
    dpd_rng *again = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(5, &again));
    CHECK_OK(FROM(r.stats, P, z, r.bounds, D, NULL, 0, 20, again, &fresh));
#undef FROM
    summaries a, b;
    coefficients(after, 0.9, &a);
    coefficients(fresh, 0.9, &b);
    CHECK(a.mean[0] == b.mean[0] && a.sd[1] == b.sd[1]);
    dpd_blr_noise_aware_free(after);
    dpd_blr_noise_aware_free(fresh);
    dpd_rng_free(again);
    dpd_rng_free(rng);
    dpd_rng_free(fit_rng);
    dpd_blr_model_free(m);
}

int main(void) {
    make_data();
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(21, &rng));
    test_large_epsilon_approaches_the_naive_posterior(rng);
    test_noise_widens_and_interval_algebra(rng);
    test_bad_input(rng);
    test_from_stats_equals_the_model_path();
    test_from_stats_bad_input();
    dpd_rng_free(rng);
    return check_exit("test_blr_uncertainty");
}
