/* Iterative private learning over DCA from C: Rényi-DP accounting against published figures,
 * calibration, training that reaches optima computed here independently (Newton's method, with
 * and without an intercept, the
 * closed-form variational posterior), the budget refusal and every documented bad input. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 50, D = 2 };

/* Deterministic data in [-1, 1]^2 (no RNG needed): a low-discrepancy pattern. */
static void make_x(double *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        x[2 * i] = fmod(0.6180339887 * (double)(i + 1), 1.0) * 2.0 - 1.0;
        x[2 * i + 1] = fmod(0.7548776662 * (double)(i + 1), 1.0) * 2.0 - 1.0;
    }
}

static int close_rel(double a, double b, double tol) { return fabs(a - b) <= tol * fabs(b); }

/* Published RDP figures (TF Privacy / dp_accounting tests, recorded in dp-noise's tests with
 * their source) through the C ABI. */
static void test_rdp_accountant(void) {
    double eps = 0.0, order = 0.0, z = 0.0;
    /* compute_dp_sgd_privacy_statement: 5 unsampled steps at z = 1, delta = 1e-6 -> 13.376;
     * Poisson q = 64/10000, 782 steps -> 1.616 (3 decimals). */
    CHECK_OK(dpd_rdp_epsilon(1.0, 1.0, 5, 1e-6, DPD_SAMPLING_POISSON, &eps, &order));
    CHECK(fabs(eps - 13.376) < 5e-4);
    CHECK_OK(dpd_rdp_epsilon(64.0 / 10000.0, 1.0, 782, 1e-6, DPD_SAMPLING_POISSON, &eps, NULL));
    CHECK(fabs(eps - 1.616) < 5e-4);
    /* compute_dp_sgd_example_privacy: no sampling, z = 0.7, 2 steps, delta = 1e-5 -> 10.8602036. */
    CHECK_OK(dpd_rdp_epsilon(1.0, 0.7, 2, 1e-5, DPD_SAMPLING_POISSON, &eps, NULL));
    CHECK(fabs(eps - 10.8602036) < 5e-8);
    /* Test0 of compute_dp_sgd_privacy inverted: eps 0.7242234026109595 at q = 0.0025, 6000
     * steps, delta = 1e-5 is met by z = 1.3 and by no smaller z. */
    CHECK_OK(dpd_rdp_noise_multiplier(0.7242234026109595, 1e-5, 6000, 0.0025,
                                      DPD_SAMPLING_POISSON, &z));
    CHECK(close_rel(z, 1.3, 2e-9));
    /* The calibrated z meets its target, and a slightly smaller one does not (both samplings). */
    for (uint32_t kind = 0; kind < 2; kind++) {
        CHECK_OK(dpd_rdp_noise_multiplier(1.0, 1e-5, 100, 0.05, kind, &z));
        CHECK_OK(dpd_rdp_epsilon(0.05, z, 100, 1e-5, kind, &eps, NULL));
        CHECK(eps <= 1.0);
        CHECK_OK(dpd_rdp_epsilon(0.05, z * (1.0 - 1e-6), 100, 1e-5, kind, &eps, NULL));
        CHECK(eps > 1.0);
    }
    /* Fixed-size batches (replace-one) cost more than Poisson (add/remove-one) at equal q. */
    double poisson = 0.0, fixed = 0.0;
    CHECK_OK(dpd_rdp_epsilon(0.05, 1.0, 100, 1e-5, DPD_SAMPLING_POISSON, &poisson, NULL));
    CHECK_OK(dpd_rdp_epsilon(0.05, 1.0, 100, 1e-5, DPD_SAMPLING_WITHOUT_REPLACEMENT, &fixed, NULL));
    CHECK(fixed > poisson);

    z = -7.0;
    CHECK_FAILS(dpd_rdp_epsilon(0.0, 1.0, 5, 1e-5, 0, &eps, NULL), DPD_ERR_INVALID_ARGUMENT, "q");
    CHECK_FAILS(dpd_rdp_epsilon(NAN, 1.0, 5, 1e-5, 0, &eps, NULL), DPD_ERR_NON_FINITE, "q");
    CHECK_FAILS(dpd_rdp_epsilon(0.1, 1.0, 0, 1e-5, 0, &eps, NULL), DPD_ERR_INVALID_ARGUMENT,
                "steps");
    CHECK_FAILS(dpd_rdp_epsilon(0.1, 1.0, 5, 1e-5, 2, &eps, NULL), DPD_ERR_INVALID_ARGUMENT,
                "DPD_SAMPLING_POISSON");
    CHECK_FAILS(dpd_rdp_epsilon(0.1, -1.0, 5, 1e-5, 0, &eps, NULL), DPD_ERR_INVALID_ARGUMENT, "");
    CHECK_FAILS(dpd_rdp_epsilon(0.1, 1.0, 5, 1e-5, 0, NULL, NULL), DPD_ERR_NULL_POINTER,
                "out_epsilon");
    CHECK_FAILS(dpd_rdp_noise_multiplier(0.0, 1e-5, 10, 0.1, 0, &z),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK_FAILS(dpd_rdp_noise_multiplier(1.0, 0.0, 10, 0.1, 0, &z),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "delta");
    CHECK_FAILS(dpd_rdp_noise_multiplier(1.0, 0.5, 10, 0.1, 0, &z),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "0.01");
    CHECK_FAILS(dpd_rdp_epsilon(0.1, 1.0, 5, 0.5, 0, &z, NULL),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "delta");
    CHECK_FAILS(dpd_rdp_noise_multiplier(1.0, 1e-5, 10, 1.5, 0, &z), DPD_ERR_INVALID_ARGUMENT,
                "q");
    CHECK(z == -7.0);
}

/* argmin of (1/n) sum log(1 + exp(-y w.x)) + (l2/2)|w|^2 by Newton's method (d = 2). */
static void logistic_newton(const double *x, const double *y, size_t n, double l2, double w[2]) {
    w[0] = w[1] = 0.0;
    for (int it = 0; it < 50; it++) {
        double g[2] = {l2 * w[0], l2 * w[1]};
        double h[3] = {l2, 0.0, l2}; /* h00, h01, h11 */
        for (size_t i = 0; i < n; i++) {
            double s = y[i] > 0 ? 1.0 : -1.0;
            double m = s * (w[0] * x[2 * i] + w[1] * x[2 * i + 1]);
            double p = 1.0 / (1.0 + exp(m)); /* sigma(-m) */
            g[0] -= s * p * x[2 * i] / (double)n;
            g[1] -= s * p * x[2 * i + 1] / (double)n;
            double c = p * (1.0 - p) / (double)n;
            h[0] += c * x[2 * i] * x[2 * i];
            h[1] += c * x[2 * i] * x[2 * i + 1];
            h[2] += c * x[2 * i + 1] * x[2 * i + 1];
        }
        double det = h[0] * h[2] - h[1] * h[1];
        w[0] -= (h[2] * g[0] - h[1] * g[1]) / det;
        w[1] -= (-h[1] * g[0] + h[0] * g[1]) / det;
    }
}

/* Non-private (epsilon = infinity) full-batch SGD reaches the optimum computed above. */
static void test_logistic_converges_to_optimum(void) {
    double x[N * D], y[N];
    make_x(x, N);
    for (size_t i = 0; i < N; i++) y[i] = (x[2 * i] - 0.5 * x[2 * i + 1] + 0.3 * sin((double)i)) > 0;
    double want[2];
    logistic_newton(x, y, N, 0.1, want);

    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(11, &rng));
    CHECK_OK(dpd_iterative_config_new_logistic(0.1, &cfg));
    CHECK_OK(dpd_iterative_config_set_poisson(cfg, 1.0));
    CHECK_OK(dpd_iterative_config_set_sgd(cfg, 1.0));
    /* The privacy must be chosen first. */
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, N, D, rng, &tr), DPD_ERR_INVALID_STATE,
                "dpd_iterative_config_set_private");
    CHECK(tr == NULL);
    CHECK_OK(dpd_iterative_config_set_non_private(cfg));
    CHECK_OK(dpd_iterative_trainer_new(cfg, N, D, rng, &tr));
    uint64_t done = 0;
    CHECK_OK(dpd_iterative_trainer_fit(tr, x, N * D, y, N, 300, &done));
    CHECK(done == 300);
    double w[2];
    size_t len = 0;
    CHECK_OK(dpd_iterative_trainer_params(tr, w, 2, &len));
    CHECK(len == 2);
    CHECK(fabs(w[0] - want[0]) < 1e-6 && fabs(w[1] - want[1]) < 1e-6);
    double eps = 0.0, delta = 1.0;
    CHECK_OK(dpd_iterative_trainer_spent(tr, &eps, &delta));
    CHECK(isinf(eps) && delta == 0.0);

    /* Predictions: sigma(w.x), size query first. */
    double p[N];
    len = 0;
    CHECK_FAILS(dpd_iterative_trainer_predict(tr, x, N * D, NULL, 0, &len),
                DPD_ERR_BUFFER_TOO_SMALL, "needs 50");
    CHECK(len == N);
    CHECK_OK(dpd_iterative_trainer_predict(tr, x, N * D, p, N, &len));
    for (size_t i = 0; i < N; i++) {
        double m = w[0] * x[2 * i] + w[1] * x[2 * i + 1];
        CHECK(fabs(p[i] - 1.0 / (1.0 + exp(-m))) < 1e-12);
    }
    CHECK_FAILS(dpd_iterative_trainer_predict(tr, x, 3, p, N, &len), DPD_ERR_LENGTH_MISMATCH,
                "multiple");
    uint64_t iters = 0;
    size_t dim = 0, n_params = 0;
    double z = -1.0;
    CHECK_OK(dpd_iterative_trainer_info(tr, &iters, &dim, &n_params, &z));
    CHECK(iters == 300 && dim == 2 && n_params == 2 && z == 0.0);

    /* Bad records leave the trainer alone. */
    double y_bad[N];
    for (size_t i = 0; i < N; i++) y_bad[i] = y[i];
    y_bad[3] = 0.5;
    CHECK_FAILS(dpd_iterative_trainer_step(tr, x, N * D, y_bad, N, NULL, 0, NULL),
                DPD_ERR_INVALID_ARGUMENT, "label");
    CHECK_FAILS(dpd_iterative_trainer_step(tr, x, N * D - 2, y, N - 1, NULL, 0, NULL),
                DPD_ERR_LENGTH_MISMATCH, "records");
    CHECK_FAILS(dpd_iterative_trainer_step(tr, x, N * D, y, N - 1, NULL, 0, NULL),
                DPD_ERR_LENGTH_MISMATCH, "n·d");
    x[5] = NAN;
    CHECK_FAILS(dpd_iterative_trainer_step(tr, x, N * D, y, N, NULL, 0, NULL), DPD_ERR_NON_FINITE,
                "features");
    CHECK_OK(dpd_iterative_trainer_info(tr, &iters, NULL, NULL, NULL));
    CHECK(iters == 300);

    dpd_iterative_trainer_free(tr);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

