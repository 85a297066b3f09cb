/* Private logistic regression and stacking from C: PLR, PST-S, PST-F and PST-H fits on
 * synthetic data, prediction, AUC (checked against a plain-C Mann-Whitney), model export with a
 * hand-computed prediction from the exported parts, import, and bad inputs; the intercept
 * (dpd_*_fit_with_intercept, dpd_plr_model_intercept, dpd_plr_model_from_weights_and_intercept)
 * against values computed by hand, and the old entry points equal to intercept = 0. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 400, D = 4 };

/* Synthetic data: x uniform in [-1, 1]^D, y = 1 iff w.x + small noise > 0, w = (2, -1, 0.5, 0). */
static void synthetic(uint64_t seed, double *x, double *y) {
    const double w[D] = {2.0, -1.0, 0.5, 0.0};
    uint64_t s = seed * 0x9E3779B97F4A7C15u + 1;
    for (size_t i = 0; i < N; i++) {
        double margin = 0.0;
        for (size_t j = 0; j < D; j++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            x[i * D + j] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            margin += w[j] * x[i * D + j];
        }
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double noise = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.5;
        y[i] = margin + noise > 0.0 ? 1.0 : 0.0;
    }
}

/* Mann-Whitney AUC by brute force, ties 1/2. */
static double auc_reference(const double *score, const double *y, size_t n) {
    double wins = 0.0, pairs = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (y[i] != 1.0) continue;
        for (size_t j = 0; j < n; j++) {
            if (y[j] != 0.0) continue;
            pairs += 1.0;
            wins += score[i] > score[j] ? 1.0 : (score[i] == score[j] ? 0.5 : 0.0);
        }
    }
    return wins / pairs;
}

static double auc_of(const dpd_plr_model *model, const double *x, const double *y) {
    static double p[N];
    size_t len = 0;
    CHECK_OK(dpd_plr_model_predict_proba(model, x, N * D, p, N, &len));
    CHECK(len == N);
    double auc = -1.0;
    CHECK_OK(dpd_auc(p, N, y, N, &auc));
    CHECK(fabs(auc - auc_reference(p, y, N)) < 1e-12);
    return auc;
}

static double sigmoid(double t) { return 1.0 / (1.0 + exp(-t)); }

/* w.phi(row) with phi(x) = x min(1, r/|x|) (x clipped into the ball of radius r), as documented
   for the exported models. */
static double margin(const double *w, double r, const double *row, size_t d) {
    double norm = 0.0, dot = 0.0;
    for (size_t j = 0; j < d; j++) norm += row[j] * row[j];
    norm = sqrt(norm);
    for (size_t j = 0; j < d; j++) dot += w[j] * row[j];
    return dot * (norm > r ? r / norm : 1.0);
}

/* Recomputes a stacked model's prediction of row 0 from its exported parts. */
static void check_export(const dpd_plr_model *model, const double *x) {
    size_t n_low = 0, n_features = 0;
    uint32_t kind = 99;
    CHECK_OK(dpd_plr_model_info(model, &kind, &n_features, &n_low, NULL));
    CHECK(kind == DPD_PLR_MODEL_STACKED && n_features == D && n_low >= 1 && n_low <= D);
    double meta[D];
    for (size_t k = 0; k < n_low; k++) {
        uint64_t features[D];
        double w[D], r = 0.0, row[D];
        size_t n = 0;
        CHECK(dpd_plr_model_low_level(model, k, NULL, 0, NULL, 0, &n, NULL) ==
              DPD_ERR_BUFFER_TOO_SMALL);
        CHECK(n >= 1 && n <= D);
        CHECK_OK(dpd_plr_model_low_level(model, k, features, D, w, D, &n, &r));
        for (size_t j = 0; j < n; j++) row[j] = x[features[j]];
        meta[k] = (2.0 * sigmoid(margin(w, r, row, n)) - 1.0) / sqrt((double)n_low);
    }
    double wh[D], rh = 0.0;
    size_t nh = 0;
    CHECK_OK(dpd_plr_model_weights(model, wh, D, &nh, &rh));
    CHECK(nh == n_low);
    double by_hand = sigmoid(margin(wh, rh, meta, n_low));
    double p = 0.0;
    size_t len = 0;
    CHECK_OK(dpd_plr_model_predict_proba(model, x, D, &p, 1, &len));
    CHECK(fabs(p - by_hand) < 1e-12);
    CHECK_FAILS(dpd_plr_model_low_level(model, n_low, NULL, 0, NULL, 0, &len, NULL),
                DPD_ERR_INVALID_ARGUMENT, "does not exist");
}

