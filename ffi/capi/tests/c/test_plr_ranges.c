/* Public feature ranges for PLR from C (dpd_plr_fit_with_ranges, dpd_plr_model_ranges,
 * dpd_plr_model_from_weights_and_ranges): an imported model against margins worked out by hand
 * from the documented map, fits on a tiny data set with a row outside its range (clipped)
 * against their exported parts, and bad ranges refused with the data set and the generator
 * unchanged. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 8, D = 2 };

static double sigmoid(double t) { return 1.0 / (1.0 + exp(-t)); }

/* The documented map: phi_j(x) = (clamp(x_j, lo_j, hi_j) - m_j) / h_j, m_j = (lo_j + hi_j)/2,
   h_j = (hi_j - lo_j)/2; the mapped row projected to |phi| <= r/sqrt(2) with an intercept (r
   without); the margin w.phi + b. Written from the header's description, not from the library. */
static double margin_by_hand(const double *w, int has_b, double b, const double *lo,
                             const double *hi, double r, const double *row) {
    double phi[D], norm = 0.0, dot = 0.0;
    for (size_t j = 0; j < D; j++) {
        double v = row[j] < lo[j] ? lo[j] : (row[j] > hi[j] ? hi[j] : row[j]);
        phi[j] = (v - 0.5 * (lo[j] + hi[j])) / (0.5 * (hi[j] - lo[j]));
        norm += phi[j] * phi[j];
    }
    norm = sqrt(norm);
    double radius = has_b ? r / sqrt(2.0) : r;
    double scale = norm > radius ? radius / norm : 1.0;
    for (size_t j = 0; j < D; j++) dot += w[j] * phi[j] * scale;
    return dot + (has_b ? b : 0.0);
}

