/* Iterative private learning over DCA rounds (DCA paper Sec. 4.2) and the Renyi-DP accountant
 * of the sampled Gaussian: settings, calibration, the trainer, its steps, parameters,
 * predictions and the privacy spent. */
#include <math.h>

#include "dpdist_r.h"

/* The settings list built by iterative_settings() in R/iterative.R, in this order. */
enum {
  S_MODEL, S_L2, S_NOISE_PRECISION, S_PRIOR_PRECISION, S_SAMPLING, S_RATE, S_BATCH, S_OPTIMIZER,
  S_LEARNING_RATE, S_BETA1, S_BETA2, S_ADAM_EPSILON, S_CLIP_NORM, S_N_NODES, S_MAX_DROPPED,
  S_PRIVATE, S_EPSILON, S_DELTA, S_NOISE_MULTIPLIER, S_INTERCEPT, S_COUNT
};

typedef struct {
  uint32_t model, sampling, optimizer, n_nodes, is_private, intercept;
  double l2, noise_precision, prior_precision, rate, learning_rate, beta1, beta2, adam_epsilon,
      clip_norm, epsilon, delta, noise_multiplier; /* noise_multiplier NaN: calibrate */
  size_t batch, max_dropped;
} settings_t;

/* Converts every field first (conversion failures signal before anything is allocated). */
static settings_t read_settings(SEXP s) {
  if (TYPEOF(s) != VECSXP || XLENGTH(s) != S_COUNT ||
      !Rf_inherits(s, "dpdist_iterative_settings"))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`settings` must come from iterative_settings()");
  settings_t c;
  c.model = dpdr_u32(VECTOR_ELT(s, S_MODEL), "model");
  c.l2 = dpdr_double(VECTOR_ELT(s, S_L2), "l2");
  c.noise_precision = dpdr_double(VECTOR_ELT(s, S_NOISE_PRECISION), "noise_precision");
  c.prior_precision = dpdr_double(VECTOR_ELT(s, S_PRIOR_PRECISION), "prior_precision");
  c.sampling = dpdr_u32(VECTOR_ELT(s, S_SAMPLING), "sampling");
  c.rate = dpdr_double(VECTOR_ELT(s, S_RATE), "rate");
  c.batch = dpdr_size(VECTOR_ELT(s, S_BATCH), "batch");
  c.optimizer = dpdr_u32(VECTOR_ELT(s, S_OPTIMIZER), "optimizer");
  c.learning_rate = dpdr_double(VECTOR_ELT(s, S_LEARNING_RATE), "learning_rate");
  c.beta1 = dpdr_double(VECTOR_ELT(s, S_BETA1), "beta1");
  c.beta2 = dpdr_double(VECTOR_ELT(s, S_BETA2), "beta2");
  c.adam_epsilon = dpdr_double(VECTOR_ELT(s, S_ADAM_EPSILON), "adam_epsilon");
  c.clip_norm = dpdr_double(VECTOR_ELT(s, S_CLIP_NORM), "clip_norm");
  c.n_nodes = dpdr_u32(VECTOR_ELT(s, S_N_NODES), "n_nodes");
  c.max_dropped = dpdr_size(VECTOR_ELT(s, S_MAX_DROPPED), "max_dropped");
  c.is_private = dpdr_u32(VECTOR_ELT(s, S_PRIVATE), "private");
  c.epsilon = dpdr_double(VECTOR_ELT(s, S_EPSILON), "epsilon");
  c.delta = dpdr_double(VECTOR_ELT(s, S_DELTA), "delta");
  c.noise_multiplier = dpdr_double(VECTOR_ELT(s, S_NOISE_MULTIPLIER), "noise_multiplier");
  c.intercept = dpdr_u32(VECTOR_ELT(s, S_INTERCEPT), "intercept");
  return c;
}

/* Builds the C settings (privacy not yet chosen); on failure frees them and returns the status
 * (no R error here, so the caller can free its own resources before dpdr_check). */
static dpd_status new_config(const settings_t *c, dpd_iterative_config **out) {
  dpd_iterative_config *cfg = NULL;
  dpd_status st = c->model == 0
                      ? dpd_iterative_config_new_logistic(c->l2, &cfg)
                      : dpd_iterative_config_new_blr_vi(c->noise_precision, c->prior_precision,
                                                        &cfg);
  if (st != DPD_OK) return st;
  /* Only asked of logistic settings; BLR's refuse an intercept (R never builds that). */
  if (c->model == 0) st = dpd_iterative_config_set_intercept(cfg, c->intercept);
  if (st == DPD_OK)
    st = c->sampling == 0 ? dpd_iterative_config_set_poisson(cfg, c->rate)
                          : dpd_iterative_config_set_fixed_size(cfg, c->batch);
  if (st == DPD_OK)
    st = c->optimizer == 0 ? dpd_iterative_config_set_adam(cfg, c->learning_rate, c->beta1,
                                                           c->beta2, c->adam_epsilon)
                           : dpd_iterative_config_set_sgd(cfg, c->learning_rate);
  if (st == DPD_OK) st = dpd_iterative_config_set_clip_norm(cfg, c->clip_norm);
  if (st == DPD_OK) st = dpd_iterative_config_set_dca(cfg, c->n_nodes, c->max_dropped);
  if (st != DPD_OK) {
    dpd_iterative_config_free(cfg);
    return st;
  }
  *out = cfg;
  return DPD_OK;
}

