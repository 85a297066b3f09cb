/* Bayesian linear regression from C: the non-private posterior against a ridge solve done here,
 * statistics vectors summed by a DCA round giving the same posterior, private fits (trusted,
 * distributed, Laplace) with the privacy they spent, metrics, and bad inputs. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 2000, D = 3 };

static void synthetic(double *x, double *y) {
    const double beta[D] = {1.0, -0.5, 0.25};
    uint64_t s = 12345;
    for (size_t i = 0; i < N; i++) {
        double m = 0.0;
        for (size_t j = 0; j < D; j++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[i * D + j] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            m += beta[j] * x[i * D + j];
        }
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        y[i] = m + ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.2;
    }
}

/* mu = (lambda0 I + lambda X'X)^{-1} lambda X'y by Gaussian elimination. */
static void ridge(const double *x, const double *y, double lambda, double lambda0, double *mu) {
    double a[D][D + 1] = {{0}};
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < D; j++) {
            for (size_t k = 0; k < D; k++) a[j][k] += lambda * x[i * D + j] * x[i * D + k];
            a[j][D] += lambda * x[i * D + j] * y[i];
        }
    for (size_t j = 0; j < D; j++) a[j][j] += lambda0;
    for (size_t p = 0; p < D; p++)
        for (size_t r = p + 1; r < D; r++) {
            double f = a[r][p] / a[p][p];
            for (size_t c = p; c <= D; c++) a[r][c] -= f * a[p][c];
        }
    for (size_t p = D; p-- > 0;) {
        double v = a[p][D];
        for (size_t c = p + 1; c < D; c++) v -= a[p][c] * mu[c];
        mu[p] = v / a[p][p];
    }
}

static double mae_of(const dpd_blr_model *model, const double *x, const double *y) {
    static double pred[N];
    size_t len = 0;
    CHECK_OK(dpd_blr_model_predict(model, x, N * D, pred, N, &len));
    CHECK(len == N);
    double mae = -1.0, by_hand = 0.0;
    CHECK_OK(dpd_mae(y, N, pred, N, &mae));
    for (size_t i = 0; i < N; i++) by_hand += fabs(y[i] - pred[i]) / N;
    CHECK(fabs(mae - by_hand) < 1e-12);
    return mae;
}

