/* Public feature ranges for the stacked models from C (dpd_pst_{s,f,h}_fit_with_ranges,
 * dpd_plr_model_low_level_ranges): fits on a tiny data set with rows outside their ranges
 * against their exported parts, the prediction worked out by hand from the documented maps,
 * and bad ranges refused with the data set and the generator unchanged. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 12, D = 3, K = 2 };

static double sigmoid(double t) { return 1.0 / (1.0 + exp(-t)); }

/* Scales v[0..n] onto the ball of radius r (as documented: x -> x min(1, r/|x|)). */
static void project(double *v, size_t n, double r) {
    double norm = 0.0;
    for (size_t j = 0; j < n; j++) norm += v[j] * v[j];
    norm = sqrt(norm);
    if (norm > r) {
        for (size_t j = 0; j < n; j++) v[j] *= r / norm;
    }
}

/* Tiny data in the data's units: y = 1 iff x_0 > 2; rows 4, 7 and 10 lie outside the public
   ranges [0, 4] x [-1, 1] x [10, 20]. */
static const double X[N * D] = {0.5, 0.2, 12.0, 1.0, -0.5, 15.0, 1.5, 0.9, 11.0, 3.0, 0.1, 18.0,
                                10.0, 0.5, 14.0, 3.5, -0.3, 16.0, 0.2, 0.4, 19.0, -7.0, 3.0, 13.0,
                                2.5, -0.8, 12.5, 1.2, 0.0, 17.0, 3.8, 0.3, 40.0, 2.9, -0.6, 15.5};
static const double Y[N] = {0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1};
static const double LO[D] = {0.0, -1.0, 10.0}, HI[D] = {4.0, 1.0, 20.0};
/* Group 0 = feature 1, group 1 = features 0 and 2. */
static const uint32_t GROUP_OF_FEATURE[D] = {1, 0, 1};
static const double IMPORTANCE[K] = {0.25, 0.75};

/* P(y = 1 | row) of a stack, worked out from its exported parts and the documented maps:
   low-level model k maps its features phi_j = (clamp(x_j, lo_j, hi_j) - m_j)/h_j, projects
   them to |phi| <= r_k (r_k/sqrt(2) with an intercept) and has margin z_k = w_k.phi + b_k; the
   high level reads m_k = (2 sigma(z_k) - 1)/sqrt(K), projected likewise to its radius. Also
   checks that model k's exported ranges are the public ranges of its features. */
static double stack_by_hand(const dpd_plr_model *stack, int has_b, const double *row) {
    size_t n_low = 0;
    CHECK_OK(dpd_plr_model_info(stack, NULL, NULL, &n_low, NULL));
    double meta[8] = {0.0};
    CHECK(n_low <= 8);
    for (size_t k = 0; k < n_low && k < 8; k++) {
        uint64_t features[D];
        double w[D], r = 0.0, b = 0.0, lo[D], hi[D], phi[D];
        size_t n = 0, n_ranges = 0;
        CHECK_OK(dpd_plr_model_low_level(stack, k, features, D, w, D, &n, &r));
        CHECK_OK(dpd_plr_model_low_level_ranges(stack, k, lo, hi, D, &n_ranges));
        CHECK(n_ranges == n);
        if (has_b) CHECK_OK(dpd_plr_model_low_level_intercept(stack, k, &b));
        for (size_t i = 0; i < n && i < D; i++) {
            size_t j = (size_t)features[i];
            CHECK(lo[i] == LO[j] && hi[i] == HI[j]);
            double v = row[j] < LO[j] ? LO[j] : (row[j] > HI[j] ? HI[j] : row[j]);
            phi[i] = (v - 0.5 * (LO[j] + HI[j])) / (0.5 * (HI[j] - LO[j]));
        }
        project(phi, n, has_b ? r / sqrt(2.0) : r);
        double z = b;
        for (size_t i = 0; i < n && i < D; i++) z += w[i] * phi[i];
        meta[k] = (2.0 * sigmoid(z) - 1.0) / sqrt((double)n_low);
    }
    double v[8], r = 0.0, b = 0.0;
    size_t n = 0;
    CHECK_OK(dpd_plr_model_weights(stack, v, 8, &n, &r));
    CHECK(n == n_low);
    if (has_b) CHECK_OK(dpd_plr_model_intercept(stack, &b));
    project(meta, n_low, has_b ? r / sqrt(2.0) : r);
    double z = b;
    for (size_t k = 0; k < n_low && k < 8; k++) z += v[k] * meta[k];
    return sigmoid(z);
}

/* A stack fitted with ranges against the hand chain, row by row; a row outside its ranges
   predicts as the row clamped to them. */