/* Sum over all N clients of the logistic-loss gradient at w (labels 0/1 read as -1/+1):
 * -y x / (1 + exp(y w.x)). */
static void gradient_sum(const double *x, const double *y, size_t n, const double w[2],
                         double out[2]) {
    out[0] = out[1] = 0.0;
    for (size_t i = 0; i < n; i++) {
        double s = y[i] > 0.5 ? 1.0 : -1.0;
        double g = -s / (1.0 + exp(s * (w[0] * x[2 * i] + w[1] * x[2 * i + 1])));
        out[0] += g * x[2 * i];
        out[1] += g * x[2 * i + 1];
    }
}

/* The last iteration's released sum, read back through the C ABI: without noise and with every
 * client sampled it is the gradient sum at the parameters the iteration started from, computed
 * here independently (up to the fixed-point grid). */
static void test_last_release_is_the_gradient_sum(void) {
    double x[N * D], y[N];
    make_x(x, N);
    for (size_t i = 0; i < N; i++) y[i] = (x[2 * i] + 0.25 * x[2 * i + 1]) > 0.1;
    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(5, &rng));
    CHECK_OK(dpd_iterative_config_new_logistic(0.1, &cfg));
    CHECK_OK(dpd_iterative_config_set_poisson(cfg, 1.0));
    CHECK_OK(dpd_iterative_config_set_sgd(cfg, 0.5));
    CHECK_OK(dpd_iterative_config_set_non_private(cfg));
    CHECK_OK(dpd_iterative_trainer_new(cfg, N, D, rng, &tr));

    double released[2] = {-7.0, -7.0}, want[2], w[2] = {0.0, 0.0};
    size_t len = 99;
    CHECK_OK(dpd_iterative_trainer_last_release(tr, released, 2, &len));
    CHECK(len == 0 && released[0] == -7.0);
    for (int step = 0; step < 3; step++) {
        gradient_sum(x, y, N, w, want);
        CHECK_OK(dpd_iterative_trainer_step(tr, x, N * D, y, N, NULL, 0, NULL));
        len = 0;
        CHECK_FAILS(dpd_iterative_trainer_last_release(tr, NULL, 0, &len),
                    DPD_ERR_BUFFER_TOO_SMALL, "needs 2");
        CHECK(len == 2);
        CHECK_OK(dpd_iterative_trainer_last_release(tr, released, 2, &len));
        CHECK(fabs(released[0] - want[0]) < 1e-9 && fabs(released[1] - want[1]) < 1e-9);
        CHECK_OK(dpd_iterative_trainer_params(tr, w, 2, &len));
    }
    CHECK(w[0] != 0.0);
    CHECK_FAILS(dpd_iterative_trainer_last_release(NULL, released, 2, &len),
                DPD_ERR_NULL_POINTER, "trainer");
    CHECK_FAILS(dpd_iterative_trainer_last_release(tr, released, 2, NULL), DPD_ERR_NULL_POINTER,
                "out_len");
    dpd_iterative_trainer_free(tr);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