/* An intercept's model clips rows into the ball of radius r/sqrt(2) (the constant r/sqrt(2)
   shares the solver's ball of radius r) and adds b: the margin w.phi(row) + b. */
static double margin_with_intercept(const double *w, double b, double r, const double *row,
                                    size_t d) {
    return margin(w, r / sqrt(2.0), row, d) + b;
}

/* A stack with intercepts, recomputed from its exported parts for row 0 (as check_export). */
static void check_export_with_intercepts(const dpd_plr_model *model, const double *x) {
    size_t n_low = 0;
    CHECK_OK(dpd_plr_model_info(model, NULL, NULL, &n_low, NULL));
    CHECK(n_low >= 1 && n_low <= D);
    double meta[D];
    for (size_t k = 0; k < n_low; k++) {
        uint64_t features[D];
        double w[D], r = 0.0, b = NAN, row[D];
        size_t n = 0;
        CHECK_OK(dpd_plr_model_low_level(model, k, features, D, w, D, &n, &r));
        CHECK_OK(dpd_plr_model_low_level_intercept(model, k, &b));
        CHECK(isfinite(b));
        for (size_t j = 0; j < n; j++) row[j] = x[features[j]];
        meta[k] = (2.0 * sigmoid(margin_with_intercept(w, b, r, row, n)) - 1.0) /
                  sqrt((double)n_low);
    }
    double wh[D], rh = 0.0, bh = NAN;
    size_t nh = 0;
    CHECK_OK(dpd_plr_model_weights(model, wh, D, &nh, &rh));
    CHECK_OK(dpd_plr_model_intercept(model, &bh));
    double by_hand = sigmoid(margin_with_intercept(wh, bh, rh, meta, n_low));
    double p = 0.0;
    size_t len = 0;
    CHECK_OK(dpd_plr_model_predict_proba(model, x, D, &p, 1, &len));
    CHECK(fabs(p - by_hand) < 1e-12);
    double untouched = 42.0;
    CHECK_FAILS(dpd_plr_model_low_level_intercept(model, n_low, &untouched),
                DPD_ERR_INVALID_ARGUMENT, "does not exist");
    CHECK(untouched == 42.0);
}

/* Two models whose predictions on x are bit-for-bit equal, neither with an intercept. */
static void check_same_without_intercept(const dpd_plr_model *a, const dpd_plr_model *b,
                                         const double *x) {
    static double pa[N], pb[N];
    size_t n = 0;
    CHECK_OK(dpd_plr_model_predict_proba(a, x, N * D, pa, N, &n));
    CHECK_OK(dpd_plr_model_predict_proba(b, x, N * D, pb, N, &n));
    CHECK(memcmp(pa, pb, sizeof pa) == 0);
    double wa[D], wb[D], ra = 0.0, rb = 0.0;
    size_t na = 0, nb = 0;
    CHECK_OK(dpd_plr_model_weights(a, wa, D, &na, &ra));
    CHECK_OK(dpd_plr_model_weights(b, wb, D, &nb, &rb));
    CHECK(na == nb && memcmp(wa, wb, na * sizeof(double)) == 0 && ra == rb);
    double untouched = 42.0;
    CHECK_FAILS(dpd_plr_model_intercept(a, &untouched), DPD_ERR_INVALID_STATE, "no intercept");
    CHECK_FAILS(dpd_plr_model_intercept(b, &untouched), DPD_ERR_INVALID_STATE, "no intercept");
    CHECK(untouched == 42.0);
}

/* The intercept: an imported model against sigma(w.x + b) computed by hand, fits with an
   intercept against their exported parts, stacks, bad input, and the old entry points equal to
   the new ones with intercept = 0 (same seed, bit for bit). */