static void check_stack(const dpd_plr_model *stack, int has_b, double epsilon) {
    double p[N], eps = 0.0;
    size_t n = 0;
    CHECK_OK(dpd_plr_model_predict_proba(stack, X, N * D, p, N, &n));
    CHECK(n == N);
    for (size_t i = 0; i < N; i++) {
        CHECK(fabs(p[i] - stack_by_hand(stack, has_b, X + i * D)) < 1e-12);
    }
    const double clamped[D] = {4.0, 0.5, 14.0}; /* row 4, (10, 0.5, 14), clamped */
    double pc = 0.0;
    CHECK_OK(dpd_plr_model_predict_proba(stack, clamped, D, &pc, 1, &n));
    CHECK(pc == p[4]);
    CHECK_OK(dpd_plr_model_info(stack, NULL, NULL, NULL, &eps));
    CHECK(eps == epsilon || (isinf(eps) && isinf(epsilon)));
    /* The high level reads the low-level outputs: it has no ranges of its own. */
    double lo[D], hi[D];
    CHECK_FAILS(dpd_plr_model_ranges(stack, lo, hi, D, &n), DPD_ERR_INVALID_STATE,
                "dpd_plr_model_low_level_ranges");
}

static void test_fits(void) {
    dpd_dataset *data = NULL, *source = NULL;
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &data));
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &source));
    dpd_feature_groups *groups = NULL;
    CHECK_OK(dpd_feature_groups_new(GROUP_OF_FEATURE, D, IMPORTANCE, K, &groups));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(43, &rng));

    for (uint32_t has_b = 0; has_b <= 1; has_b++) {
        dpd_plr_model *stack = NULL;
        CHECK_OK(dpd_pst_s_fit_with_ranges(data, 2, 1.0, 0.01, 0.1, 0.5, has_b, LO, HI, D, rng,
                                           &stack));
        check_stack(stack, (int)has_b, 1.0);
        dpd_plr_model_free(stack);
        CHECK_OK(dpd_pst_f_fit_with_ranges(data, groups, INFINITY, 0.01, 0.1, 0.5, has_b, LO, HI,
                                           D, rng, &stack));
        check_stack(stack, (int)has_b, INFINITY);
        dpd_plr_model_free(stack);
        CHECK_OK(dpd_pst_h_fit_with_ranges(source, data, groups, 1.0, 2.0, 0.01, 0.5, 0.1, 0.5,
                                           has_b, LO, HI, D, rng, &stack));
        check_stack(stack, (int)has_b, 2.0);
        dpd_plr_model_free(stack);
    }

    /* Model k's ranges: group 0 reads feature 1 only; a size query reports the length. */
    dpd_plr_model *stack = NULL;
    CHECK_OK(dpd_pst_f_fit_with_ranges(data, groups, 1.0, 0.01, 0.1, 0.5, 1, LO, HI, D, rng,
                                       &stack));
    double lo[D], hi[D];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_low_level_ranges(stack, 0, lo, hi, D, &n));
    CHECK(n == 1 && lo[0] == -1.0 && hi[0] == 1.0);
    n = 0;
    CHECK_FAILS(dpd_plr_model_low_level_ranges(stack, 1, NULL, NULL, 0, &n),
                DPD_ERR_BUFFER_TOO_SMALL, "out_lo");
    CHECK(n == 2);
    CHECK_FAILS(dpd_plr_model_low_level_ranges(stack, 2, lo, hi, D, &n), DPD_ERR_INVALID_ARGUMENT,
                "low-level model 2 does not exist");
    dpd_plr_model_free(stack);

    /* Without ranges there are none to report; a single model has no low level. */
    CHECK_OK(dpd_pst_f_fit_with_intercept(data, groups, 1.0, 0.01, 0.1, 0.5, 1, rng, &stack));
    CHECK_FAILS(dpd_plr_model_low_level_ranges(stack, 0, lo, hi, D, &n), DPD_ERR_INVALID_STATE,
                "no public ranges");
    dpd_plr_model_free(stack);
    dpd_plr_model *single = NULL;
    CHECK_OK(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, HI, D, rng, &single));
    CHECK_FAILS(dpd_plr_model_low_level_ranges(single, 0, lo, hi, D, &n),
                DPD_ERR_INVALID_ARGUMENT, "single logistic model");
    dpd_plr_model_free(single);

    dpd_rng_free(rng);
    dpd_feature_groups_free(groups);
    dpd_dataset_free(data);
    dpd_dataset_free(source);
}

/* Predictions of two stacks on X, compared bit for bit. */
static void check_same(const dpd_plr_model *a, const dpd_plr_model *b) {
    double pa[N], pb[N];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_predict_proba(a, X, N * D, pa, N, &n));
    CHECK_OK(dpd_plr_model_predict_proba(b, X, N * D, pb, N, &n));
    CHECK(memcmp(pa, pb, sizeof pa) == 0);
}