/* DP-VI BLR without noise reaches the exact mean-field optimum: m = (lambda X'X + lambda0 I)^-1
 * lambda X'y, s_j^2 = 1 / (lambda sum_i x_ij^2 + lambda0). */
static void test_blr_vi_converges_to_closed_form(void) {
    const double lambda = 2.0, lambda0 = 0.5;
    double x[N * D], y[N];
    make_x(x, N);
    for (size_t i = 0; i < N; i++) y[i] = 0.8 * x[2 * i] - 1.1 * x[2 * i + 1] + 0.2 * cos((double)i);
    double a00 = lambda0, a01 = 0.0, a11 = lambda0, b0 = 0.0, b1 = 0.0;
    for (size_t i = 0; i < N; i++) {
        a00 += lambda * x[2 * i] * x[2 * i];
        a01 += lambda * x[2 * i] * x[2 * i + 1];
        a11 += lambda * x[2 * i + 1] * x[2 * i + 1];
        b0 += lambda * x[2 * i] * y[i];
        b1 += lambda * x[2 * i + 1] * y[i];
    }
    double det = a00 * a11 - a01 * a01;
    double m_want[2] = {(a11 * b0 - a01 * b1) / det, (-a01 * b0 + a00 * b1) / det};
    double ln_s_want[2] = {-0.5 * log(a00), -0.5 * log(a11)};

    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(12, &rng));
    CHECK_FAILS(dpd_iterative_config_new_blr_vi(0.0, 1.0, &cfg), DPD_ERR_INVALID_ARGUMENT,
                "noise_precision");
    CHECK(cfg == NULL);
    CHECK_OK(dpd_iterative_config_new_blr_vi(lambda, lambda0, &cfg));
    CHECK_OK(dpd_iterative_config_set_poisson(cfg, 1.0));
    CHECK_OK(dpd_iterative_config_set_sgd(cfg, 0.5));
    CHECK_OK(dpd_iterative_config_set_non_private(cfg));
    CHECK_OK(dpd_iterative_trainer_new(cfg, N, D, rng, &tr));
    uint64_t done = 0;
    CHECK_OK(dpd_iterative_trainer_fit(tr, x, N * D, y, N, 3000, &done));
    CHECK(done == 3000);
    double theta[4];
    size_t len = 0;
    CHECK_FAILS(dpd_iterative_trainer_params(tr, theta, 2, &len), DPD_ERR_BUFFER_TOO_SMALL, "");
    CHECK(len == 4);
    CHECK_OK(dpd_iterative_trainer_params(tr, theta, 4, &len));
    CHECK(fabs(theta[0] - m_want[0]) < 1e-6 && fabs(theta[1] - m_want[1]) < 1e-6);
    CHECK(fabs(theta[2] - ln_s_want[0]) < 1e-6 && fabs(theta[3] - ln_s_want[1]) < 1e-6);
    double pred[1], row[2] = {0.3, -0.4};
    CHECK_OK(dpd_iterative_trainer_predict(tr, row, 2, pred, 1, &len));
    CHECK(len == 1 && fabs(pred[0] - (0.3 * theta[0] - 0.4 * theta[1])) < 1e-12);
    size_t n_params = 0;
    CHECK_OK(dpd_iterative_trainer_info(tr, NULL, NULL, &n_params, NULL));
    CHECK(n_params == 4);
    dpd_iterative_trainer_free(tr);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