static void test_intercept(const dpd_dataset *data, const dpd_dataset *source,
                           const dpd_feature_groups *groups, const double *x) {
    /* w = (0.5, -1), b = 0.3, r = 2: rows are clipped to |x| <= sqrt(2).
       Row (1, 0.5) is inside: sigma(0.5 - 0.5 + 0.3) = sigma(0.3) = 0.574442516811659.
       Row (3, 4) is clipped to (3, 4) sqrt(2)/5: margin 0.3 - 0.5 sqrt(2), sigma of it
       0.39960606322120307 (both by hand, 1/(1 + exp(-t))). */
    const double w_known[2] = {0.5, -1.0};
    const double rows[4] = {1.0, 0.5, 3.0, 4.0};
    dpd_plr_model *known = NULL;
    CHECK_OK(dpd_plr_model_from_weights_and_intercept(w_known, 2, 0.3, 2.0, &known));
    double p[2] = {0.0, 0.0}, b = 0.0;
    size_t len = 0;
    CHECK_OK(dpd_plr_model_predict_proba(known, rows, 4, p, 2, &len));
    CHECK(len == 2);
    CHECK(fabs(p[0] - 0.574442516811659) < 1e-15);
    CHECK(fabs(p[1] - 0.39960606322120307) < 1e-15);
    CHECK_OK(dpd_plr_model_intercept(known, &b));
    CHECK(b == 0.3);
    uint32_t kind = 99;
    size_t n_features = 0;
    double eps = 0.0;
    CHECK_OK(dpd_plr_model_info(known, &kind, &n_features, NULL, &eps));
    CHECK(kind == DPD_PLR_MODEL_LOGISTIC && n_features == 2 && isnan(eps));
    /* The same weights without intercept: rows clipped to |x| <= 2, sigma(0.5 - 0.5) = 1/2. */
    dpd_plr_model *plain = NULL;
    CHECK_OK(dpd_plr_model_from_weights(w_known, 2, 2.0, &plain));
    CHECK_OK(dpd_plr_model_predict_proba(plain, rows, 2, p, 2, &len));
    CHECK(p[0] == 0.5);
    double untouched = 42.0;
    CHECK_FAILS(dpd_plr_model_intercept(plain, &untouched), DPD_ERR_INVALID_STATE,
                "no intercept");
    CHECK(untouched == 42.0);
    CHECK_FAILS(dpd_plr_model_low_level_intercept(known, 0, &untouched),
                DPD_ERR_INVALID_ARGUMENT, "single logistic model");
    CHECK_FAILS(dpd_plr_model_intercept(NULL, &untouched), DPD_ERR_NULL_POINTER, "`model`");
    CHECK_FAILS(dpd_plr_model_intercept(known, NULL), DPD_ERR_NULL_POINTER, "`out`");
    CHECK(untouched == 42.0);
    dpd_plr_model *none = (dpd_plr_model *)0x1;
    CHECK_FAILS(dpd_plr_model_from_weights_and_intercept(w_known, 2, NAN, 2.0, &none),
                DPD_ERR_NON_FINITE, "intercept");
    CHECK_FAILS(dpd_plr_model_from_weights_and_intercept(w_known, 0, 0.3, 2.0, &none),
                DPD_ERR_INVALID_ARGUMENT, "weights");
    CHECK_FAILS(dpd_plr_model_from_weights_and_intercept(NULL, 2, 0.3, 2.0, &none),
                DPD_ERR_NULL_POINTER, "weights");
    CHECK(none == (dpd_plr_model *)0x1);
    dpd_plr_model_free(plain);
    dpd_plr_model_free(known);

    /* Labels y = 1 iff x_0 > 0.5: a threshold off the origin, which only an intercept can
       place. The non-private fit puts the intercept below 0 and classifies well. */
    static double y_offset[N];
    for (size_t i = 0; i < N; i++) y_offset[i] = x[i * D] > 0.5 ? 1.0 : 0.0;
    dpd_dataset *offset = NULL;
    CHECK_OK(dpd_dataset_new(x, N * D, D, y_offset, N, &offset));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(7, &rng));
    dpd_plr_model *fit = NULL;
    CHECK_OK(dpd_plr_fit_with_intercept(offset, INFINITY, 0.001, 1, rng, &fit));
    double w[D], r = 0.0;
    size_t n = 0;
    CHECK_OK(dpd_plr_model_weights(fit, w, D, &n, &r));
    CHECK_OK(dpd_plr_model_intercept(fit, &b));
    printf("PLR with intercept: w0 %.3f, b %.3f\n", w[0], b);
    CHECK(w[0] > 0.0 && b < 0.0);
    double p_fit = 0.0;
    CHECK_OK(dpd_plr_model_predict_proba(fit, x, D, &p_fit, 1, &len));
    CHECK(fabs(p_fit - sigmoid(margin_with_intercept(w, b, r, x, D))) < 1e-12);
    double auc = auc_of(fit, x, y_offset);
    printf("PLR with intercept, offset labels, AUC %.4f\n", auc);
    CHECK(auc > 0.95);
    /* Export and re-import: identical predictions. */
    dpd_plr_model *imported = NULL;
    CHECK_OK(dpd_plr_model_from_weights_and_intercept(w, D, b, r, &imported));
    static double p1[N], p2[N];
    CHECK_OK(dpd_plr_model_predict_proba(fit, x, N * D, p1, N, &n));
    CHECK_OK(dpd_plr_model_predict_proba(imported, x, N * D, p2, N, &n));
    CHECK(memcmp(p1, p2, sizeof p1) == 0);
    dpd_plr_model_free(imported);
    dpd_plr_model_free(fit);
    /* A bad flag: refused, nothing made, nothing drawn from the rng (the next fit equals one
       from a fresh rng with the same seed). */
    fit = (dpd_plr_model *)0x1;
    CHECK_FAILS(dpd_plr_fit_with_intercept(offset, 1.0, 0.01, 2, rng, &fit),
                DPD_ERR_INVALID_ARGUMENT, "`intercept` = 2");
    CHECK_FAILS(dpd_pst_s_fit_with_intercept(offset, 2, 1.0, 0.01, 0.01, 0.5, 7, rng, &fit),
                DPD_ERR_INVALID_ARGUMENT, "`intercept`");
    CHECK_FAILS(dpd_pst_f_fit_with_intercept(offset, groups, 1.0, 0.01, 0.01, 0.5, 2, rng, &fit),
                DPD_ERR_INVALID_ARGUMENT, "`intercept`");
    CHECK_FAILS(dpd_pst_h_fit_with_intercept(source, offset, groups, 1.0, 1.0, 0.01, 0.01, 0.01,
                                             0.5, 2, rng, &fit),
                DPD_ERR_INVALID_ARGUMENT, "`intercept`");
    CHECK(fit == (dpd_plr_model *)0x1);
    dpd_rng_free(rng);

    /* Old entry points = new ones with intercept = 0, bit for bit, private fits, same seed. */
    dpd_rng *rng_old = NULL, *rng_new = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(11, &rng_old));
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(11, &rng_new));
    dpd_plr_model *old_model = NULL, *new_model = NULL;
    CHECK_OK(dpd_plr_fit(data, 1.0, 0.01, rng_old, &old_model));
    CHECK_OK(dpd_plr_fit_with_intercept(data, 1.0, 0.01, 0, rng_new, &new_model));
    check_same_without_intercept(old_model, new_model, x);
    dpd_plr_model_free(old_model);
    dpd_plr_model_free(new_model);
    CHECK_OK(dpd_pst_s_fit(data, 2, 2.0, 0.01, 0.01, 0.5, rng_old, &old_model));
    CHECK_OK(dpd_pst_s_fit_with_intercept(data, 2, 2.0, 0.01, 0.01, 0.5, 0, rng_new, &new_model));
    check_same_without_intercept(old_model, new_model, x);
    CHECK_FAILS(dpd_plr_model_low_level_intercept(old_model, 0, &untouched),
                DPD_ERR_INVALID_STATE, "no intercept");
    dpd_plr_model_free(old_model);
    dpd_plr_model_free(new_model);
    CHECK_OK(dpd_pst_f_fit(data, groups, 2.0, 0.01, 0.01, 0.5, rng_old, &old_model));
    CHECK_OK(dpd_pst_f_fit_with_intercept(data, groups, 2.0, 0.01, 0.01, 0.5, 0, rng_new,
                                          &new_model));
    check_same_without_intercept(old_model, new_model, x);
    dpd_plr_model_free(old_model);
    dpd_plr_model_free(new_model);
    CHECK_OK(dpd_pst_h_fit(source, data, groups, 2.0, 2.0, 0.01, 0.01, 0.01, 0.5, rng_old,
                           &old_model));
    CHECK_OK(dpd_pst_h_fit_with_intercept(source, data, groups, 2.0, 2.0, 0.01, 0.01, 0.01, 0.5,
                                          0, rng_new, &new_model));
    check_same_without_intercept(old_model, new_model, x);
    dpd_plr_model_free(old_model);
    dpd_plr_model_free(new_model);
    dpd_rng_free(rng_old);
    dpd_rng_free(rng_new);

    /* Stacks with intercepts: every level has one, predictions recomputed by hand from the
       exported parts. */
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(13, &rng));
    dpd_plr_model *stack = NULL;
    CHECK_OK(dpd_pst_s_fit_with_intercept(offset, 2, 2.0, 0.01, 0.01, 0.5, 1, rng, &stack));
    auc = auc_of(stack, x, y_offset);
    printf("PST-S with intercepts, offset labels, eps=2 AUC %.4f\n", auc);
    CHECK(auc > 0.75);
    check_export_with_intercepts(stack, x);
    dpd_plr_model_free(stack);
    CHECK_OK(dpd_pst_f_fit_with_intercept(offset, groups, 2.0, 0.01, 0.01, 0.5, 1, rng, &stack));
    check_export_with_intercepts(stack, x);
    dpd_plr_model_free(stack);
    CHECK_OK(dpd_pst_h_fit_with_intercept(source, offset, groups, 2.0, 2.0, 0.01, 0.01, 0.01,
                                          0.5, 1, rng, &stack));
    check_export_with_intercepts(stack, x);
    CHECK_OK(dpd_plr_model_info(stack, NULL, NULL, NULL, &eps));
    CHECK(eps == 2.0);
    dpd_plr_model_free(stack);
    dpd_rng_free(rng);
    dpd_dataset_free(offset);
}