static dpd_iterative_trainer *trainer_of(SEXP x) {
  return (dpd_iterative_trainer *)dpdr_handle(x, DPDR_ITERATIVE_TRAINER, "trainer");
}

SEXP dpdr_iterative_calibrate(SEXP settings, SEXP n_clients, SEXP dim, SEXP iterations) {
  settings_t c = read_settings(settings);
  size_t n = dpdr_size(n_clients, "n_clients"), d = dpdr_size(dim, "dim");
  uint64_t k = dpdr_u64(iterations, "iterations");
  dpd_iterative_config *cfg = NULL;
  double z = 0;
  dpd_status st = new_config(&c, &cfg);
  if (st == DPD_OK)
    st = dpd_iterative_calibrate_noise_multiplier(cfg, n, d, c.epsilon, c.delta, k, &z);
  dpd_iterative_config_free(cfg);
  dpdr_check(st);
  return Rf_ScalarReal(z);
}

/* Public ranges: lo = hi = NULL from R for none, else one pair per feature (checked and named
   1-based by the R side, then by the C ABI, 0-based, before anything is drawn). */
SEXP dpdr_iterative_trainer(SEXP settings, SEXP n_clients, SEXP dim, SEXP iterations, SEXP rng,
                            SEXP lo, SEXP hi) {
  settings_t c = read_settings(settings);
  size_t n = dpdr_size(n_clients, "n_clients"), d = dpdr_size(dim, "dim");
  uint64_t k = dpdr_u64(iterations, "iterations");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  const double *lows = NULL, *highs = NULL;
  size_t n_ranges = 0;
  if (!Rf_isNull(lo) || !Rf_isNull(hi)) {
    lows = dpdr_doubles(lo, "lo");
    highs = dpdr_doubles(hi, "hi");
    if (XLENGTH(lo) != XLENGTH(hi))
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`lo` has %lld values, `hi` %lld",
                (long long)XLENGTH(lo), (long long)XLENGTH(hi));
    n_ranges = (size_t)XLENGTH(lo);
  }
  dpd_iterative_config *cfg = NULL;
  dpd_iterative_trainer *trainer = NULL;
  dpd_status st = new_config(&c, &cfg);
  if (st == DPD_OK && n_ranges > 0)
    st = dpd_iterative_config_set_ranges(cfg, lows, highs, n_ranges);
  if (st == DPD_OK && c.is_private) {
    double z = c.noise_multiplier;
    if (isnan(z))
      st = dpd_iterative_calibrate_noise_multiplier(cfg, n, d, c.epsilon, c.delta, k, &z);
    if (st == DPD_OK) st = dpd_iterative_config_set_private(cfg, c.epsilon, c.delta, z);
  } else if (st == DPD_OK) {
    st = dpd_iterative_config_set_non_private(cfg);
  }
  if (st == DPD_OK) st = dpd_iterative_trainer_new(cfg, n, d, r, &trainer);
  dpd_iterative_config_free(cfg);
  dpdr_check(st);
  return dpdr_wrap(trainer, DPDR_ITERATIVE_TRAINER);
}

/* The trainer's records: x (n x d matrix) and y (n values). */
static const double *records(SEXP x, SEXP y, size_t *n, size_t *len, const double **ys) {
  size_t d = 0;
  const double *rows = dpdr_row_major(x, "x", n, &d);
  *ys = dpdr_doubles(y, "y");
  if ((size_t)XLENGTH(y) != *n)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`y` has %lld values, `x` %zu rows",
              (long long)XLENGTH(y), *n);
  *len = *n * d;
  return rows;
}

SEXP dpdr_iterative_step(SEXP trainer, SEXP x, SEXP y, SEXP dropped) {
  dpd_iterative_trainer *t = trainer_of(trainer);
  size_t n = 0, len = 0;
  const double *ys = NULL;
  const double *rows = records(x, y, &n, &len, &ys);
  const double *ids = dpdr_doubles(dropped, "dropped");
  size_t n_dropped = (size_t)XLENGTH(dropped);
  size_t *drop = n_dropped > 0 ? (size_t *)R_alloc(n_dropped, sizeof(size_t)) : NULL;
  for (size_t i = 0; i < n_dropped; i++) {
    double v = ids[i];
    if (!(v >= 0 && v <= 9007199254740992.0 && v == floor(v)))
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`dropped` must hold 0-based client ids, got %g", v);
    drop[i] = (size_t)v;
  }
  dpd_iterative_step_info info;
  dpdr_check(dpd_iterative_trainer_step(t, rows, len, ys, n, drop, n_dropped, &info));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 5));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 5));
  const char *fields[5] = {"iteration", "noise_sigma_released", "n_included", "epsilon_spent",
                           "delta_spent"};
  double values[5] = {(double)info.iteration, info.noise_sigma_released, (double)info.n_included,
                      info.epsilon_spent, info.delta_spent};
  for (int k = 0; k < 5; k++) {
    REAL(out)[k] = values[k];
    SET_STRING_ELT(names, k, Rf_mkChar(fields[k]));
  }
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

