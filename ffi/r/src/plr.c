/* Private logistic regression (objective perturbation) and the stacking ensembles PST-S/F/H. */
#include <math.h>

#include "dpdist_r.h"

/* A dataset handle lives only inside one call: built from an R matrix and label vector,
 * freed before the status of the call that used it is turned into an R condition. */
static dpd_dataset *new_dataset(SEXP x, SEXP y, const char *xname, const char *yname) {
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, xname, &n, &d);
  const double *labels = dpdr_doubles(y, yname);
  dpd_dataset *ds = NULL;
  dpdr_check(dpd_dataset_new(rows, n * d, d, labels, (size_t)XLENGTH(y), &ds));
  return ds;
}

/* groups: R integer vector, one 1-based group per feature or NA (unused). */
static dpd_feature_groups *new_groups(SEXP groups, SEXP importance) {
  if (TYPEOF(groups) != INTSXP)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`groups` must be an integer vector");
  R_xlen_t d = XLENGTH(groups);
  uint32_t *of = (uint32_t *)R_alloc(d > 0 ? (size_t)d : 1, sizeof(uint32_t));
  for (R_xlen_t j = 0; j < d; j++) {
    int g = INTEGER(groups)[j];
    if (g == NA_INTEGER) {
      of[j] = DPD_FEATURE_UNUSED;
    } else if (g < 1) {
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`groups`[%lld] = %d: groups are numbered from 1",
                (long long)j + 1, g);
    } else {
      of[j] = (uint32_t)(g - 1);
    }
  }
  const double *q = dpdr_doubles(importance, "importance");
  dpd_feature_groups *out = NULL;
  dpdr_check(dpd_feature_groups_new(d > 0 ? of : NULL, (size_t)d, q, (size_t)XLENGTH(importance),
                                    &out));
  return out;
}

/* R's TRUE/FALSE as the C ABI's 0/1 intercept flag. */
static uint32_t intercept_flag(SEXP intercept) {
  if (TYPEOF(intercept) != LGLSXP || XLENGTH(intercept) != 1 ||
      LOGICAL(intercept)[0] == NA_LOGICAL)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`intercept` must be TRUE or FALSE");
  return LOGICAL(intercept)[0] ? 1u : 0u;
}

/* Public ranges of a stacked fit: none (lo = hi = NULL from R) or one pair per column, checked
 * and named 1-based by the R side, then by the C ABI (0-based) before anything is drawn. */
typedef struct {
  const double *lo, *hi;
  size_t n;
} ranges_arg;

static ranges_arg ranges_of(SEXP lo, SEXP hi) {
  ranges_arg r = {NULL, NULL, 0};
  if (Rf_isNull(lo) && Rf_isNull(hi)) return r;
  r.lo = dpdr_doubles(lo, "lo");
  r.hi = dpdr_doubles(hi, "hi");
  if (XLENGTH(lo) != XLENGTH(hi))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`lo` has %lld values, `hi` %lld",
              (long long)XLENGTH(lo), (long long)XLENGTH(hi));
  r.n = (size_t)XLENGTH(lo);
  return r;
}

static SEXP finish_fit(dpd_status st, dpd_plr_model *model) {
  dpdr_check(st);
  return dpdr_wrap(model, DPDR_PLR_MODEL);
}

SEXP dpdr_plr_fit(SEXP x, SEXP y, SEXP epsilon, SEXP lambda, SEXP intercept, SEXP rng) {
  double eps = dpdr_double(epsilon, "epsilon"), lam = dpdr_double(lambda, "lambda");
  uint32_t with_b = intercept_flag(intercept);
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_dataset *ds = new_dataset(x, y, "x", "y");
  dpd_plr_model *model = NULL;
  dpd_status st = dpd_plr_fit_with_intercept(ds, eps, lam, with_b, r, &model);
  dpd_dataset_free(ds);
  return finish_fit(st, model);
}

