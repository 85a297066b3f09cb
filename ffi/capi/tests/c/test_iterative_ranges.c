/* Public feature ranges for DP-SGD's logistic regression from C (dpd_iterative_config_set_ranges):
 * one non-private step on two records against the gradient and parameters worked out by hand
 * from the documented map, a raw row outside its ranges predicted as its clamped row, and bad
 * ranges refused with the settings unchanged. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 2, D = 2 };

static double sigmoid(double t) { return 1.0 / (1.0 + exp(-t)); }

/* Ranges [0, 10] and [-2, 2]. Records x = (2.5, 3), y = 1 -> mapped (-0.5, 1) (3 clamps to 2);
   x = (12.5, -1), y = 0 -> mapped (1, -0.5). At theta = 0 a record's gradient is
   -y * sigma(0) * (mapped x, 1) with y read as +-1: (0.25, -0.5, -0.5) and (0.5, -0.25, 0.5),
   sum (0.75, -0.75, 0). SGD with rate 1 over the batch of 2: theta = (-0.375, 0.375, 0). */
static void test_one_step_by_hand(void) {
    const double lo[D] = {0.0, -2.0}, hi[D] = {10.0, 2.0};
    const double x[N * D] = {2.5, 3.0, 12.5, -1.0}, y[N] = {1.0, 0.0};
    dpd_iterative_config *cfg = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(3, &rng));
    CHECK_OK(dpd_iterative_config_new_logistic(0.0, &cfg));
    CHECK_OK(dpd_iterative_config_set_intercept(cfg, 1));
    CHECK_OK(dpd_iterative_config_set_ranges(cfg, lo, hi, D));
    CHECK_OK(dpd_iterative_config_set_fixed_size(cfg, N));
    CHECK_OK(dpd_iterative_config_set_sgd(cfg, 1.0));
    CHECK_OK(dpd_iterative_config_set_dca(cfg, 2, 0));
    CHECK_OK(dpd_iterative_config_set_non_private(cfg));
    CHECK_OK(dpd_iterative_trainer_new(cfg, N, D, rng, &tr));
    CHECK_OK(dpd_iterative_trainer_step(tr, x, N * D, y, N, NULL, 0, NULL));

    double release[3], theta[3];
    size_t len = 0;
    CHECK_OK(dpd_iterative_trainer_last_release(tr, release, 3, &len));
    CHECK(len == 3);
    const double want_release[3] = {0.75, -0.75, 0.0}, want_theta[3] = {-0.375, 0.375, 0.0};
    CHECK_OK(dpd_iterative_trainer_params(tr, theta, 3, &len));
    for (int a = 0; a < 3; a++) {
        CHECK(fabs(release[a] - want_release[a]) < 1e-9);
        CHECK(fabs(theta[a] - want_theta[a]) < 1e-9);
    }

    /* (12.5, -5) and (10, -2) both map to (1, -1): sigma(-0.375 - 0.375); (2.5, 3) maps to
       (-0.5, 1): sigma(0.1875 + 0.375). */
    const double rows[3 * D] = {12.5, -5.0, 10.0, -2.0, 2.5, 3.0};
    double p[3];
    CHECK_OK(dpd_iterative_trainer_predict(tr, rows, 3 * D, p, 3, &len));
    CHECK(len == 3);
    CHECK(p[0] == p[1]);
    CHECK(fabs(p[0] - sigmoid(-0.75)) < 1e-9);
    CHECK(fabs(p[2] - sigmoid(0.5625)) < 1e-9);
    const double infinite[D] = {INFINITY, 0.0};
    CHECK_FAILS(dpd_iterative_trainer_predict(tr, infinite, D, p, 3, &len), DPD_ERR_NON_FINITE,
                "x");

    dpd_iterative_trainer_free(tr);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

/* A bad range is refused naming its 0-based column and leaves the settings as they were; a
   count other than d is refused by the trainer; DP-VI has no ranges. */
static void test_bad_ranges(void) {
    const double lo[D] = {0.0, 1.0}, hi[D] = {10.0, 1.0}, nan_hi[D] = {NAN, 2.0};
    dpd_iterative_config *cfg = NULL, *vi = NULL;
    dpd_rng *rng = NULL;
    dpd_iterative_trainer *tr = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(9, &rng));
    CHECK_OK(dpd_iterative_config_new_logistic(0.0, &cfg));
    CHECK_OK(dpd_iterative_config_set_non_private(cfg));
    CHECK_FAILS(dpd_iterative_config_set_ranges(cfg, lo, hi, D), DPD_ERR_INVALID_ARGUMENT,
                "range of column 1");
    CHECK_FAILS(dpd_iterative_config_set_ranges(cfg, lo, nan_hi, D), DPD_ERR_INVALID_ARGUMENT,
                "range of column 0");
    CHECK_FAILS(dpd_iterative_config_set_ranges(cfg, NULL, hi, D), DPD_ERR_NULL_POINTER, "lo");
    /* Still without ranges: a trainer of any d is accepted. */
    CHECK_OK(dpd_iterative_trainer_new(cfg, 3, 5, rng, &tr));
    dpd_iterative_trainer_free(tr);
    tr = NULL;

    const double lo3[3] = {0.0, 0.0, 0.0}, hi3[3] = {1.0, 1.0, 1.0};
    CHECK_OK(dpd_iterative_config_set_ranges(cfg, lo3, hi3, 3));
    CHECK_FAILS(dpd_iterative_trainer_new(cfg, 3, 2, rng, &tr), DPD_ERR_INVALID_ARGUMENT,
                "n_ranges");
    CHECK(tr == NULL);
    /* n_ranges = 0 removes the ranges. */
    CHECK_OK(dpd_iterative_config_set_ranges(cfg, NULL, NULL, 0));
    CHECK_OK(dpd_iterative_trainer_new(cfg, 3, 2, rng, &tr));
    dpd_iterative_trainer_free(tr);

    CHECK_OK(dpd_iterative_config_new_blr_vi(1.0, 1.0, &vi));
    CHECK_FAILS(dpd_iterative_config_set_ranges(vi, lo3, hi3, 3), DPD_ERR_INVALID_STATE,
                "logistic regression only");
    dpd_iterative_config_free(vi);
    dpd_iterative_config_free(cfg);
    dpd_rng_free(rng);
}

int main(void) {
    test_one_step_by_hand();
    test_bad_ranges();
    return check_exit("test_iterative_ranges");
}
