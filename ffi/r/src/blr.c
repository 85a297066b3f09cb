/* Private Bayesian linear regression (DCA paper Alg. 2): settings, fit, model queries, the
 * building blocks (statistics, posterior, Gamma-prior fit), threshold search and metrics. */
#include "dpdist_r.h"

/* The settings list built by blr_settings() in R/blr.R, in this order. */
enum {
  S_EPSILON, S_DELTA, S_ASSUMED_X, S_ASSUMED_Y, S_AGGREGATION, S_N_NODES, S_MAX_DROPPED,
  S_SHARE_MODE, S_LAPLACE, S_SPLIT, S_PROJECTION, S_LAMBDA, S_LAMBDA0, S_RELEASE_YY, S_STD,
  S_STD_SHARE, S_PUBLIC_STD_X, S_PUBLIC_STD_Y, S_CLIPPED_SHARE, S_COUNT
};

enum { STD_PUBLIC = 2 }; /* 0 and 1 are DPD_BLR_STD_POOLED and DPD_BLR_STD_PER_DIMENSION */

typedef struct {
  double epsilon, delta, assumed_y, split[3], lambda, lambda0, std_share, public_std_y,
      clipped_share;
  const double *assumed_x, *public_std_x;
  size_t d, max_dropped, public_d;
  uint32_t aggregation, n_nodes, share_mode, laplace, projection, release_yy, std;
} settings_t;

/* Converts every field first (conversion failures signal before anything is allocated). */
static settings_t read_settings(SEXP s) {
  if (TYPEOF(s) != VECSXP || XLENGTH(s) != S_COUNT || !Rf_inherits(s, "dpdist_blr_settings"))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`settings` must come from blr_settings()");
  settings_t c;
  c.epsilon = dpdr_double(VECTOR_ELT(s, S_EPSILON), "epsilon");
  c.delta = dpdr_double(VECTOR_ELT(s, S_DELTA), "delta");
  c.assumed_x = dpdr_doubles(VECTOR_ELT(s, S_ASSUMED_X), "assumed_x");
  c.d = (size_t)XLENGTH(VECTOR_ELT(s, S_ASSUMED_X));
  c.assumed_y = dpdr_double(VECTOR_ELT(s, S_ASSUMED_Y), "assumed_y");
  c.aggregation = dpdr_u32(VECTOR_ELT(s, S_AGGREGATION), "aggregation");
  c.n_nodes = dpdr_u32(VECTOR_ELT(s, S_N_NODES), "n_nodes");
  c.max_dropped = dpdr_size(VECTOR_ELT(s, S_MAX_DROPPED), "max_dropped");
  c.share_mode = dpdr_u32(VECTOR_ELT(s, S_SHARE_MODE), "share_mode");
  c.laplace = dpdr_u32(VECTOR_ELT(s, S_LAPLACE), "laplace");
  SEXP split = VECTOR_ELT(s, S_SPLIT);
  if (TYPEOF(split) != REALSXP || XLENGTH(split) != 3)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`laplace_split` must hold 3 numbers");
  for (int k = 0; k < 3; k++) c.split[k] = REAL(split)[k];
  c.projection = dpdr_u32(VECTOR_ELT(s, S_PROJECTION), "projection");
  c.lambda = dpdr_double(VECTOR_ELT(s, S_LAMBDA), "lambda");
  c.lambda0 = dpdr_double(VECTOR_ELT(s, S_LAMBDA0), "lambda0");
  c.release_yy = dpdr_u32(VECTOR_ELT(s, S_RELEASE_YY), "release_yy");
  c.std = dpdr_u32(VECTOR_ELT(s, S_STD), "std");
  c.std_share = dpdr_double(VECTOR_ELT(s, S_STD_SHARE), "std_share");
  c.public_std_x = dpdr_doubles(VECTOR_ELT(s, S_PUBLIC_STD_X), "public_std_x");
  c.public_d = (size_t)XLENGTH(VECTOR_ELT(s, S_PUBLIC_STD_X));
  c.public_std_y = dpdr_double(VECTOR_ELT(s, S_PUBLIC_STD_Y), "public_std_y");
  c.clipped_share = dpdr_double(VECTOR_ELT(s, S_CLIPPED_SHARE), "clipped_share");
  return c;
}

/* Builds the C settings handle; on failure frees it and returns the status (no R error here,
 * so the caller can free its own resources before dpdr_check). */
