/* Uncertainty of a private BLR fit: the noise-aware posterior of the coefficients (the released
 * statistics treated as noisy observations of the true ones) and the naive one, as posterior
 * means, standard deviations and central credible intervals for beta and for predictions. */
#include "dpdist_r.h"

static dpd_blr_noise_aware *posterior_of(SEXP x) {
  return (dpd_blr_noise_aware *)dpdr_handle(x, DPDR_BLR_NOISE_AWARE, "posterior");
}

SEXP dpdr_blr_noise_aware(SEXP model, SEXP draws, SEXP rng) {
  dpd_blr_model *m = (dpd_blr_model *)dpdr_handle(model, DPDR_BLR_MODEL, "model");
  size_t k = dpdr_size(draws, "draws");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_blr_noise_aware *out = NULL;
  dpdr_check(dpd_blr_model_noise_aware(m, k, r, &out));
  return dpdr_wrap(out, DPDR_BLR_NOISE_AWARE);
}

/* The public noise of a model's released statistics: c(xx_kind, xx, xy_kind, xy), kinds as
 * DPD_NOISE_* codes. */
SEXP dpdr_blr_model_stats_noise(SEXP model) {
  dpd_blr_model *m = (dpd_blr_model *)dpdr_handle(model, DPDR_BLR_MODEL, "model");
  dpd_blr_stats_noise noise;
  dpdr_check(dpd_blr_model_stats_noise(m, &noise));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 4));
  REAL(out)[0] = (double)noise.xx_kind;
  REAL(out)[1] = noise.xx;
  REAL(out)[2] = (double)noise.xy_kind;
  REAL(out)[3] = noise.xy;
  UNPROTECT(1);
  return out;
}

/* The noise-aware posterior from a released statistics vector; `noise` is c(xx_kind, xx,
 * xy_kind, xy) as dpdr_blr_model_stats_noise returns it, `prior` is c(dof, lambda, lambda0). */
SEXP dpdr_blr_noise_aware_from_stats(SEXP stats, SEXP shape, SEXP noise, SEXP bounds_x,
                                     SEXP second_moments, SEXP prior, SEXP draws, SEXP rng) {
  const double *z = dpdr_doubles(stats, "stats");
  const double *dims = dpdr_doubles(shape, "shape");
  const double *described = dpdr_doubles(noise, "noise");
  const double *p = dpdr_doubles(prior, "prior");
  if (XLENGTH(shape) != 3 || XLENGTH(noise) != 4 || XLENGTH(prior) != 3) {
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH",
              "shape must be c(n, d, with_yy), noise c(xx_kind, xx, xy_kind, xy) and prior "
              "c(dof, lambda, lambda0)");
  }
  dpd_blr_stats_noise n;
  n.xx_kind = dpdr_u32(Rf_ScalarReal(described[0]), "noise xx_kind");
  n.xx = described[1];
  n.xy_kind = dpdr_u32(Rf_ScalarReal(described[2]), "noise xy_kind");
  n.xy = described[3];
  size_t rows = dpdr_size(Rf_ScalarReal(dims[0]), "n");
  size_t d = dpdr_size(Rf_ScalarReal(dims[1]), "d");
  uint32_t with_yy = dpdr_u32(Rf_ScalarReal(dims[2]), "with_yy");
  const double *bounds = dpdr_doubles(bounds_x, "bounds_x");
  const double *moments = dpdr_doubles(second_moments, "second_moments");
  size_t k = dpdr_size(draws, "draws");
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  dpd_blr_noise_aware *out = NULL;
  dpdr_check(dpd_blr_noise_aware_from_stats(
      z, (size_t)XLENGTH(stats), rows, d, with_yy, &n, bounds, (size_t)XLENGTH(bounds_x),
      moments, (size_t)XLENGTH(second_moments), p[0], p[1], p[2], k, r, &out));
  return dpdr_wrap(out, DPDR_BLR_NOISE_AWARE);
}

/* A call with four parallel outputs of n elements, into list(mean, sd, lower, upper). */
typedef dpd_status (*summary_fill)(void *ctx, double *mean, double *sd, double *lower,
                                   double *upper, size_t cap, size_t *len);