/* PLR with public feature ranges: lo, hi one per column of x (checked by the C ABI, which names
 * a bad column 0-based; the R side checks and names them 1-based first). */
SEXP dpdr_plr_fit_with_ranges(SEXP x, SEXP y, SEXP epsilon, SEXP lambda, SEXP intercept, SEXP lo,
                              SEXP hi, SEXP rng) {
  double eps = dpdr_double(epsilon, "epsilon"), lam = dpdr_double(lambda, "lambda");
  uint32_t with_b = intercept_flag(intercept);
  const double *l = dpdr_doubles(lo, "lo");
  const double *h = dpdr_doubles(hi, "hi");
  if (XLENGTH(lo) != XLENGTH(hi))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`lo` has %lld values, `hi` %lld",
              (long long)XLENGTH(lo), (long long)XLENGTH(hi));
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_dataset *ds = new_dataset(x, y, "x", "y");
  dpd_plr_model *model = NULL;
  dpd_status st =
      dpd_plr_fit_with_ranges(ds, eps, lam, with_b, l, h, (size_t)XLENGTH(lo), r, &model);
  dpd_dataset_free(ds);
  return finish_fit(st, model);
}

SEXP dpdr_pst_s_fit(SEXP x, SEXP y, SEXP n_parts, SEXP epsilon, SEXP lambda, SEXP lambda_high,
                    SEXP high_fraction, SEXP intercept, SEXP lo, SEXP hi, SEXP rng) {
  size_t parts = dpdr_size(n_parts, "n_parts");
  uint32_t with_b = intercept_flag(intercept);
  ranges_arg rg = ranges_of(lo, hi);
  double eps = dpdr_double(epsilon, "epsilon"), lam = dpdr_double(lambda, "lambda");
  double lam_hi = dpdr_double(lambda_high, "lambda_high");
  double frac = dpdr_double(high_fraction, "high_fraction");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_dataset *ds = new_dataset(x, y, "x", "y");
  dpd_plr_model *model = NULL;
  dpd_status st =
      rg.lo == NULL
          ? dpd_pst_s_fit_with_intercept(ds, parts, eps, lam, lam_hi, frac, with_b, r, &model)
          : dpd_pst_s_fit_with_ranges(ds, parts, eps, lam, lam_hi, frac, with_b, rg.lo, rg.hi,
                                      rg.n, r, &model);
  dpd_dataset_free(ds);
  return finish_fit(st, model);
}

SEXP dpdr_pst_f_fit(SEXP x, SEXP y, SEXP groups, SEXP importance, SEXP epsilon, SEXP lambda,
                    SEXP lambda_high, SEXP high_fraction, SEXP intercept, SEXP lo, SEXP hi,
                    SEXP rng) {
  uint32_t with_b = intercept_flag(intercept);
  ranges_arg rg = ranges_of(lo, hi);
  double eps = dpdr_double(epsilon, "epsilon"), lam = dpdr_double(lambda, "lambda");
  double lam_hi = dpdr_double(lambda_high, "lambda_high");
  double frac = dpdr_double(high_fraction, "high_fraction");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "x", &n, &d);
  const double *labels = dpdr_doubles(y, "y");
  dpd_feature_groups *fg = new_groups(groups, importance); /* last step that can signal */
  dpd_dataset *ds = NULL;
  dpd_plr_model *model = NULL;
  dpd_status st = dpd_dataset_new(rows, n * d, d, labels, (size_t)XLENGTH(y), &ds);
  if (st == DPD_OK)
    st = rg.lo == NULL
             ? dpd_pst_f_fit_with_intercept(ds, fg, eps, lam, lam_hi, frac, with_b, r, &model)
             : dpd_pst_f_fit_with_ranges(ds, fg, eps, lam, lam_hi, frac, with_b, rg.lo, rg.hi,
                                         rg.n, r, &model);
  dpd_dataset_free(ds);
  dpd_feature_groups_free(fg);
  return finish_fit(st, model);
}