/* A private run calibrated for K iterations runs exactly K, spends the budget, then is refused
 * without changing anything. */
static void test_private_run_spends_exactly_the_budget(void) {
    enum { NP = 200, K = 20 };
    static double x[NP * D], y[NP];
    make_x(x, NP);
    for (size_t i = 0; i < NP; i++) y[i] = x[2 * i] + x[2 * i + 1] > 0 ? 1.0 : -1.0;
    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(13, &rng));
    CHECK_OK(dpd_iterative_config_new_logistic(0.01, &cfg));
    CHECK_OK(dpd_iterative_config_set_poisson(cfg, 0.2));
    CHECK_OK(dpd_iterative_config_set_adam(cfg, 0.05, 0.9, 0.999, 1e-8));
    CHECK_OK(dpd_iterative_config_set_clip_norm(cfg, 1.5));
    CHECK_OK(dpd_iterative_config_set_dca(cfg, 3, 2));
    double z = 0.0;
    CHECK_OK(dpd_iterative_calibrate_noise_multiplier(cfg, NP, D, 2.0, 1e-5, K, &z));
    CHECK(z > 0.5 && z < 20.0);
    CHECK_OK(dpd_iterative_config_set_private(cfg, 2.0, 1e-5, z));
    CHECK_OK(dpd_iterative_trainer_new(cfg, NP, D, rng, &tr));
    double eps = -1.0, delta = -1.0;
    CHECK_OK(dpd_iterative_trainer_spent(tr, &eps, &delta));
    CHECK(eps == 0.0 && delta == 1e-5);

    /* One step by hand: every client is in the round; sigma released = sigma_client sqrt(N) with
     * sigma_client = z C / sqrt(N - T - 1). Dropping client 7 leaves N - 1 shares. */
    dpd_iterative_step_info info;
    size_t dropped[3] = {7, 8, 9};
    CHECK_FAILS(dpd_iterative_trainer_step(tr, x, NP * D, y, NP, dropped, 3, &info),
                DPD_ERR_TOO_MANY_DROPPED, "tolerates at most 2");
    CHECK_OK(dpd_iterative_trainer_spent(tr, &eps, NULL));
    CHECK(eps == 0.0);
    CHECK_OK(dpd_iterative_trainer_step(tr, x, NP * D, y, NP, dropped, 1, &info));
    CHECK(info.iteration == 0 && info.n_included == NP - 1);
    CHECK(close_rel(info.noise_sigma_released, z * 1.5 * sqrt((NP - 1.0) / (NP - 3.0)), 1e-9));
    CHECK(info.epsilon_spent > 0.0 && info.epsilon_spent < 2.0 && info.delta_spent == 1e-5);

    uint64_t done = 0;
    CHECK_OK(dpd_iterative_trainer_fit(tr, x, NP * D, y, NP, 1000, &done));
    CHECK(done == K - 1);
    CHECK_OK(dpd_iterative_trainer_spent(tr, &eps, &delta));
    CHECK(eps <= 2.0 && eps > 2.0 * (1.0 - 1e-6) && delta == 1e-5);

    double before[2], after[2];
    size_t len = 0;
    CHECK_OK(dpd_iterative_trainer_params(tr, before, 2, &len));
    CHECK_FAILS(dpd_iterative_trainer_step(tr, x, NP * D, y, NP, NULL, 0, &info),
                DPD_ERR_BUDGET_EXCEEDED, "nothing was released");
    CHECK_OK(dpd_iterative_trainer_params(tr, after, 2, &len));
    CHECK(before[0] == after[0] && before[1] == after[1]);
    double eps2 = 0.0;
    uint64_t iters = 0;
    CHECK_OK(dpd_iterative_trainer_spent(tr, &eps2, NULL));
    CHECK_OK(dpd_iterative_trainer_info(tr, &iters, NULL, NULL, NULL));
    CHECK(eps2 == eps && iters == K);
    /* fit at the budget: 0 iterations, successfully. */
    CHECK_OK(dpd_iterative_trainer_fit(tr, x, NP * D, y, NP, 5, &done));
    CHECK(done == 0);
    /* Whatever the noise did, the model separates this data better than chance. */
    double p[NP];
    CHECK_OK(dpd_iterative_trainer_predict(tr, x, NP * D, p, NP, &len));
    size_t right = 0;
    for (size_t i = 0; i < NP; i++) right += (p[i] > 0.5) == (y[i] > 0);
    CHECK(right > NP / 2);

    dpd_iterative_trainer_free(tr);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