/* The original entry points give what they gave before the intercept reached the C ABI: these
   values were printed (%a) by the same calls linked against the library built at 0980f78, on
   rows made with integer arithmetic (so every build sees the same doubles). */
static void test_old_entry_points_unchanged(void) {
    enum { NG = 200, DG = 3 };
    static double x[NG * DG], y[NG];
    for (int i = 0; i < NG; i++) {
        for (int j = 0; j < DG; j++)
            x[i * DG + j] = (double)((i * 7 + j * 13 + i * i) % 17 - 8) / 10.0;
        y[i] = x[i * DG] - x[i * DG + 1] + 0.5 * x[i * DG + 2] > 0.1 ? 1.0 : 0.0;
    }
    dpd_dataset *data = NULL;
    dpd_rng *rng = NULL;
    dpd_plr_model *m = NULL;
    CHECK_OK(dpd_dataset_new(x, NG * DG, DG, y, NG, &data));
    double w[DG], r = 0.0;
    size_t n = 0;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(21, &rng));
    CHECK_OK(dpd_plr_fit(data, 1.0, 0.01, rng, &m));
    CHECK_OK(dpd_plr_model_weights(m, w, DG, &n, &r));
    const double plr_before[DG] = {0x1.da9c4a04031dap+1, -0x1.eae277485aa48p+0,
                                   0x1.86b0d87a4fe9bp+0};
    CHECK(n == DG && memcmp(w, plr_before, sizeof w) == 0 && r == 1.0);
    dpd_plr_model_free(m);
    dpd_rng_free(rng);
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(5, &rng));
    CHECK_OK(dpd_pst_s_fit(data, 2, 2.0, 0.01, 0.01, 0.5, rng, &m));
    CHECK_OK(dpd_plr_model_weights(m, w, DG, &n, &r));
    const double pst_s_before[2] = {0x1.592585e8c1fa4p+0, 0x1.a84f93b521c58p+1};
    CHECK(n == 2 && memcmp(w, pst_s_before, sizeof pst_s_before) == 0 && r == 1.0);
    double p[3];
    CHECK_OK(dpd_plr_model_predict_proba(m, x, 3 * DG, p, 3, &n));
    const double p_before[3] = {0x1.4254ae62d87c7p-5, 0x1.1baba7456a67ep-1, 0x1.42a5712daac79p-5};
    CHECK(n == 3 && memcmp(p, p_before, sizeof p) == 0);
    dpd_plr_model_free(m);
    dpd_rng_free(rng);
    dpd_dataset_free(data);
}