SEXP dpdr_pst_h_fit(SEXP xs, SEXP ys, SEXP xt, SEXP yt, SEXP groups, SEXP importance,
                    SEXP eps_source, SEXP eps_target, SEXP lam_source, SEXP lam_target,
                    SEXP lambda_high, SEXP high_fraction, SEXP intercept, SEXP lo, SEXP hi,
                    SEXP rng) {
  uint32_t with_b = intercept_flag(intercept);
  ranges_arg rg = ranges_of(lo, hi);
  double es = dpdr_double(eps_source, "epsilon_source");
  double et = dpdr_double(eps_target, "epsilon_target");
  double ls = dpdr_double(lam_source, "lambda_source");
  double lt = dpdr_double(lam_target, "lambda_target");
  double lam_hi = dpdr_double(lambda_high, "lambda_high");
  double frac = dpdr_double(high_fraction, "high_fraction");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  size_t ns = 0, ds_ = 0, nt = 0, dt = 0;
  const double *rs = dpdr_row_major(xs, "source_x", &ns, &ds_);
  const double *rt = dpdr_row_major(xt, "target_x", &nt, &dt);
  const double *ls_ = dpdr_doubles(ys, "source_y");
  const double *lt_ = dpdr_doubles(yt, "target_y");
  dpd_feature_groups *fg = new_groups(groups, importance); /* last step that can signal */
  dpd_dataset *src = NULL, *tgt = NULL;
  dpd_plr_model *model = NULL;
  dpd_status st = dpd_dataset_new(rs, ns * ds_, ds_, ls_, (size_t)XLENGTH(ys), &src);
  if (st == DPD_OK) st = dpd_dataset_new(rt, nt * dt, dt, lt_, (size_t)XLENGTH(yt), &tgt);
  if (st == DPD_OK)
    st = rg.lo == NULL ? dpd_pst_h_fit_with_intercept(src, tgt, fg, es, et, ls, lt, lam_hi, frac,
                                                      with_b, r, &model)
                       : dpd_pst_h_fit_with_ranges(src, tgt, fg, es, et, ls, lt, lam_hi, frac,
                                                   with_b, rg.lo, rg.hi, rg.n, r, &model);
  dpd_dataset_free(src);
  dpd_dataset_free(tgt);
  dpd_feature_groups_free(fg);
  return finish_fit(st, model);
}

static dpd_plr_model *model_of(SEXP x) {
  return (dpd_plr_model *)dpdr_handle(x, DPDR_PLR_MODEL, "model");
}

SEXP dpdr_plr_predict_proba(SEXP model, SEXP x) {
  dpd_plr_model *m = model_of(model);
  size_t n_features = 0;
  dpdr_check(dpd_plr_model_info(m, NULL, &n_features, NULL, NULL));
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "newdata", &n, &d);
  /* The C call only sees n * d values: a matrix of the wrong width could pass as other rows. */
  if (d != n_features)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`newdata` has %zu columns, the model reads %zu", d,
              n_features);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
  size_t len = 0;
  dpdr_check(dpd_plr_model_predict_proba(m, rows, n * d, n > 0 ? REAL(out) : NULL, n, &len));
  if (len != n)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "expected %zu predictions, the library gave %zu", n, len);
  UNPROTECT(1);
  return out;
}

SEXP dpdr_plr_model_info(SEXP model) {
  uint32_t kind = 0;
  size_t n_features = 0, n_low = 0;
  double eps = 0;
  dpdr_check(dpd_plr_model_info(model_of(model), &kind, &n_features, &n_low, &eps));
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 4));
  SET_VECTOR_ELT(out, 0, Rf_mkString(kind == DPD_PLR_MODEL_STACKED ? "stacked" : "logistic"));
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal((double)n_features));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal((double)n_low));
  SET_VECTOR_ELT(out, 3, Rf_ScalarReal(eps));
  const char *nm[] = {"kind", "n_features", "n_low_level", "epsilon"};
  for (int i = 0; i < 4; i++) SET_STRING_ELT(names, i, Rf_mkChar(nm[i]));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