/* argmin over (w, b) of (1/n) sum log(1 + exp(-y (w.x + b))) + (l2/2)|w|^2 (b not penalised) by
   Newton's method on the 3 unknowns (d = 2), the 3x3 system solved by Cramer's rule. */
static void logistic_intercept_newton(const double *x, const double *y, size_t n, double l2,
                                      double theta[3]) {
    theta[0] = theta[1] = theta[2] = 0.0;
    for (int it = 0; it < 50; it++) {
        double g[3] = {l2 * theta[0], l2 * theta[1], 0.0};
        double h[3][3] = {{l2, 0.0, 0.0}, {0.0, l2, 0.0}, {0.0, 0.0, 0.0}};
        for (size_t i = 0; i < n; i++) {
            const double z[3] = {x[2 * i], x[2 * i + 1], 1.0};
            double s = y[i] > 0 ? 1.0 : -1.0;
            double m = s * (theta[0] * z[0] + theta[1] * z[1] + theta[2]);
            double p = 1.0 / (1.0 + exp(m)); /* sigma(-m) */
            double c = p * (1.0 - p) / (double)n;
            for (int a = 0; a < 3; a++) {
                g[a] -= s * p * z[a] / (double)n;
                for (int b = 0; b < 3; b++) h[a][b] += c * z[a] * z[b];
            }
        }
        double det = h[0][0] * (h[1][1] * h[2][2] - h[1][2] * h[2][1]) -
                     h[0][1] * (h[1][0] * h[2][2] - h[1][2] * h[2][0]) +
                     h[0][2] * (h[1][0] * h[2][1] - h[1][1] * h[2][0]);
        double step[3];
        for (int col = 0; col < 3; col++) {
            double m[3][3];
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) m[a][b] = b == col ? g[a] : h[a][b];
            step[col] = (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                         m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])) /
                        det;
        }
        for (int a = 0; a < 3; a++) theta[a] -= step[a];
    }
}