int main(void) {
    static double x[N * D], y[N], xs[N * D], ys[N];
    synthetic(1, x, y);
    synthetic(2, xs, ys);
    dpd_dataset *data = NULL, *source = NULL;
    CHECK_OK(dpd_dataset_new(x, N * D, D, y, N, &data));
    CHECK_OK(dpd_dataset_new(xs, N * D, D, ys, N, &source));
    dpd_rng *rng = NULL;
    CHECK_OK(dpd_rng_new_insecure_fixed_seed(2024, &rng));

    /* PLR: non-private and private (fixed seed, so the thresholds are deterministic). */
    dpd_plr_model *plr = NULL;
    CHECK_OK(dpd_plr_fit(data, INFINITY, 0.01, rng, &plr));
    double auc = auc_of(plr, x, y);
    printf("PLR non-private AUC %.4f\n", auc);
    CHECK(auc > 0.95);
    double eps = 0.0;
    CHECK_OK(dpd_plr_model_info(plr, NULL, NULL, NULL, &eps));
    CHECK(isinf(eps));
    dpd_plr_model_free(plr);
    CHECK_OK(dpd_plr_fit(data, 1.0, 0.01, rng, &plr));
    auc = auc_of(plr, x, y);
    printf("PLR eps=1 AUC %.4f\n", auc);
    CHECK(auc > 0.75);
    CHECK_OK(dpd_plr_model_info(plr, NULL, NULL, NULL, &eps));
    CHECK(eps == 1.0);

    /* Export and re-import a single model: identical predictions. */
    double w[D], r = 0.0;
    size_t n = 0;
    CHECK_OK(dpd_plr_model_weights(plr, w, D, &n, &r));
    CHECK(n == D);
    dpd_plr_model *imported = NULL;
    CHECK_OK(dpd_plr_model_from_weights(w, D, r, &imported));
    double p1[N], p2[N];
    CHECK_OK(dpd_plr_model_predict_proba(plr, x, N * D, p1, N, &n));
    CHECK_OK(dpd_plr_model_predict_proba(imported, x, N * D, p2, N, &n));
    CHECK(memcmp(p1, p2, sizeof p1) == 0);
    CHECK(fabs(p1[0] - sigmoid(margin(w, r, x, D))) < 1e-12);
    CHECK_OK(dpd_plr_model_info(imported, NULL, NULL, NULL, &eps));
    CHECK(isnan(eps));
    CHECK_FAILS(dpd_plr_model_low_level(plr, 0, NULL, 0, NULL, 0, &n, NULL),
                DPD_ERR_INVALID_ARGUMENT, "single logistic model");
    CHECK_FAILS(dpd_plr_model_predict_proba(plr, x, D + 1, p1, N, &n), DPD_ERR_LENGTH_MISMATCH,
                "multiple");
    dpd_plr_model_free(imported);
    dpd_plr_model_free(plr);

    /* PST-S, PST-F, PST-H. */
    dpd_plr_model *stack = NULL;
    CHECK_OK(dpd_pst_s_fit(data, 2, 2.0, 0.01, 0.01, 0.5, rng, &stack));
    auc = auc_of(stack, x, y);
    printf("PST-S eps=2 AUC %.4f\n", auc);
    CHECK(auc > 0.75);
    check_export(stack, x);
    dpd_plr_model_free(stack);

    const uint32_t group_of_feature[D] = {0, 0, 1, DPD_FEATURE_UNUSED};
    const double importance[2] = {0.7, 0.3}; /* side information, not the data */
    dpd_feature_groups *groups = NULL;
    CHECK_OK(dpd_feature_groups_new(group_of_feature, D, importance, 2, &groups));
    CHECK_OK(dpd_pst_f_fit(data, groups, 2.0, 0.01, 0.01, 0.5, rng, &stack));
    auc = auc_of(stack, x, y);
    printf("PST-F eps=2 AUC %.4f\n", auc);
    CHECK(auc > 0.75);
    check_export(stack, x);
    dpd_plr_model_free(stack);

    CHECK_OK(dpd_pst_h_fit(source, data, groups, 2.0, 2.0, 0.01, 0.01, 0.01, 0.5, rng, &stack));
    auc = auc_of(stack, x, y);
    printf("PST-H eps=2+2 AUC %.4f\n", auc);
    CHECK(auc > 0.75);
    check_export(stack, x);
    CHECK_OK(dpd_plr_model_info(stack, NULL, NULL, NULL, &eps));
    CHECK(eps == 2.0);
    dpd_plr_model_free(stack);

    /* Bad inputs. */
    dpd_dataset *bad = (dpd_dataset *)0x1;
    double y_bad[N];
    memcpy(y_bad, y, sizeof y_bad);
    y_bad[5] = 2.0;
    CHECK_FAILS(dpd_dataset_new(x, N * D, D, y_bad, N, &bad), DPD_ERR_INVALID_ARGUMENT, "label");
    CHECK_FAILS(dpd_dataset_new(x, N * D - 1, D, y, N, &bad), DPD_ERR_LENGTH_MISMATCH, "n_rows");
    double x_nan[N * D];
    memcpy(x_nan, x, sizeof x_nan);
    x_nan[7] = NAN;
    CHECK_FAILS(dpd_dataset_new(x_nan, N * D, D, y, N, &bad), DPD_ERR_NON_FINITE, "");
    double y_one[N];
    for (size_t i = 0; i < N; i++) y_one[i] = 1.0;
    CHECK(bad == (dpd_dataset *)0x1);
    /* One class is a valid training set, but AUC needs both classes. */
    double a = -1.0;
    CHECK_FAILS(dpd_auc(p1, N, y_one, N, &a), DPD_ERR_INVALID_ARGUMENT, "one class");
    dpd_plr_model *none = (dpd_plr_model *)0x1;
    CHECK_FAILS(dpd_plr_fit(data, 1.0, 0.0, rng, &none), DPD_ERR_INVALID_ARGUMENT, "lambda");
    CHECK_FAILS(dpd_plr_fit(data, -1.0, 0.1, rng, &none), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "epsilon");
    CHECK_FAILS(dpd_plr_fit(data, 1e3, 0.1, rng, &none), DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "[1e-6, 100]");
    CHECK_FAILS(dpd_pst_s_fit(data, 2, NAN, 0.1, 0.1, 0.5, rng, &none),
                DPD_ERR_INVALID_PRIVACY_PARAMETER, "epsilon");
    CHECK_FAILS(dpd_plr_fit(NULL, 1.0, 0.1, rng, &none), DPD_ERR_NULL_POINTER, "`dataset`");
    CHECK_FAILS(dpd_pst_s_fit(data, 0, 1.0, 0.1, 0.1, 0.5, rng, &none), DPD_ERR_INVALID_ARGUMENT,
                "n_parts");
    CHECK_FAILS(dpd_pst_s_fit(data, 2, 1.0, 0.1, 0.1, 1.0, rng, &none), DPD_ERR_INVALID_ARGUMENT,
                "high_fraction");
    CHECK(none == (dpd_plr_model *)0x1);
    dpd_feature_groups *bad_groups = (dpd_feature_groups *)0x1;
    const uint32_t out_of_range[D] = {0, 3, 1, 1};
    CHECK_FAILS(dpd_feature_groups_new(out_of_range, D, importance, 2, &bad_groups),
                DPD_ERR_INVALID_ARGUMENT, "group 3");
    const double not_one[2] = {0.7, 0.7};
    CHECK_FAILS(dpd_feature_groups_new(group_of_feature, D, not_one, 2, &bad_groups),
                DPD_ERR_INVALID_ARGUMENT, "");
    CHECK(bad_groups == (dpd_feature_groups *)0x1);
    CHECK_FAILS(dpd_auc(p1, N, y, N - 1, &a), DPD_ERR_LENGTH_MISMATCH, "");
    CHECK(a == -1.0);

    test_intercept(data, source, groups, x);
    test_old_entry_points_unchanged();

    dpd_feature_groups_free(groups);
    dpd_dataset_free(source);
    dpd_dataset_free(data);
    dpd_rng_free(rng);
    dpd_dataset_free(NULL);
    dpd_feature_groups_free(NULL);
    dpd_plr_model_free(NULL);
    return check_exit("test_plr");
}