/* An imported model with ranges against numbers worked out on paper. */
static void test_imported(void) {
    const double w[D] = {2.0, -1.0}, lo[D] = {0.0, -1.0}, hi[D] = {4.0, 1.0};
    dpd_plr_model *m = NULL;
    CHECK_OK(dpd_plr_model_from_weights_and_ranges(w, D, 1, 0.5, lo, hi, D, 1.0, &m));
    /* Rows: (10, 0.5) -> phi = (1, 0.5), |phi| = sqrt(1.25) > 1/sqrt(2): scaled by
       sqrt(0.5)/sqrt(1.25), margin 1.5 sqrt(0.5/1.25) + 0.5; (1, 0) -> phi = (-0.5, 0), inside:
       margin -1 + 0.5; (3, 0) -> (0.5, 0): 1 + 0.5; (2, 0) -> the centre: margin b = 0.5. */
    const double rows[4 * D] = {10.0, 0.5, 1.0, 0.0, 3.0, 0.0, 2.0, 0.0};
    const double hand[4] = {sigmoid(1.5 * sqrt(0.5 / 1.25) + 0.5), sigmoid(-0.5), sigmoid(1.5),
                            sigmoid(0.5)};
    double p[4];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_predict_proba(m, rows, 4 * D, p, 4, &n));
    CHECK(n == 4);
    for (size_t i = 0; i < 4; i++) CHECK(fabs(p[i] - hand[i]) < 1e-12);

    double got_lo[D], got_hi[D], b = 0.0;
    CHECK_OK(dpd_plr_model_ranges(m, got_lo, got_hi, D, &n));
    CHECK(n == D && got_lo[0] == 0.0 && got_lo[1] == -1.0 && got_hi[0] == 4.0 && got_hi[1] == 1.0);
    CHECK_OK(dpd_plr_model_intercept(m, &b));
    CHECK(b == 0.5);
    /* Size query: nothing written, the length reported. */
    n = 0;
    CHECK_FAILS(dpd_plr_model_ranges(m, NULL, NULL, 0, &n), DPD_ERR_BUFFER_TOO_SMALL, "out_lo");
    CHECK(n == D);
    dpd_plr_model_free(m);

    /* Without intercept (b must then be 0): rows clipped to |phi| <= 1; (1, 0) -> margin -1;
       (10, -5) -> phi = (1, -1), scaled by 1/sqrt(2): margin (2 + 1)/sqrt(2). */
    CHECK_OK(dpd_plr_model_from_weights_and_ranges(w, D, 0, 0.0, lo, hi, D, 1.0, &m));
    const double rows2[2 * D] = {1.0, 0.0, 10.0, -5.0};
    CHECK_OK(dpd_plr_model_predict_proba(m, rows2, 2 * D, p, 2, &n));
    CHECK(fabs(p[0] - sigmoid(-1.0)) < 1e-12);
    CHECK(fabs(p[1] - sigmoid(3.0 / sqrt(2.0))) < 1e-12);
    CHECK_FAILS(dpd_plr_model_intercept(m, &b), DPD_ERR_INVALID_STATE, "no intercept");
    dpd_plr_model_free(m);

    /* A model without ranges has none to report. */
    CHECK_OK(dpd_plr_model_from_weights(w, D, 1.0, &m));
    CHECK_FAILS(dpd_plr_model_ranges(m, got_lo, got_hi, D, &n), DPD_ERR_INVALID_STATE,
                "no public ranges");
    dpd_plr_model_free(m);

    /* Bad imports: nothing made. */
    dpd_plr_model *none = NULL;
    const double bad_hi[D] = {4.0, -1.0};
    CHECK_FAILS(dpd_plr_model_from_weights_and_ranges(w, D, 1, 0.5, lo, bad_hi, D, 1.0, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 1");
    CHECK_FAILS(dpd_plr_model_from_weights_and_ranges(w, D, 1, 0.5, lo, hi, 1, 1.0, &none),
                DPD_ERR_INVALID_ARGUMENT, "`n_ranges` = 1");
    CHECK_FAILS(dpd_plr_model_from_weights_and_ranges(w, D, 0, 0.5, lo, hi, D, 1.0, &none),
                DPD_ERR_INVALID_ARGUMENT, "`b` = 0.5");
    CHECK_FAILS(dpd_plr_model_from_weights_and_ranges(w, D, 2, 0.5, lo, hi, D, 1.0, &none),
                DPD_ERR_INVALID_ARGUMENT, "`intercept` = 2");
    CHECK_FAILS(dpd_plr_model_from_weights_and_ranges(w, D, 1, NAN, lo, hi, D, 1.0, &none),
                DPD_ERR_NON_FINITE, "intercept");
    CHECK(none == NULL);
}

/* Tiny data: y = 1 iff x_0 > 2; row 5 has x_0 = 10 and row 6 x_0 = -7, x_1 = 3, outside the
   public ranges [0, 4] x [-1, 1]. */
static const double X[N * D] = {0.5, 0.2, 1.0, -0.5, 1.5, 0.9, 3.0, 0.1,
                                3.5, -0.3, 10.0, 0.5, -7.0, 3.0, 2.5, -0.8};
static const double Y[N] = {0, 0, 0, 1, 1, 1, 0, 1};
static const double LO[D] = {0.0, -1.0}, HI[D] = {4.0, 1.0};

/* A fit with ranges (intercept `has_b`) against its exported parts, row by row, and its export
   re-imported bit for bit. */
static void check_fit(const dpd_plr_model *fit, int has_b) {
    double w[D], r = 0.0, b = 0.0, lo[D], hi[D], p[N], q[N];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_weights(fit, w, D, &n, &r));
    CHECK(n == D);
    if (has_b) {
        CHECK_OK(dpd_plr_model_intercept(fit, &b));
    } else {
        CHECK_FAILS(dpd_plr_model_intercept(fit, &b), DPD_ERR_INVALID_STATE, "no intercept");
    }
    CHECK_OK(dpd_plr_model_ranges(fit, lo, hi, D, &n));
    CHECK(n == D && memcmp(lo, LO, sizeof lo) == 0 && memcmp(hi, HI, sizeof hi) == 0);
    CHECK_OK(dpd_plr_model_predict_proba(fit, X, N * D, p, N, &n));
    CHECK(n == N);
    for (size_t i = 0; i < N; i++) {
        CHECK(fabs(p[i] - sigmoid(margin_by_hand(w, has_b, b, LO, HI, r, X + i * D))) < 1e-12);
    }
    /* The row outside its range predicts as the row clamped to it, (10, 0.5) as (4, 0.5). */
    const double clamped[D] = {4.0, 0.5};
    double pc = 0.0;
    CHECK_OK(dpd_plr_model_predict_proba(fit, clamped, D, &pc, 1, &n));
    CHECK(pc == p[5]);

    dpd_plr_model *back = NULL;
    CHECK_OK(dpd_plr_model_from_weights_and_ranges(w, D, (uint32_t)has_b, b, lo, hi, D, r, &back));
    CHECK_OK(dpd_plr_model_predict_proba(back, X, N * D, q, N, &n));
    CHECK(memcmp(p, q, sizeof p) == 0);
    dpd_plr_model_free(back);
}