static dpd_status new_config(const settings_t *c, dpd_blr_config **out) {
  dpd_blr_config *cfg = NULL;
  dpd_status st = dpd_blr_config_new(c->epsilon, c->delta, c->assumed_x, c->d, c->assumed_y, &cfg);
  if (st != DPD_OK) return st;
  if (c->aggregation == 1)
    st = dpd_blr_config_set_distributed(cfg, c->n_nodes, c->max_dropped, c->share_mode);
  else if (c->aggregation == 2)
    st = dpd_blr_config_set_input_perturbation(cfg);
  if (st == DPD_OK && c->laplace)
    st = dpd_blr_config_set_laplace(cfg, c->split[0], c->split[1], c->split[2]);
  if (st == DPD_OK) st = dpd_blr_config_set_projection(cfg, c->projection);
  if (st == DPD_OK && c->projection) {
    st = c->std == STD_PUBLIC ? dpd_blr_config_set_public_std(cfg, c->public_std_x, c->public_d,
                                                               c->public_std_y)
                              : dpd_blr_config_set_dp_std(cfg, c->std, c->std_share);
    if (st == DPD_OK) st = dpd_blr_config_set_clipped_share(cfg, c->clipped_share);
  }
  if (st == DPD_OK) st = dpd_blr_config_set_prior(cfg, c->lambda, c->lambda0);
  if (st == DPD_OK) st = dpd_blr_config_set_release_yy(cfg, c->release_yy);
  if (st != DPD_OK) {
    dpd_blr_config_free(cfg);
    return st;
  }
  *out = cfg;
  return DPD_OK;
}

static dpd_blr_model *model_of(SEXP x) {
  return (dpd_blr_model *)dpdr_handle(x, DPDR_BLR_MODEL, "model");
}

SEXP dpdr_blr_fit(SEXP x, SEXP y, SEXP settings, SEXP rng) {
  settings_t c = read_settings(settings);
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "x", &n, &d);
  const double *ys = dpdr_doubles(y, "y");
  if ((size_t)XLENGTH(y) != n)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`y` has %lld values, `x` %zu rows",
              (long long)XLENGTH(y), n);
  dpd_blr_config *cfg = NULL;
  dpd_blr_model *model = NULL;
  dpd_status st = new_config(&c, &cfg);
  if (st == DPD_OK) st = dpd_blr_fit(rows, n * d, ys, n, d, cfg, r, &model);
  dpd_blr_config_free(cfg);
  dpdr_check(st);
  return dpdr_wrap(model, DPDR_BLR_MODEL);
}

static dpd_status fill_mean(void *model, void *out, size_t cap, size_t *len) {
  return dpd_blr_model_mean((const dpd_blr_model *)model, (double *)out, cap, len);
}

static dpd_status fill_stats(void *model, void *out, size_t cap, size_t *len) {
  return dpd_blr_model_stats((const dpd_blr_model *)model, (double *)out, cap, len);
}

SEXP dpdr_blr_model_mean(SEXP model) {
  return dpdr_fetch(DPDR_DOUBLES, fill_mean, model_of(model), 0);
}

SEXP dpdr_blr_model_stats(SEXP model) {
  return dpdr_fetch(DPDR_DOUBLES, fill_stats, model_of(model), 0);
}

SEXP dpdr_blr_model_spent(SEXP model) {
  double eps = 0, delta = 0;
  dpdr_check(dpd_blr_model_spent(model_of(model), &eps, &delta));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 2));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
  REAL(out)[0] = eps;
  REAL(out)[1] = delta;
  SET_STRING_ELT(names, 0, Rf_mkChar("epsilon"));
  SET_STRING_ELT(names, 1, Rf_mkChar("delta"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

SEXP dpdr_blr_model_clipped_share(SEXP model) {
  double share[3] = {0, 0, 0};
  dpdr_check(dpd_blr_model_clipped_share(model_of(model), &share[0], &share[1], &share[2]));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 3));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 3));
  const char *name[3] = {"y", "x", "sd"};
  for (int k = 0; k < 3; k++) {
    REAL(out)[k] = share[k];
    SET_STRING_ELT(names, k, Rf_mkChar(name[k]));
  }
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

typedef struct {
  const dpd_blr_model *model;
  double bound_y;
} bounds_ctx;

static dpd_status fill_bounds(void *ctx, void *out, size_t cap, size_t *len) {
  bounds_ctx *b = (bounds_ctx *)ctx;
  return dpd_blr_model_bounds(b->model, (double *)out, cap, len, &b->bound_y);
}