SEXP dpdr_iterative_fit(SEXP trainer, SEXP x, SEXP y, SEXP iterations) {
  dpd_iterative_trainer *t = trainer_of(trainer);
  size_t n = 0, len = 0;
  const double *ys = NULL;
  const double *rows = records(x, y, &n, &len, &ys);
  uint64_t done = 0;
  dpdr_check(dpd_iterative_trainer_fit(t, rows, len, ys, n, dpdr_u64(iterations, "iterations"),
                                       &done));
  return Rf_ScalarReal((double)done);
}

static dpd_status fill_params(void *t, void *out, size_t cap, size_t *len) {
  return dpd_iterative_trainer_params((const dpd_iterative_trainer *)t, (double *)out, cap, len);
}

SEXP dpdr_iterative_params(SEXP trainer) {
  return dpdr_fetch(DPDR_DOUBLES, fill_params, trainer_of(trainer), 0);
}

static dpd_status fill_last_release(void *t, void *out, size_t cap, size_t *len) {
  return dpd_iterative_trainer_last_release((const dpd_iterative_trainer *)t, (double *)out, cap,
                                            len);
}

SEXP dpdr_iterative_last_release(SEXP trainer) {
  return dpdr_fetch(DPDR_DOUBLES, fill_last_release, trainer_of(trainer), 0);
}

typedef struct {
  const dpd_iterative_trainer *trainer;
  const double *rows;
  size_t len;
} predict_ctx;

static dpd_status fill_predict(void *c, void *out, size_t cap, size_t *len) {
  predict_ctx *p = (predict_ctx *)c;
  return dpd_iterative_trainer_predict(p->trainer, p->rows, p->len, (double *)out, cap, len);
}

SEXP dpdr_iterative_predict(SEXP trainer, SEXP x) {
  dpd_iterative_trainer *t = trainer_of(trainer);
  size_t d_model = 0;
  dpdr_check(dpd_iterative_trainer_info(t, NULL, &d_model, NULL, NULL));
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "newdata", &n, &d);
  if (d != d_model)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`newdata` has %zu columns, the model reads %zu", d,
              d_model);
  predict_ctx ctx = {t, rows, n * d};
  return dpdr_fetch(DPDR_DOUBLES, fill_predict, &ctx, n);
}

SEXP dpdr_iterative_spent(SEXP trainer) {
  dpd_iterative_trainer *t = trainer_of(trainer);
  double eps = 0, delta = 0, z = 0;
  uint64_t iterations = 0;
  dpdr_check(dpd_iterative_trainer_spent(t, &eps, &delta));
  dpdr_check(dpd_iterative_trainer_info(t, &iterations, NULL, NULL, &z));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 4));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 4));
  const char *fields[4] = {"epsilon", "delta", "iterations", "noise_multiplier"};
  double values[4] = {eps, delta, (double)iterations, z};
  for (int k = 0; k < 4; k++) {
    REAL(out)[k] = values[k];
    SET_STRING_ELT(names, k, Rf_mkChar(fields[k]));
  }
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

SEXP dpdr_rdp_epsilon(SEXP q, SEXP z, SEXP steps, SEXP delta, SEXP sampling) {
  double eps = 0, order = 0;
  dpdr_check(dpd_rdp_epsilon(dpdr_double(q, "q"), dpdr_double(z, "noise_multiplier"),
                             dpdr_u64(steps, "steps"), dpdr_double(delta, "delta"),
                             dpdr_u32(sampling, "sampling"), &eps, &order));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 2));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
  REAL(out)[0] = eps;
  REAL(out)[1] = order;
  SET_STRING_ELT(names, 0, Rf_mkChar("epsilon"));
  SET_STRING_ELT(names, 1, Rf_mkChar("order"));
  Rf_setAttrib(out, R_NamesSymbol, names);
  UNPROTECT(2);
  return out;
}

SEXP dpdr_rdp_noise_multiplier(SEXP epsilon, SEXP delta, SEXP steps, SEXP q, SEXP sampling) {
  double z = 0;
  dpdr_check(dpd_rdp_noise_multiplier(dpdr_double(epsilon, "epsilon"),
                                      dpdr_double(delta, "delta"), dpdr_u64(steps, "steps"),
                                      dpdr_double(q, "q"), dpdr_u32(sampling, "sampling"), &z));
  return Rf_ScalarReal(z);
}
