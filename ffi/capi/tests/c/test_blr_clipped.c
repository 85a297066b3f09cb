/* The shares of clipped records, set and read from C: the released shares against counts taken
 * here from the data and the fit's bounds, their noise against the value computed by hand, and
 * bad settings refused with the configuration left as it was. */
#include <math.h>
#include <stdint.h>

#include "check.h"

enum { N = 400, D = 3 };

/* Column j uniform on ±half_width[j]; y = Σx / 2 plus a heavy tail on every 10th record, so the
 * bounds clip some y and some x and leave the rest. */
static void synthetic(double *x, double *y) {
    const double half_width[D] = {1.0, 0.3, 0.6};
    uint64_t s = 4242;
    for (size_t i = 0; i < N; i++) {
        double m = 0.0;
        for (size_t j = 0; j < D; j++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            double u = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            x[i * D + j] = u * half_width[j];
            m += x[i * D + j];
        }
        y[i] = 0.5 * m + (i % 10 == 0 ? 1.5 : 0.0);
    }
}

/* Shares of records with |y| > B_y, and with some |x_j| > B_j. */
static void shares_by_hand(const double *x, const double *y, const double *b, double by,
                           double *share_y, double *share_x) {
    size_t cy = 0, cx = 0;
    for (size_t i = 0; i < N; i++) {
        if (fabs(y[i]) > by) cy++;
        int any = 0;
        for (size_t j = 0; j < D; j++) any |= fabs(x[i * D + j]) > b[j];
        cx += (size_t)any;
    }
    *share_y = (double)cy / N;
    *share_x = (double)cx / N;
}

static dpd_blr_model *fit(const double *x, const double *y, const dpd_blr_config *config) {
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(9, &rng));
    dpd_blr_model *model = NULL;
    CHECK_OK(dpd_blr_fit(x, N * D, y, N, D, config, rng, &model));
    dpd_rng_free(rng);
    return model;
}

int main(void) {
    static double x[N * D], y[N];
    synthetic(x, y);
    const double assumed_x[D] = {1.0, 1.0, 1.0};
    const double epsilon = 20.0, delta = 1e-5, share = 0.2;
    dpd_blr_config *config = NULL;
    CHECK_OK(dpd_blr_config_new(epsilon, delta, assumed_x, D, 3.0, &config));

    /* By default no shares are released, and asking says why. */
    dpd_blr_model *model = fit(x, y, config);
    CHECK_FAILS(dpd_blr_model_clipped_share(model, NULL, NULL, NULL), DPD_ERR_INVALID_STATE,
                "released no clipped shares");
    dpd_blr_model_free(model);

    CHECK_OK(dpd_blr_config_set_clipped_share(config, share));
    model = fit(x, y, config);
    double b[D], by = 0.0, got_y = -1.0, got_x = -1.0, sd = -1.0, want_y, want_x;
    size_t len = 0;
    CHECK_OK(dpd_blr_model_bounds(model, b, D, &len, &by));
    CHECK_OK(dpd_blr_model_clipped_share(model, &got_y, &got_x, &sd));
    shares_by_hand(x, y, b, by, &want_y, &want_x);
    CHECK(want_y > 0.0 && want_y < 1.0 && want_x > 0.0 && want_x < 1.0);
    /* ρ = (√(ε + L) − √L)², L = ln(1/δ), shrunk by 10⁻⁹ in the library; the counts' Δ₂ = √2 at
     * ρ_c = share·ρ gives a count sd of 1/√ρ_c, over N records. */
    const double l = log(1.0 / delta);
    const double rho = pow(sqrt(epsilon + l) - sqrt(l), 2.0);
    const double want_sd = 1.0 / sqrt(share * rho) / N;
    CHECK(fabs(sd - want_sd) < 1e-8 * want_sd);
    /* A fixed seed: within 6 sd (a Gaussian is outside with probability 2e-9). */
    CHECK(fabs(got_y - want_y) < 6.0 * sd && fabs(got_x - want_x) < 6.0 * sd);
    printf("clipped shares: y %.4f (counted %.4f), x %.4f (counted %.4f), sd %.4f\n", got_y,
           want_y, got_x, want_x, sd);
    CHECK_FAILS(dpd_blr_model_clipped_share(NULL, &got_y, NULL, NULL), DPD_ERR_NULL_POINTER,
                "model");
    dpd_blr_model_free(model);

    /* Refused settings change nothing. */
    CHECK_FAILS(dpd_blr_config_set_clipped_share(config, -0.1), DPD_ERR_INVALID_ARGUMENT,
                "budget_share");
    CHECK_FAILS(dpd_blr_config_set_clipped_share(config, 1.0), DPD_ERR_INVALID_ARGUMENT,
                "budget_share");
    CHECK_FAILS(dpd_blr_config_set_clipped_share(config, NAN), DPD_ERR_INVALID_ARGUMENT,
                "budget_share");
    CHECK_FAILS(dpd_blr_config_set_clipped_share(NULL, 0.1), DPD_ERR_NULL_POINTER, "config");
    model = fit(x, y, config);
    double again_sd = -1.0;
    CHECK_OK(dpd_blr_model_clipped_share(model, NULL, NULL, &again_sd));
    CHECK(again_sd == sd);
    dpd_blr_model_free(model);

    /* With the std round's share the two must leave the statistics something: refused when
     * fitting, naming the setting. */
    CHECK_OK(dpd_blr_config_set_dp_std(config, DPD_BLR_STD_POOLED, 0.5));
    CHECK_OK(dpd_blr_config_set_clipped_share(config, 0.6));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(9, &rng));
    model = NULL;
    CHECK_FAILS(dpd_blr_fit(x, N * D, y, N, D, config, rng, &model), DPD_ERR_INVALID_ARGUMENT,
                "clipped_share_budget");
    CHECK(model == NULL);
    dpd_rng_free(rng);

    /* Without projection nothing is clipped by a search, and nothing to release. */
    CHECK_OK(dpd_blr_config_set_projection(config, 0));
    CHECK_FAILS(dpd_blr_config_set_clipped_share(config, 0.1), DPD_ERR_INVALID_ARGUMENT,
                "projection is off");

    dpd_blr_config_free(config);
    return check_exit("test_blr_clipped");
}