/* With dpd_iterative_config_set_intercept: theta = (w, b) has d + 1 values, non-private
   full-batch SGD reaches the optimum computed above (labels off the origin, so b matters), and
   predictions are sigma(w.x + b) computed here. Setting 0 again is the default, bit for bit. */
static void test_logistic_intercept_converges_to_optimum(void) {
    double x[N * D], y[N];
    make_x(x, N);
    for (size_t i = 0; i < N; i++)
        y[i] = (x[2 * i] - 0.5 * x[2 * i + 1] + 0.3 * sin((double)i)) > 0.4;
    double want[3];
    logistic_intercept_newton(x, y, N, 0.1, want);

    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(12, &rng));
    CHECK_OK(dpd_iterative_config_new_logistic(0.1, &cfg));
    CHECK_FAILS(dpd_iterative_config_set_intercept(cfg, 2), DPD_ERR_INVALID_ARGUMENT,
                "`intercept` = 2");
    CHECK_FAILS(dpd_iterative_config_set_intercept(NULL, 1), DPD_ERR_NULL_POINTER, "config");
    CHECK_OK(dpd_iterative_config_set_intercept(cfg, 1));
    CHECK_OK(dpd_iterative_config_set_poisson(cfg, 1.0));
    CHECK_OK(dpd_iterative_config_set_sgd(cfg, 1.0));
    /* |(x, 1)| <= sqrt(3) here, so a clip norm of 10 never clips: the plain optimum. */
    CHECK_OK(dpd_iterative_config_set_clip_norm(cfg, 10.0));
    CHECK_OK(dpd_iterative_config_set_non_private(cfg));
    CHECK_OK(dpd_iterative_trainer_new(cfg, N, D, rng, &tr));
    uint64_t done = 0;
    CHECK_OK(dpd_iterative_trainer_fit(tr, x, N * D, y, N, 3000, &done));
    double theta[3];
    size_t len = 0;
    CHECK_FAILS(dpd_iterative_trainer_params(tr, theta, 2, &len), DPD_ERR_BUFFER_TOO_SMALL, "");
    CHECK(len == 3);
    CHECK_OK(dpd_iterative_trainer_params(tr, theta, 3, &len));
    printf("iterative logistic with intercept: b %.6f (Newton %.6f)\n", theta[2], want[2]);
    CHECK(want[2] < -0.1); /* the labels' offset: an intercept far from 0 */
    for (int a = 0; a < 3; a++) CHECK(fabs(theta[a] - want[a]) < 1e-6);
    double p[N];
    CHECK_OK(dpd_iterative_trainer_predict(tr, x, N * D, p, N, &len));
    CHECK(len == N);
    for (size_t i = 0; i < N; i++) {
        double m = theta[0] * x[2 * i] + theta[1] * x[2 * i + 1] + theta[2];
        CHECK(fabs(p[i] - 1.0 / (1.0 + exp(-m))) < 1e-12);
    }
    size_t dim = 0, n_params = 0;
    CHECK_OK(dpd_iterative_trainer_info(tr, NULL, &dim, &n_params, NULL));
    CHECK(dim == 2 && n_params == 3);
    dpd_iterative_trainer_free(tr);

    /* intercept = 0 is the default: same run as a fresh default config from the same seed. */
    dpd_iterative_config *plain = NULL;
    CHECK_OK(dpd_iterative_config_new_logistic(0.1, &plain));
    dpd_iterative_config *zero = NULL;
    CHECK_OK(dpd_iterative_config_new_logistic(0.1, &zero));
    CHECK_OK(dpd_iterative_config_set_intercept(zero, 1));
    CHECK_OK(dpd_iterative_config_set_intercept(zero, 0));
    double runs[2][2];
    dpd_iterative_config *both[2] = {plain, zero};
    for (int k = 0; k < 2; k++) {
        dpd_rng *r = NULL;
        CHECK_OK(dpd_rng_new_insecure_fixed_seed(21, &r));
        CHECK_OK(dpd_iterative_config_set_private(both[k], 2.0, 1e-5, 1.0));
        CHECK_OK(dpd_iterative_trainer_new(both[k], N, D, r, &tr));
        CHECK_OK(dpd_iterative_trainer_fit(tr, x, N * D, y, N, 20, &done));
        CHECK_OK(dpd_iterative_trainer_params(tr, runs[k], 2, &len));
        CHECK(len == 2);
        dpd_iterative_trainer_free(tr);
        dpd_rng_free(r);
    }
    CHECK(memcmp(runs[0], runs[1], sizeof runs[0]) == 0);
    dpd_iterative_config_free(plain);
    dpd_iterative_config_free(zero);

    /* Not an option of DP-VI BLR: refused, settings unchanged. */
    dpd_iterative_config *vi = NULL;
    CHECK_OK(dpd_iterative_config_new_blr_vi(1.0, 1.0, &vi));
    CHECK_FAILS(dpd_iterative_config_set_intercept(vi, 1), DPD_ERR_INVALID_STATE,
                "logistic regression only");
    CHECK_FAILS(dpd_iterative_config_set_intercept(vi, 0), DPD_ERR_INVALID_STATE,
                "logistic regression only");
    dpd_iterative_config_free(vi);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