int main(void) {
    static double x[N * D], y[N];
    synthetic(x, y);

    /* Non-private posterior = ridge solution. */
    double mu[D], expected[D];
    size_t len = 0;
    CHECK_OK(dpd_blr_fit_non_private(x, N * D, y, N, D, 1.0, 1.0, mu, D, &len));
    ridge(x, y, 1.0, 1.0, expected);
    for (size_t j = 0; j < D; j++) CHECK(fabs(mu[j] - expected[j]) < 1e-9);

    /* Per-record statistics vectors, summed through an exact DCA round, give the same posterior. */
    size_t s_len = 0;
    CHECK_OK(dpd_blr_stats_len(D, 0, &s_len));
    CHECK(s_len == D * (D + 1) / 2 + D);
    static double stats[N * 9];
    for (size_t i = 0; i < N; i++) {
        CHECK_OK(dpd_blr_record_stats(&x[i * D], D, y[i], 0, &stats[i * s_len], s_len, &len));
    }
    dpd_round_config *config = NULL;
    CHECK_OK(dpd_round_config_new_exact(5, N, 3, 1, s_len, 4.0, DPD_SHARE_MODE_SEED,
                                        DPD_FRAC_BITS_AUTO, &config));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(99, &rng));
    double summed[9];
    CHECK_OK(dpd_simulate_round(config, stats, N * s_len, NULL, 0, rng, summed, 9, &len, NULL));
    double mu_dca[D];
    CHECK_OK(dpd_blr_posterior_mean(summed, s_len, N, D, 0, 1.0, 1.0, mu_dca, D, &len));
    for (size_t j = 0; j < D; j++) CHECK(fabs(mu_dca[j] - mu[j]) < 1e-9);
    dpd_round_config_free(config);

    /* Private fits. */
    const double assumed_x[D] = {1.0, 1.0, 1.0};
    dpd_blr_config *fit_config = NULL;
    CHECK_OK(dpd_blr_config_new(1.0, 1e-5, assumed_x, D, 2.0, &fit_config));
    dpd_blr_model *model = NULL;
    double np_mae = 0.0;
    {
        double pred[N];
        for (size_t i = 0; i < N; i++)
            pred[i] = mu[0] * x[i * D] + mu[1] * x[i * D + 1] + mu[2] * x[i * D + 2];
        CHECK_OK(dpd_mae(y, N, pred, N, &np_mae));
    }
    const char *names[3] = {"trusted", "distributed (DCA)", "trusted, Laplace"};
    for (int setting = 0; setting < 3; setting++) {
        if (setting == 1) CHECK_OK(dpd_blr_config_set_distributed(fit_config, 3, 2, 1));
        if (setting == 2) {
            CHECK_OK(dpd_blr_config_set_trusted(fit_config));
            CHECK_OK(dpd_blr_config_set_laplace(fit_config, 0.6, 0.35, 0.05));
        }
        CHECK_OK(dpd_blr_fit(x, N * D, y, N, D, fit_config, rng, &model));
        double eps = -1.0, delta = -1.0;
        CHECK_OK(dpd_blr_model_spent(model, &eps, &delta));
        CHECK(eps > 0.0 && eps <= 1.0 + 1e-9);
        CHECK(delta >= 0.0 && delta <= 1e-5);
        double bounds[D], by = 0.0;
        CHECK_OK(dpd_blr_model_bounds(model, bounds, D, &len, &by));
        CHECK(len == D && by > 0.0);
        double mae = mae_of(model, x, y);
        printf("BLR %s: eps spent %.4f, delta %.2g, MAE %.4f (non-private %.4f)\n", names[setting],
               eps, delta, mae, np_mae);
        /* The mean of |y| is ~0.5: a fit that learned nothing would be far above this. */
        CHECK(mae < 0.25);
        dpd_blr_model_free(model);
        model = NULL;
    }

    /* Threshold search on its own (for 300 records, to keep valgrind runs short): the same seed
     * gives the same choice, inside the DCA grid. */
    {
        /* x_j ~ U(-1, 1): sigma = 1/sqrt(3); y's sigma is about that of 1.0*x1 - 0.5*x2 + 0.25*x3. */
        const double sigma_x[D] = {0.57735, 0.57735, 0.57735};
        const double sigma_y = 0.66;
        dpd_blr_config *search_config = NULL;
        CHECK_OK(dpd_blr_config_new(1.0, 1e-5, assumed_x, D, 2.0, &search_config));
        double ox[2] = {0}, oy[2] = {0}, err = -1.0;
        for (int k = 0; k < 2; k++) {
            dpd_rng *seeded = NULL;
            CHECK_OK(dpd_rng_new_insecure_fixed_seed(7, &seeded));
            CHECK_OK(dpd_blr_search_thresholds(sigma_x, D, sigma_y, 300, search_config,
                                               DPD_BLR_ERROR_MAE, seeded, &ox[k], &oy[k], &err));
            dpd_rng_free(seeded);
        }
        printf("threshold search: omega_x %.4f, omega_y %.4f, aux MAE %.4f\n", ox[0], oy[0], err);
        CHECK(ox[0] == ox[1] && oy[0] == oy[1]);
        CHECK(ox[0] >= 0.1 - 1e-12 && ox[0] <= 2.1 + 1e-12);
        CHECK(oy[0] >= 0.1 - 1e-12 && oy[0] <= 2.1 + 1e-12);
        CHECK(isfinite(err) && err > 0.0);
        CHECK_OK(dpd_blr_search_thresholds(sigma_x, D, sigma_y, 300, search_config,
                                           DPD_BLR_ERROR_SPEARMAN, rng, &ox[0], &oy[0], NULL));
        /* Bad inputs leave the outputs alone. */
        double sx = -7.0, sy = -7.0;
        const double nan_sigma[D] = {0.5, NAN, 0.5};
        CHECK_FAILS(dpd_blr_search_thresholds(NULL, D, sigma_y, 300, search_config, 0, rng, &sx, &sy,
                                              NULL),
                    DPD_ERR_NULL_POINTER, "sigma_x");
        CHECK_FAILS(dpd_blr_search_thresholds(nan_sigma, D, sigma_y, 300, search_config, 0, rng, &sx,
                                              &sy, NULL),
                    DPD_ERR_NON_FINITE, "");
        CHECK_FAILS(dpd_blr_search_thresholds(sigma_x, D, NAN, 300, search_config, 0, rng, &sx, &sy,
                                              NULL),
                    DPD_ERR_NON_FINITE, "");
        CHECK_FAILS(dpd_blr_search_thresholds(sigma_x, D - 1, sigma_y, 300, search_config, 0, rng,
                                              &sx, &sy, NULL),
                    DPD_ERR_LENGTH_MISMATCH, "sigma_x");
        CHECK_FAILS(dpd_blr_search_thresholds(sigma_x, D, sigma_y, 300, search_config, 3, rng, &sx,
                                              &sy, NULL),
                    DPD_ERR_INVALID_ARGUMENT, "measure");
        CHECK_FAILS(dpd_blr_search_thresholds(sigma_x, D, sigma_y, 300, search_config, 0, rng, NULL,
                                              &sy, NULL),
                    DPD_ERR_NULL_POINTER, "out_omega_x");
        CHECK_FAILS(dpd_blr_search_thresholds(sigma_x, D, sigma_y, 300, NULL, 0, rng, &sx, &sy, NULL),
                    DPD_ERR_NULL_POINTER, "config");
        CHECK(sx == -7.0 && sy == -7.0);
        dpd_blr_config_free(search_config);
    }

    /* Gamma-prior fit from exact statistics with Σy²: at convergence the mean is the ridge
     * solution at the fitted precisions E[λ], E[λ₀] (checked with the solver above), and the
     * shapes are a + n/2 and a0 + d/2. */
    {
        size_t yy_len = 0;
        CHECK_OK(dpd_blr_stats_len(D, 1, &yy_len));
        CHECK(yy_len == D * (D + 1) / 2 + D + 1);
        double sum[10] = {0}, rec[10];
        for (size_t i = 0; i < N; i++) {
            CHECK_OK(dpd_blr_record_stats(&x[i * D], D, y[i], 1, rec, 10, &len));
            for (size_t k = 0; k < yy_len; k++) sum[k] += rec[k];
        }
        double mean[D], ridge_mean[D];
        dpd_blr_cavi_info info = {0};
        CHECK_OK(dpd_blr_fit_gamma_prior(sum, yy_len, N, D, 2.0, 2.0, 2.0, 2.0, 1000, 1e-12, mean,
                                         D, &len, &info));
        CHECK(len == D && info.converged == 1 && info.iterations >= 1);
        CHECK(fabs(info.lambda_shape - (2.0 + N / 2.0)) < 1e-12);
        CHECK(fabs(info.lambda0_shape - (2.0 + D / 2.0)) < 1e-12);
        double e_lambda = info.lambda_shape / info.lambda_rate;
        double e_lambda0 = info.lambda0_shape / info.lambda0_rate;
        printf("Gamma prior: E[lambda] %.2f, E[lambda0] %.3f, %zu sweeps\n", e_lambda, e_lambda0,
               info.iterations);
        ridge(x, y, e_lambda, e_lambda0, ridge_mean);
        for (size_t j = 0; j < D; j++) CHECK(fabs(mean[j] - ridge_mean[j]) < 1e-8);
        /* rate(λ) = b + ½(RSS(m) + tr(XᵀX S)) with 0 < tr(XᵀX S) = Σ s_i/(E[λ₀] + E[λ] s_i)
         * < d/E[λ]: bracket it with the RSS computed here. (E[λ] is not the noise precision
         * 300 of U(-0.1, 0.1): the Gamma(2, 2) prior adds 2 to a rate of ~3.3.) */
        double rss = 0.0;
        for (size_t i = 0; i < N; i++) {
            double r = y[i];
            for (size_t j = 0; j < D; j++) r -= x[i * D + j] * mean[j];
            rss += r * r;
        }
        CHECK(info.lambda_rate > 2.0 + 0.5 * rss);
        CHECK(info.lambda_rate < 2.0 + 0.5 * rss + 0.5 * D / e_lambda);

        /* Without Σy² (wrong length), NaN, bad prior, bad stopping rule. */
        double keep[D] = {-7.0, -7.0, -7.0};
        CHECK_FAILS(dpd_blr_fit_gamma_prior(sum, yy_len - 1, N, D, 2, 2, 2, 2, 1000, 1e-12, keep,
                                            D, &len, NULL),
                    DPD_ERR_LENGTH_MISMATCH, "");
        sum[0] = NAN;
        CHECK_FAILS(dpd_blr_fit_gamma_prior(sum, yy_len, N, D, 2, 2, 2, 2, 1000, 1e-12, keep, D,
                                            &len, NULL),
                    DPD_ERR_NON_FINITE, "");
        sum[0] = 1.0;
        CHECK_FAILS(dpd_blr_fit_gamma_prior(sum, yy_len, N, D, 0, 2, 2, 2, 1000, 1e-12, keep, D,
                                            &len, NULL),
                    DPD_ERR_INVALID_ARGUMENT, "Gamma");
        CHECK_FAILS(dpd_blr_fit_gamma_prior(sum, yy_len, N, D, 2, 2, 2, 2, 0, 1e-12, keep, D, &len,
                                            NULL),
                    DPD_ERR_INVALID_ARGUMENT, "");
        CHECK_FAILS(dpd_blr_fit_gamma_prior(NULL, yy_len, N, D, 2, 2, 2, 2, 1000, 1e-12, keep, D,
                                            &len, NULL),
                    DPD_ERR_NULL_POINTER, "stats");
        CHECK(keep[0] == -7.0 && keep[1] == -7.0 && keep[2] == -7.0);

        /* A private fit that releases Σy² feeds the Gamma-prior fit. */
        dpd_blr_config *yy_config = NULL;
        CHECK_OK(dpd_blr_config_new(1.0, 1e-5, assumed_x, D, 2.0, &yy_config));
        CHECK_OK(dpd_blr_config_set_release_yy(yy_config, 1));
        CHECK_FAILS(dpd_blr_config_set_release_yy(yy_config, 2), DPD_ERR_INVALID_ARGUMENT, "0 or 1");
        dpd_blr_model *yy_model = NULL;
        CHECK_OK(dpd_blr_fit(x, N * D, y, N, D, yy_config, rng, &yy_model));
        double released[10];
        size_t released_len = 0;
        CHECK_FAILS(dpd_blr_model_stats(yy_model, NULL, 0, &released_len),
                    DPD_ERR_BUFFER_TOO_SMALL, "");
        CHECK(released_len == yy_len);
        CHECK_OK(dpd_blr_model_stats(yy_model, released, 10, &released_len));
        CHECK_OK(dpd_blr_fit_gamma_prior(released, released_len, N, D, 2, 2, 2, 2, 1000, 1e-12,
                                         mean, D, &len, &info));
        for (size_t j = 0; j < D; j++) CHECK(isfinite(mean[j]));
        printf("Gamma prior from a private release: mu = (%.3f, %.3f, %.3f)\n", mean[0], mean[1],
               mean[2]);
        dpd_blr_model_free(yy_model);
        dpd_blr_config_free(yy_config);
    }

    /* Bad inputs. */
    dpd_blr_config *bad = (dpd_blr_config *)0x1;
    CHECK_FAILS(dpd_blr_config_new(NAN, 1e-5, assumed_x, D, 2.0, &bad),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK_FAILS(dpd_blr_config_new(1.0, 0.5, assumed_x, D, 2.0, &bad),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "0.01");
    /* The assumed bounds set the sensitivity: refused at construction unless finite and > 0. */
    const double nan_bound[D] = {1.0, NAN, 1.0};
    const double inf_bound[D] = {1.0, 1.0, INFINITY};
    const double zero_bound[D] = {0.0, 1.0, 1.0};
    const double negative_bound[D] = {1.0, -2.0, 1.0};
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, nan_bound, D, 2.0, &bad), DPD_ERR_NON_FINITE,
                "assumed_x[1]");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, inf_bound, D, 2.0, &bad), DPD_ERR_NON_FINITE,
                "assumed_x[2]");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, zero_bound, D, 2.0, &bad),
                DPD_ERR_INVALID_ARGUMENT, "assumed_x[0]");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, negative_bound, D, 2.0, &bad),
                DPD_ERR_INVALID_ARGUMENT, "> 0");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, assumed_x, D, NAN, &bad), DPD_ERR_NON_FINITE,
                "assumed_y");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, assumed_x, D, 0.0, &bad), DPD_ERR_INVALID_ARGUMENT,
                "assumed_y");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, assumed_x, D, -1.0, &bad),
                DPD_ERR_INVALID_ARGUMENT, "assumed_y");
    CHECK_FAILS(dpd_blr_config_new(1.0, 1e-5, NULL, D, 2.0, &bad), DPD_ERR_NULL_POINTER,
                "assumed_x");
    CHECK(bad == (dpd_blr_config *)0x1);
    CHECK_FAILS(dpd_blr_config_set_distributed(fit_config, 1, 0, 1), DPD_ERR_INVALID_ARGUMENT,
                "n_nodes");
    CHECK_FAILS(dpd_blr_config_set_distributed(fit_config, 3, 0, 5), DPD_ERR_INVALID_ARGUMENT,
                "mode");
    CHECK_FAILS(dpd_blr_config_set_projection(fit_config, 2), DPD_ERR_INVALID_ARGUMENT, "0 or 1");
    dpd_blr_model *none = (dpd_blr_model *)0x1;
    CHECK_FAILS(dpd_blr_fit(x, N * D - 1, y, N, D, fit_config, rng, &none),
                DPD_ERR_LENGTH_MISMATCH, "n·d");
    CHECK_OK(dpd_blr_config_set_laplace(fit_config, 0.5, 0.5, 0.5));
    CHECK_FAILS(dpd_blr_fit(x, N * D, y, N, D, fit_config, rng, &none), DPD_ERR_INVALID_ARGUMENT,
                "");
    CHECK(none == (dpd_blr_model *)0x1);
    double m = -1.0;
    CHECK_FAILS(dpd_rmse(y, N, y, N - 1, &m), DPD_ERR_LENGTH_MISMATCH, "");
    CHECK_OK(dpd_spearman(y, N, y, N, &m));
    CHECK(fabs(m - 1.0) < 1e-12);
    CHECK_FAILS(dpd_blr_record_stats(x, D, NAN, 0, stats, 9, &len), DPD_ERR_NON_FINITE, "y = NaN");
    CHECK_FAILS(dpd_blr_stats_len(D, 3, &len), DPD_ERR_INVALID_ARGUMENT, "with_yy");

    dpd_blr_config_free(fit_config);
    dpd_rng_free(rng);
    dpd_blr_config_free(NULL);
    dpd_blr_model_free(NULL);
    return check_exit("test_blr");
}