static SEXP summaries(summary_fill fill, void *ctx, size_t n) {
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 4));
  SEXP names = PROTECT(Rf_allocVector(STRSXP, 4));
  const char *fields[4] = {"mean", "sd", "lower", "upper"};
  double *p[4];
  for (int k = 0; k < 4; k++) {
    SET_VECTOR_ELT(out, k, Rf_allocVector(REALSXP, (R_xlen_t)n));
    SET_STRING_ELT(names, k, Rf_mkChar(fields[k]));
    p[k] = n > 0 ? REAL(VECTOR_ELT(out, k)) : NULL;
  }
  size_t len = 0;
  dpd_status st = fill(ctx, p[0], p[1], p[2], p[3], n, &len);
  UNPROTECT(2);
  dpdr_check(st);
  Rf_setAttrib(out, R_NamesSymbol, names);
  return out;
}

typedef struct {
  const void *handle;
  double level;
  const double *rows;
  size_t rows_len;
  uint32_t observation;
} summary_ctx;

static dpd_status fill_noise_aware(void *c, double *m, double *s, double *lo, double *hi,
                                   size_t cap, size_t *len) {
  summary_ctx *x = (summary_ctx *)c;
  return dpd_blr_noise_aware_coefficients((const dpd_blr_noise_aware *)x->handle, x->level, m, s,
                                          lo, hi, cap, len);
}

static dpd_status fill_naive(void *c, double *m, double *s, double *lo, double *hi, size_t cap,
                             size_t *len) {
  summary_ctx *x = (summary_ctx *)c;
  return dpd_blr_model_coefficients((const dpd_blr_model *)x->handle, x->level, m, s, lo, hi,
                                    cap, len);
}

static dpd_status fill_predict(void *c, double *m, double *s, double *lo, double *hi, size_t cap,
                               size_t *len) {
  summary_ctx *x = (summary_ctx *)c;
  return dpd_blr_noise_aware_predict((const dpd_blr_noise_aware *)x->handle, x->rows,
                                     x->rows_len, x->observation, x->level, m, s, lo, hi, cap,
                                     len);
}

static size_t noise_aware_d(const dpd_blr_noise_aware *p) {
  size_t d = 0;
  dpdr_check(dpd_blr_noise_aware_info(p, &d, NULL));
  return d;
}

SEXP dpdr_blr_noise_aware_coefficients(SEXP posterior, SEXP level) {
  summary_ctx ctx = {posterior_of(posterior), dpdr_double(level, "level"), NULL, 0, 0};
  return summaries(fill_noise_aware, &ctx, noise_aware_d(ctx.handle));
}

SEXP dpdr_blr_model_coefficients(SEXP model, SEXP level) {
  dpd_blr_model *m = (dpd_blr_model *)dpdr_handle(model, DPDR_BLR_MODEL, "model");
  size_t d = 0; /* a pure size query of the mean: the number of coefficients */
  dpd_status st = dpd_blr_model_mean(m, NULL, 0, &d);
  if (st != DPD_ERR_BUFFER_TOO_SMALL) dpdr_check(st);
  summary_ctx ctx = {m, dpdr_double(level, "level"), NULL, 0, 0};
  return summaries(fill_naive, &ctx, d);
}

SEXP dpdr_blr_noise_aware_predict(SEXP posterior, SEXP x, SEXP observation, SEXP level) {
  dpd_blr_noise_aware *p = posterior_of(posterior);
  size_t d = noise_aware_d(p);
  size_t n = 0, cols = 0;
  const double *rows = dpdr_row_major(x, "newdata", &n, &cols);
  /* The C call only sees n * cols values: a matrix of the wrong width could pass as other rows. */
  if (cols != d)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`newdata` has %zu columns, the model reads %zu", cols,
              d);
  summary_ctx ctx = {p, dpdr_double(level, "level"), rows, n * cols,
                     dpdr_u32(observation, "observation")};
  return summaries(fill_predict, &ctx, n);
}

SEXP dpdr_blr_noise_aware_ess(SEXP posterior) {
  double ess = 0;
  dpdr_check(dpd_blr_noise_aware_info(posterior_of(posterior), NULL, &ess));
  return Rf_ScalarReal(ess);
}
