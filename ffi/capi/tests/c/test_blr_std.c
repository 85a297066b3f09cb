/* Where the BLR projection's standard deviations come from, set from C: the pooled DP round (the
 * default: one σ, so every x bound is the same), the per-dimension DP round (bounds follow the
 * columns' very different scales), public standard deviations (bounds proportional to them), and
 * bad settings refused with the configuration left as it was. */
#include <math.h>
#include <stdint.h>

#include "check.h"

enum { N = 300, D = 3 };

/* Column j uniform on ±half_width[j]: second moments 1/3, 0.03, 0.12, far apart, so a precise
 * per-dimension round must order the bounds B_0 > B_2 > B_1. */
static void synthetic(double *x, double *y) {
    const double half_width[D] = {1.0, 0.3, 0.6};
    uint64_t s = 777;
    for (size_t i = 0; i < N; i++) {
        double m = 0.0;
        for (size_t j = 0; j < D; j++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            double u = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            x[i * D + j] = u * half_width[j];
            m += x[i * D + j];
        }
        y[i] = 0.5 * m;
    }
}

/* Fits with a fresh fixed-seed generator (so two calls are comparable) and returns the bounds. */
static void fit_bounds(const double *x, const double *y, const dpd_blr_config *config,
                       double *bounds, double *bound_y) {
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(5, &rng));
    dpd_blr_model *model = NULL;
    CHECK_OK(dpd_blr_fit(x, N * D, y, N, D, config, rng, &model));
    size_t len = 0;
    CHECK_OK(dpd_blr_model_bounds(model, bounds, D, &len, bound_y));
    CHECK(len == D);
    double eps = -1.0, delta = -1.0;
    CHECK_OK(dpd_blr_model_spent(model, &eps, &delta));
    CHECK(eps > 0.0 && eps <= 20.0 + 1e-9 && delta <= 1e-5);
    dpd_blr_model_free(model);
    dpd_rng_free(rng);
}

int main(void) {
    static double x[N * D], y[N];
    synthetic(x, y);
    const double assumed_x[D] = {1.0, 1.0, 1.0};
    dpd_blr_config *config = NULL;
    CHECK_OK(dpd_blr_config_new(20.0, 1e-5, assumed_x, D, 2.0, &config));
    double b[D], by = 0.0;

    /* Default: pooled DP σ, one bound for every x column. */
    fit_bounds(x, y, config, b, &by);
    CHECK(b[0] > 0.0 && b[0] == b[1] && b[1] == b[2] && by > 0.0);
    printf("pooled DP std: B_x = (%.4f, %.4f, %.4f), B_y = %.4f\n", b[0], b[1], b[2], by);

    /* Per-dimension DP σ with half the budget: the bounds follow the columns' scales. */
    CHECK_OK(dpd_blr_config_set_dp_std(config, DPD_BLR_STD_PER_DIMENSION, 0.5));
    double per_dim[D];
    fit_bounds(x, y, config, per_dim, &by);
    CHECK(per_dim[0] > per_dim[2] && per_dim[2] > per_dim[1] && per_dim[1] > 0.0);
    printf("per-dimension DP std: B_x = (%.4f, %.4f, %.4f)\n", per_dim[0], per_dim[1],
           per_dim[2]);

    /* Refused settings change nothing: the same seed gives the same bounds afterwards. */
    const double bad_std[D] = {0.5, 0.0, 0.3};
    const double nan_std[D] = {0.5, NAN, 0.3};
    const double good_std[D] = {0.5, 0.1, 0.3};
    CHECK_FAILS(dpd_blr_config_set_dp_std(config, 2, 0.1), DPD_ERR_INVALID_ARGUMENT,
                "DPD_BLR_STD_");
    CHECK_FAILS(dpd_blr_config_set_dp_std(config, DPD_BLR_STD_POOLED, 0.0),
                DPD_ERR_INVALID_ARGUMENT, "budget_share");
    CHECK_FAILS(dpd_blr_config_set_dp_std(config, DPD_BLR_STD_POOLED, 1.0),
                DPD_ERR_INVALID_ARGUMENT, "budget_share");
    CHECK_FAILS(dpd_blr_config_set_dp_std(config, DPD_BLR_STD_POOLED, NAN),
                DPD_ERR_INVALID_ARGUMENT, "budget_share");
    CHECK_FAILS(dpd_blr_config_set_public_std(config, bad_std, D, 1.0), DPD_ERR_INVALID_ARGUMENT,
                "x_std[1]");
    CHECK_FAILS(dpd_blr_config_set_public_std(config, nan_std, D, 1.0), DPD_ERR_INVALID_ARGUMENT,
                "finite and > 0");
    CHECK_FAILS(dpd_blr_config_set_public_std(config, good_std, D, -1.0),
                DPD_ERR_INVALID_ARGUMENT, "y_std");
    CHECK_FAILS(dpd_blr_config_set_public_std(config, good_std, D - 1, 1.0),
                DPD_ERR_INVALID_ARGUMENT, "dimensions");
    CHECK_FAILS(dpd_blr_config_set_public_std(config, NULL, D, 1.0), DPD_ERR_NULL_POINTER,
                "x_std");
    CHECK_FAILS(dpd_blr_config_set_public_std(NULL, good_std, D, 1.0), DPD_ERR_NULL_POINTER,
                "config");
    CHECK_FAILS(dpd_blr_config_set_dp_std(NULL, DPD_BLR_STD_POOLED, 0.1), DPD_ERR_NULL_POINTER,
                "config");
    double again[D];
    fit_bounds(x, y, config, again, &by);
    for (size_t j = 0; j < D; j++) CHECK(again[j] == per_dim[j]);

    /* Public σ: no std round, bounds = ω·σ_j, so bound/σ is the same for every column; turning
     * projection on again keeps the setting. */
    CHECK_OK(dpd_blr_config_set_public_std(config, good_std, D, 1.0));
    CHECK_OK(dpd_blr_config_set_projection(config, 1));
    fit_bounds(x, y, config, b, &by);
    double omega = b[0] / good_std[0];
    for (size_t j = 1; j < D; j++) CHECK(fabs(b[j] / good_std[j] - omega) < 1e-12 * omega);
    printf("public std: B_x / sigma_x = %.4f for every column, B_y = %.4f\n", omega, by);

    /* Without projection there is nothing for the standard deviations to scale. */
    CHECK_OK(dpd_blr_config_set_projection(config, 0));
    CHECK_FAILS(dpd_blr_config_set_dp_std(config, DPD_BLR_STD_POOLED, 0.1),
                DPD_ERR_INVALID_ARGUMENT, "projection is off");
    CHECK_FAILS(dpd_blr_config_set_public_std(config, good_std, D, 1.0),
                DPD_ERR_INVALID_ARGUMENT, "projection is off");

    dpd_blr_config_free(config);
    return check_exit("test_blr_std");
}