/* Bad ranges: refused before anything is drawn. Private fits on the same data set and
   generator afterwards equal ones on a fresh copy of the data with a fresh generator of the
   same seed, bit for bit. */
static void test_bad_ranges(void) {
    dpd_dataset *data = NULL, *fresh = NULL;
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &data));
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &fresh));
    dpd_feature_groups *groups = NULL;
    CHECK_OK(dpd_feature_groups_new(GROUP_OF_FEATURE, D, IMPORTANCE, K, &groups));
    dpd_rng *rng = NULL, *fresh_rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(99, &rng));
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(99, &fresh_rng));

    dpd_plr_model *none = NULL;
    const double flat_hi[D] = {4.0, 1.0, 10.0}, nan_lo[D] = {0.0, NAN, 10.0};
    const double inf_hi[D] = {INFINITY, 1.0, 20.0};
    CHECK_FAILS(dpd_pst_s_fit_with_ranges(data, 2, 1.0, 0.01, 0.1, 0.5, 1, LO, HI, 2, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "`n_ranges` = 2");
    CHECK_FAILS(dpd_pst_s_fit_with_ranges(data, 2, 1.0, 0.01, 0.1, 0.5, 1, LO, flat_hi, D, rng,
                                          &none),
                DPD_ERR_INVALID_ARGUMENT, "column 2");
    CHECK_FAILS(dpd_pst_s_fit_with_ranges(data, 2, 1.0, 0.01, 0.1, 0.5, 1, NULL, HI, D, rng,
                                          &none),
                DPD_ERR_NULL_POINTER, "lo");
    CHECK_FAILS(dpd_pst_s_fit_with_ranges(data, 2, 1.0, 0.01, 0.1, 0.5, 2, LO, HI, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "`intercept` = 2");
    CHECK_FAILS(dpd_pst_f_fit_with_ranges(data, groups, 1.0, 0.01, 0.1, 0.5, 1, nan_lo, HI, D,
                                          rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 1");
    CHECK_FAILS(dpd_pst_f_fit_with_ranges(data, groups, 1.0, 0.01, 0.1, 0.5, 1, HI, LO, D, rng,
                                          &none),
                DPD_ERR_INVALID_ARGUMENT, "column 0");
    CHECK_FAILS(dpd_pst_f_fit_with_ranges(data, groups, 1.0, 0.01, 0.1, 0.5, 1, LO, HI, 4, rng,
                                          &none),
                DPD_ERR_INVALID_ARGUMENT, "the data has 3");
    CHECK_FAILS(dpd_pst_h_fit_with_ranges(data, data, groups, 1.0, 1.0, 0.01, 0.5, 0.1, 0.5, 1,
                                          LO, inf_hi, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 0");
    CHECK_FAILS(dpd_pst_h_fit_with_ranges(data, data, groups, 1.0, 1.0, 0.01, 0.5, 0.1, 0.5, 1,
                                          LO, NULL, D, rng, &none),
                DPD_ERR_NULL_POINTER, "hi");
    CHECK_FAILS(dpd_pst_h_fit_with_ranges(data, data, groups, 1.0, 1.0, 0.01, 0.5, 0.1, 0.5, 1,
                                          LO, HI, D, rng, NULL),
                DPD_ERR_NULL_POINTER, "out");
    CHECK(none == NULL);

    dpd_plr_model *a = NULL, *b = NULL;
    CHECK_OK(dpd_pst_s_fit_with_ranges(data, 2, 1.0, 0.01, 0.1, 0.5, 1, LO, HI, D, rng, &a));
    CHECK_OK(dpd_pst_s_fit_with_ranges(fresh, 2, 1.0, 0.01, 0.1, 0.5, 1, LO, HI, D, fresh_rng,
                                       &b));
    check_same(a, b);
    dpd_plr_model_free(a);
    dpd_plr_model_free(b);
    CHECK_OK(dpd_pst_h_fit_with_ranges(data, data, groups, 1.0, 1.0, 0.01, 0.5, 0.1, 0.5, 1, LO,
                                       HI, D, rng, &a));
    CHECK_OK(dpd_pst_h_fit_with_ranges(fresh, fresh, groups, 1.0, 1.0, 0.01, 0.5, 0.1, 0.5, 1, LO,
                                       HI, D, fresh_rng, &b));
    check_same(a, b);
    dpd_plr_model_free(a);
    dpd_plr_model_free(b);

    dpd_rng_free(rng);
    dpd_rng_free(fresh_rng);
    dpd_feature_groups_free(groups);
    dpd_dataset_free(data);
    dpd_dataset_free(fresh);
}

int main(void) {
    test_fits();
    test_bad_ranges();
    return check_exit("test_pst_ranges");
}