SEXP dpdr_blr_model_bounds(SEXP model) {
  bounds_ctx ctx = {model_of(model), 0};
  SEXP bx = PROTECT(dpdr_fetch(DPDR_DOUBLES, fill_bounds, &ctx, 0));
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
  SET_VECTOR_ELT(out, 0, bx);
  SET_VECTOR_ELT(out, 1, Rf_ScalarReal(ctx.bound_y));
  SET_STRING_ELT(names, 0, Rf_mkChar("x"));
  SET_STRING_ELT(names, 1, Rf_mkChar("y"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(3);
  return out;
}

SEXP dpdr_blr_predict(SEXP model, SEXP x) {
  dpd_blr_model *m = model_of(model);
  size_t d_model = 0; /* a pure size query of the mean: the number of features */
  dpd_status st = dpd_blr_model_mean(m, NULL, 0, &d_model);
  if (st != DPD_ERR_BUFFER_TOO_SMALL) dpdr_check(st);
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "newdata", &n, &d);
  /* The C call only sees n * d values: a matrix of the wrong width could pass as other rows. */
  if (d != d_model)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`newdata` has %zu columns, the model reads %zu", d,
              d_model);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
  size_t len = 0;
  dpdr_check(dpd_blr_model_predict(m, rows, n * d, n > 0 ? REAL(out) : NULL, n, &len));
  UNPROTECT(1);
  return out;
}

SEXP dpdr_blr_fit_non_private(SEXP x, SEXP y, SEXP lambda, SEXP lambda0) {
  double lam = dpdr_double(lambda, "lambda"), lam0 = dpdr_double(lambda0, "lambda0");
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "x", &n, &d);
  const double *ys = dpdr_doubles(y, "y");
  size_t ny = (size_t)XLENGTH(y);
  if (ny != n)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`y` has %zu values, `x` %zu rows", ny, n);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)d));
  size_t len = 0;
  dpdr_check(dpd_blr_fit_non_private(rows, n * d, ys, n, d, lam, lam0, d > 0 ? REAL(out) : NULL,
                                     d, &len));
  UNPROTECT(1);
  return out;
}

/* Length of the sufficient statistics of d features: the upper triangle of x x^T, x y, and
 * y^2 when asked for (DESIGN.md, "Sufficient statistics"). */
static size_t stats_len(size_t d, uint32_t with_yy) {
  return d * (d + 1) / 2 + d + (with_yy ? 1 : 0);
}

typedef struct {
  const double *x_row;
  size_t d;
  double y;
  uint32_t with_yy;
} record_ctx;

static dpd_status fill_record_stats(void *ctx, void *out, size_t cap, size_t *len) {
  const record_ctx *r = (const record_ctx *)ctx;
  return dpd_blr_record_stats(r->x_row, r->d, r->y, r->with_yy, (double *)out, cap, len);
}

SEXP dpdr_blr_record_stats(SEXP x_row, SEXP y, SEXP with_yy) {
  record_ctx ctx;
  ctx.x_row = dpdr_doubles(x_row, "x_row");
  ctx.d = (size_t)XLENGTH(x_row);
  ctx.y = dpdr_double(y, "y");
  ctx.with_yy = dpdr_u32(with_yy, "with_yy");
  return dpdr_fetch(DPDR_DOUBLES, fill_record_stats, &ctx, stats_len(ctx.d, ctx.with_yy));
}

/* The statistics and the model sizes shared by the posterior mean and the Gamma-prior fit. */
typedef struct {
  const double *stats;
  size_t stats_len, n, d;
} stats_args;

static stats_args read_stats_args(SEXP stats, SEXP n, SEXP d) {
  stats_args a;
  a.stats = dpdr_doubles(stats, "stats");
  a.stats_len = (size_t)XLENGTH(stats);
  a.n = dpdr_size(n, "n");
  a.d = dpdr_size(d, "d");
  return a;
}

typedef struct {
  stats_args s;
  uint32_t with_yy;
  double lambda, lambda0;
} posterior_ctx;

static dpd_status fill_posterior_mean(void *ctx, void *out, size_t cap, size_t *len) {
  const posterior_ctx *p = (const posterior_ctx *)ctx;
  return dpd_blr_posterior_mean(p->s.stats, p->s.stats_len, p->s.n, p->s.d, p->with_yy,
                                p->lambda, p->lambda0, (double *)out, cap, len);
}

SEXP dpdr_blr_posterior_mean(SEXP stats, SEXP n, SEXP d, SEXP with_yy, SEXP lambda,
                             SEXP lambda0) {
  posterior_ctx ctx;
  ctx.s = read_stats_args(stats, n, d);
  ctx.with_yy = dpdr_u32(with_yy, "with_yy");
  ctx.lambda = dpdr_double(lambda, "lambda");
  ctx.lambda0 = dpdr_double(lambda0, "lambda0");
  return dpdr_fetch(DPDR_DOUBLES, fill_posterior_mean, &ctx, ctx.s.d);
}