typedef struct {
  const dpd_plr_model *model;
  double input_radius;
} weights_ctx;

static dpd_status fill_weights(void *ctx, void *out, size_t cap, size_t *len) {
  weights_ctx *w = (weights_ctx *)ctx;
  return dpd_plr_model_weights(w->model, (double *)out, cap, len, &w->input_radius);
}

SEXP dpdr_plr_model_weights(SEXP model) {
  weights_ctx ctx = {model_of(model), 0};
  SEXP w = PROTECT(dpdr_fetch(DPDR_DOUBLES, fill_weights, &ctx, 0));
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
  SET_VECTOR_ELT(out, 0, w);
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal(ctx.input_radius));
  SET_STRING_ELT(names, 0, Rf_mkChar("weights"));
  SET_STRING_ELT(names, 1, Rf_mkChar("input_radius"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(3);
  return out;
}

/* The weights are the fetched array; the feature indices come in the same call, into a buffer
 * of the same capacity that the fill allocates for itself (R_alloc: freed when .Call returns). */
typedef struct {
  const dpd_plr_model *model;
  size_t k;
  uint64_t *features;
  double input_radius;
} low_level_ctx;

static dpd_status fill_low_level(void *ctx, void *out, size_t cap, size_t *len) {
  low_level_ctx *l = (low_level_ctx *)ctx;
  l->features = cap > 0 ? (uint64_t *)R_alloc(cap, sizeof(uint64_t)) : NULL;
  return dpd_plr_model_low_level(l->model, l->k, l->features, cap, (double *)out, cap, len,
                                 &l->input_radius);
}

/* Low-level model k (1-based from R) of a stack: features (1-based), weights, radius. */
SEXP dpdr_plr_model_low_level(SEXP model, SEXP k) {
  low_level_ctx ctx = {model_of(model), dpdr_size(k, "k"), NULL, 0};
  if (ctx.k < 1) dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`k` counts low-level models from 1");
  ctx.k -= 1;
  SEXP w = PROTECT(dpdr_fetch(DPDR_DOUBLES, fill_low_level, &ctx, 0));
  size_t len = (size_t)XLENGTH(w);
  SEXP f = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)len));
  for (size_t i = 0; i < len; i++) REAL(f)[i] = (double)ctx.features[i] + 1;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 3));
  SET_VECTOR_ELT(out, 0, f);
  SET_VECTOR_ELT(out, 1, w);
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal(ctx.input_radius));
  SET_STRING_ELT(names, 0, Rf_mkChar("features"));
  SET_STRING_ELT(names, 1, Rf_mkChar("weights"));
  SET_STRING_ELT(names, 2, Rf_mkChar("input_radius"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(4);
  return out;
}

SEXP dpdr_plr_model_from_weights(SEXP weights, SEXP input_radius) {
  const double *w = dpdr_doubles(weights, "weights");
  double r = dpdr_double(input_radius, "input_radius");
  dpd_plr_model *m = NULL;
  dpdr_check(dpd_plr_model_from_weights(w, (size_t)XLENGTH(weights), r, &m));
  return dpdr_wrap(m, DPDR_PLR_MODEL);
}

/* The intercept of a single model or a stack's high level (k = 0), or of low-level model k
 * (1-based) of a stack; NA when the model has none (the C ABI's DPD_ERR_INVALID_STATE). */
SEXP dpdr_plr_model_intercept(SEXP model, SEXP k) {
  dpd_plr_model *m = model_of(model);
  size_t level = dpdr_size(k, "k");
  double b = 0.0;
  dpd_status st = level == 0 ? dpd_plr_model_intercept(m, &b)
                             : dpd_plr_model_low_level_intercept(m, level - 1, &b);
  if (st == DPD_ERR_INVALID_STATE) return Rf_ScalarReal(NA_REAL);
  dpdr_check(st);
  return Rf_ScalarReal(b);
}

SEXP dpdr_plr_model_from_weights_and_intercept(SEXP weights, SEXP intercept, SEXP input_radius) {
  const double *w = dpdr_doubles(weights, "weights");
  double b = dpdr_double(intercept, "intercept");
  double r = dpdr_double(input_radius, "input_radius");
  dpd_plr_model *m = NULL;
  dpdr_check(dpd_plr_model_from_weights_and_intercept(w, (size_t)XLENGTH(weights), b, r, &m));
  return dpdr_wrap(m, DPDR_PLR_MODEL);
}

/* The public ranges of a single model (k = 0) or of low-level model k (1-based) of a stack:
 * list(lo, hi), or NULL for a model without them (the C ABI's DPD_ERR_INVALID_STATE). */
static dpd_status model_ranges(const dpd_plr_model *m, size_t k, double *lo, double *hi,
                               size_t cap, size_t *len) {
  return k == 0 ? dpd_plr_model_ranges(m, lo, hi, cap, len)
                : dpd_plr_model_low_level_ranges(m, k - 1, lo, hi, cap, len);
}

SEXP dpdr_plr_model_ranges(SEXP model, SEXP k) {
  dpd_plr_model *m = model_of(model);
  size_t level = dpdr_size(k, "k");
  size_t len = 0;
  dpd_status st = model_ranges(m, level, NULL, NULL, 0, &len);
  if (st == DPD_ERR_INVALID_STATE) return R_NilValue;
  if (st != DPD_ERR_BUFFER_TOO_SMALL) dpdr_check(st);
  SEXP lo = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)len));
  SEXP hi = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)len));
  size_t got = 0;
  dpd_status st2 = model_ranges(m, level, REAL(lo), REAL(hi), len, &got);
  if (st2 != DPD_OK) {
    UNPROTECT(2);
    dpdr_check(st2);
  }
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
  SET_VECTOR_ELT(out, 0, lo);
  SET_VECTOR_ELT(out, 1, hi);
  SET_STRING_ELT(names, 0, Rf_mkChar("lo"));
  SET_STRING_ELT(names, 1, Rf_mkChar("hi"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(4);
  return out;
}

SEXP dpdr_plr_model_from_weights_and_ranges(SEXP weights, SEXP intercept, SEXP lo, SEXP hi,
                                            SEXP input_radius) {
  const double *w = dpdr_doubles(weights, "weights");
  double r = dpdr_double(input_radius, "input_radius");
  const double *l = dpdr_doubles(lo, "lo");
  const double *h = dpdr_doubles(hi, "hi");
  if (XLENGTH(lo) != XLENGTH(hi))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`lo` has %lld values, `hi` %lld",
              (long long)XLENGTH(lo), (long long)XLENGTH(hi));
  uint32_t with_b = Rf_isNull(intercept) ? 0u : 1u;
  double b = with_b ? dpdr_double(intercept, "intercept") : 0.0;
  dpd_plr_model *m = NULL;
  dpdr_check(dpd_plr_model_from_weights_and_ranges(w, (size_t)XLENGTH(weights), with_b, b, l, h,
                                                   (size_t)XLENGTH(lo), r, &m));
  return dpdr_wrap(m, DPDR_PLR_MODEL);
}

SEXP dpdr_auc(SEXP scores, SEXP labels) {
  const double *s = dpdr_doubles(scores, "scores");
  const double *l = dpdr_doubles(labels, "labels");
  double out = 0;
  dpdr_check(dpd_auc(s, (size_t)XLENGTH(scores), l, (size_t)XLENGTH(labels), &out));
  return Rf_ScalarReal(out);
}