static void test_fits(void) {
    dpd_dataset *data = NULL;
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &data));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(41, &rng));

    /* Non-private, with intercept: it separates the tiny data set. */
    dpd_plr_model *fit = NULL;
    CHECK_OK(dpd_plr_fit_with_ranges(data, INFINITY, 0.001, 1, LO, HI, D, rng, &fit));
    check_fit(fit, 1);
    double p[N];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_predict_proba(fit, X, N * D, p, N, &n));
    for (size_t i = 0; i < N; i++) CHECK((p[i] > 0.5) == (Y[i] == 1.0));
    double eps = 0.0;
    CHECK_OK(dpd_plr_model_info(fit, NULL, NULL, NULL, &eps));
    CHECK(isinf(eps));
    dpd_plr_model_free(fit);

    /* Private, with and without intercept. */
    CHECK_OK(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, HI, D, rng, &fit));
    check_fit(fit, 1);
    CHECK_OK(dpd_plr_model_info(fit, NULL, NULL, NULL, &eps));
    CHECK(eps == 1.0);
    dpd_plr_model_free(fit);
    CHECK_OK(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 0, LO, HI, D, rng, &fit));
    check_fit(fit, 0);
    dpd_plr_model_free(fit);

    dpd_rng_free(rng);
    dpd_dataset_free(data);
}

/* Bad ranges: refused before anything is drawn. A private fit on the same data set and
   generator afterwards equals one on a fresh copy of the data with a fresh generator of the
   same seed, bit for bit. */
static void test_bad_ranges(void) {
    dpd_dataset *data = NULL, *fresh = NULL;
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &data));
    CHECK_OK(dpd_dataset_new(X, N * D, D, Y, N, &fresh));
    dpd_rng *rng = NULL, *fresh_rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(99, &rng));
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(99, &fresh_rng));

    dpd_plr_model *none = NULL;
    const double flat[D] = {0.0, 1.0}, nan_hi[D] = {NAN, 1.0}, inf_lo[D] = {0.0, -INFINITY};
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, HI, 1, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "`n_ranges` = 1");
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, HI, 3, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "the data has 2");
    /* hi = (0, 1) against lo = (0, -1): column 0 is empty (lo = hi). */
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, flat, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 0");
    /* Reversed: lo = HI, hi = LO; column 0 is the first named. */
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, HI, LO, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 0");
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, nan_hi, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 0");
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, inf_lo, HI, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "column 1");
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, NULL, HI, D, rng, &none),
                DPD_ERR_NULL_POINTER, "lo");
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 2, LO, HI, D, rng, &none),
                DPD_ERR_INVALID_ARGUMENT, "`intercept` = 2");
    CHECK_FAILS(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, HI, D, rng, NULL),
                DPD_ERR_NULL_POINTER, "out");
    CHECK(none == NULL);

    dpd_plr_model *a = NULL, *b = NULL;
    CHECK_OK(dpd_plr_fit_with_ranges(data, 1.0, 0.01, 1, LO, HI, D, rng, &a));
    CHECK_OK(dpd_plr_fit_with_ranges(fresh, 1.0, 0.01, 1, LO, HI, D, fresh_rng, &b));
    double pa[N], pb[N];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_predict_proba(a, X, N * D, pa, N, &n));
    CHECK_OK(dpd_plr_model_predict_proba(b, X, N * D, pb, N, &n));
    CHECK(memcmp(pa, pb, sizeof pa) == 0);

    dpd_plr_model_free(a);
    dpd_plr_model_free(b);
    dpd_rng_free(rng);
    dpd_rng_free(fresh_rng);
    dpd_dataset_free(data);
    dpd_dataset_free(fresh);
}

int main(void) {
    test_imported();
    test_fits();
    test_bad_ranges();
    return check_exit("test_plr_ranges");
}