typedef struct {
  stats_args s;
  const double *prior; /* a, b, a0, b0 */
  size_t max_iter;
  double tol;
  dpd_blr_cavi_info info;
} gamma_prior_ctx;

static dpd_status fill_gamma_prior(void *ctx, void *out, size_t cap, size_t *len) {
  gamma_prior_ctx *g = (gamma_prior_ctx *)ctx;
  const double *p = g->prior;
  return dpd_blr_fit_gamma_prior(g->s.stats, g->s.stats_len, g->s.n, g->s.d, p[0], p[1], p[2],
                                 p[3], g->max_iter, g->tol, (double *)out, cap, len, &g->info);
}

SEXP dpdr_blr_fit_gamma_prior(SEXP stats, SEXP n, SEXP d, SEXP prior, SEXP max_iter, SEXP tol) {
  gamma_prior_ctx ctx;
  ctx.s = read_stats_args(stats, n, d);
  if (TYPEOF(prior) != REALSXP || XLENGTH(prior) != 4)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`prior` must be c(a, b, a0, b0)");
  ctx.prior = REAL(prior);
  ctx.max_iter = dpdr_size(max_iter, "max_iter");
  ctx.tol = dpdr_double(tol, "tol");
  SEXP mean = PROTECT(dpdr_fetch(DPDR_DOUBLES, fill_gamma_prior, &ctx, ctx.s.d));
  const dpd_blr_cavi_info *info = &ctx.info;
  const char *keys[] = {"mean", "lambda_shape", "lambda_rate", "lambda0_shape", "lambda0_rate",
                        "iterations", "converged"};
  SEXP res = PROTECT(Rf_allocVector(VECSXP, 7));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 7));
  SET_VECTOR_ELT(res, 0, mean);
  SET_VECTOR_ELT(res, 1, Rf_ScalarReal(info->lambda_shape));
  SET_VECTOR_ELT(res, 2, Rf_ScalarReal(info->lambda_rate));
  SET_VECTOR_ELT(res, 3, Rf_ScalarReal(info->lambda0_shape));
  SET_VECTOR_ELT(res, 4, Rf_ScalarReal(info->lambda0_rate));
  SET_VECTOR_ELT(res, 5, Rf_ScalarReal((double)info->iterations));
  SET_VECTOR_ELT(res, 6, Rf_ScalarLogical(info->converged != 0));
  for (int k = 0; k < 7; k++) SET_STRING_ELT(names, k, Rf_mkChar(keys[k]));
  Rf_setAttrib(res, R_NamesSymbol, names);
  UNPROTECT(3);
  return res;
}

SEXP dpdr_blr_search_thresholds(SEXP sigma_x, SEXP sigma_y, SEXP n, SEXP settings, SEXP measure,
                                SEXP rng) {
  const double *sx = dpdr_doubles(sigma_x, "sigma_x");
  size_t d = (size_t)XLENGTH(sigma_x), nn = dpdr_size(n, "n");
  double sy = dpdr_double(sigma_y, "sigma_y");
  uint32_t meas = dpdr_u32(measure, "measure");
  settings_t c = read_settings(settings);
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_blr_config *cfg = NULL;
  double ox = 0, oy = 0, err = 0;
  dpd_status st = new_config(&c, &cfg);
  if (st == DPD_OK) st = dpd_blr_search_thresholds(sx, d, sy, nn, cfg, meas, r, &ox, &oy, &err);
  dpd_blr_config_free(cfg);
  dpdr_check(st);
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 3));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 3));
  REAL(out)[0] = ox;
  REAL(out)[1] = oy;
  REAL(out)[2] = err;
  SET_STRING_ELT(names, 0, Rf_mkChar("omega_x"));
  SET_STRING_ELT(names, 1, Rf_mkChar("omega_y"));
  SET_STRING_ELT(names, 2, Rf_mkChar("error"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

static SEXP metric(dpd_status (*f)(const double *, size_t, const double *, size_t, double *),
                   SEXP truth, SEXP predicted) {
  const double *t = dpdr_doubles(truth, "truth");
  const double *p = dpdr_doubles(predicted, "predicted");
  double out = 0;
  dpdr_check(f(t, (size_t)XLENGTH(truth), p, (size_t)XLENGTH(predicted), &out));
  return Rf_ScalarReal(out);
}

SEXP dpdr_mae(SEXP truth, SEXP predicted) { return metric(dpd_mae, truth, predicted); }
SEXP dpdr_rmse(SEXP truth, SEXP predicted) { return metric(dpd_rmse, truth, predicted); }
SEXP dpdr_spearman(SEXP truth, SEXP predicted) { return metric(dpd_spearman, truth, predicted); }