static void test_bad_settings(void) {
    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    double z = -3.0;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(14, &rng));
    CHECK_FAILS(dpd_iterative_config_new_logistic(-1.0, &cfg), DPD_ERR_INVALID_ARGUMENT, "l2");
    CHECK_FAILS(dpd_iterative_config_new_logistic(NAN, &cfg), DPD_ERR_NON_FINITE, "l2");
    CHECK_FAILS(dpd_iterative_config_new_logistic(0.0, NULL), DPD_ERR_NULL_POINTER, "out");
    CHECK_OK(dpd_iterative_config_new_logistic(0.0, &cfg));
    CHECK_FAILS(dpd_iterative_config_set_poisson(cfg, 0.0), DPD_ERR_INVALID_ARGUMENT, "rate");
    CHECK_FAILS(dpd_iterative_config_set_poisson(cfg, 1.5), DPD_ERR_INVALID_ARGUMENT, "rate");
    CHECK_FAILS(dpd_iterative_config_set_poisson(cfg, NAN), DPD_ERR_NON_FINITE, "rate");
    CHECK_FAILS(dpd_iterative_config_set_poisson(NULL, 0.5), DPD_ERR_NULL_POINTER, "config");
    CHECK_FAILS(dpd_iterative_config_set_fixed_size(cfg, 0), DPD_ERR_INVALID_ARGUMENT, "batch");
    CHECK_FAILS(dpd_iterative_config_set_sgd(cfg, 0.0), DPD_ERR_INVALID_ARGUMENT,
                "learning_rate");
    CHECK_FAILS(dpd_iterative_config_set_adam(cfg, 0.1, 1.0, 0.999, 1e-8),
                DPD_ERR_INVALID_ARGUMENT, "beta1");
    CHECK_FAILS(dpd_iterative_config_set_clip_norm(cfg, INFINITY), DPD_ERR_NON_FINITE,
                "clip_norm");
    CHECK_FAILS(dpd_iterative_config_set_dca(cfg, 1, 0), DPD_ERR_INVALID_ARGUMENT, "n_nodes");
    CHECK_FAILS(dpd_iterative_config_set_private(cfg, 0.0, 1e-5, 1.0),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK_FAILS(dpd_iterative_config_set_private(cfg, 1.0, 1e-5, 0.0), DPD_ERR_INVALID_ARGUMENT,
                "noise_multiplier");
    CHECK_FAILS(dpd_iterative_config_set_private(cfg, NAN, 1e-5, 1.0),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    /* None of the refused setters changed anything: still no privacy chosen. */
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 10, 2, rng, &tr), DPD_ERR_INVALID_STATE, "");

    CHECK_OK(dpd_iterative_config_set_fixed_size(cfg, 11));
    CHECK_OK(dpd_iterative_config_set_private(cfg, 1.0, 1e-5, 1.0));
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 10, 2, rng, &tr), DPD_ERR_INVALID_ARGUMENT,
                "batch");
    CHECK_OK(dpd_iterative_config_set_fixed_size(cfg, 5));
    CHECK_OK(dpd_iterative_config_set_dca(cfg, 2, 9));
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 10, 2, rng, &tr), DPD_ERR_INVALID_ARGUMENT,
                "max_dropped");
    CHECK_OK(dpd_iterative_config_set_dca(cfg, 2, 1));
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 10, 0, rng, &tr), DPD_ERR_INVALID_ARGUMENT, "dim");
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 10, SIZE_MAX, rng, &tr), DPD_ERR_OVERFLOW, "dim");
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 10, 2, NULL, &tr), DPD_ERR_NULL_POINTER, "rng");
    CHECK(tr == NULL);
    CHECK_FAILS(dpd_iterative_calibrate_noise_multiplier(cfg, 10, 2, 1.0, 1e-5, 0, &z),
                DPD_ERR_INVALID_ARGUMENT, "steps");
    CHECK_FAILS(dpd_iterative_calibrate_noise_multiplier(NULL, 10, 2, 1.0, 1e-5, 5, &z),
                DPD_ERR_NULL_POINTER, "config");
    CHECK(z == -3.0);
    /* Fixed-size batches are calibrated with the replace-one bound. */
    CHECK_OK(dpd_iterative_calibrate_noise_multiplier(cfg, 10, 2, 1.0, 1e-5, 5, &z));
    CHECK(z > 0.0);

    CHECK_OK(dpd_iterative_trainer_new(cfg, 10, 2, rng, &tr));
    CHECK_FAILS(dpd_iterative_trainer_fit(tr, NULL, 20, NULL, 10, 5, NULL), DPD_ERR_NULL_POINTER,
                "out_done");
    CHECK_FAILS(dpd_iterative_trainer_params(tr, NULL, 0, NULL), DPD_ERR_NULL_POINTER, "out_len");
    CHECK_FAILS(dpd_iterative_trainer_spent(NULL, &z, NULL), DPD_ERR_NULL_POINTER, "trainer");
    dpd_iterative_trainer_free(tr);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
    dpd_iterative_trainer_free(NULL);
    dpd_iterative_config_free(NULL);
}

int main(void) {
    test_rdp_accountant();
    test_logistic_converges_to_optimum();
    test_logistic_intercept_converges_to_optimum();
    test_last_release_is_the_gradient_sum();
    test_blr_vi_converges_to_closed_form();
    test_private_run_spends_exactly_the_budget();
    test_bad_settings();
    return check_exit("test_iterative");
}
