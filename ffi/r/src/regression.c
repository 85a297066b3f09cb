/* The regression on real data (blr::regression through dpd_regression_*): an intercept, public
 * ranges, results in the data's units. R/regression.R builds the formula interface on it. */
#include "dpdist_r.h"

static dpd_regression *regression_of(SEXP x) {
  return (dpd_regression *)dpdr_handle(x, DPDR_REGRESSION, "model");
}

/* group_of: an integer vector, one entry per column of x: 0 for an ordinary column, k >= 1 for
 * the indicator columns of one factor (dpd_regression_fit_grouped). */
SEXP dpdr_regression_fit(SEXP x, SEXP y, SEXP lower_x, SEXP upper_x, SEXP group_of,
                         SEXP range_y, SEXP intercept, SEXP budget, SEXP n_nodes, SEXP rng) {
  dpd_rng *r = (dpd_rng *)dpdr_handle(rng, DPDR_RNG, "rng");
  size_t n = 0, d = 0;
  const double *rows = dpdr_row_major(x, "x", &n, &d);
  const double *ys = dpdr_doubles(y, "y");
  if ((size_t)XLENGTH(y) != n)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "`y` has %lld values, `x` %zu rows",
              (long long)XLENGTH(y), n);
  const double *lo = dpdr_doubles(lower_x, "lower_x");
  const double *hi = dpdr_doubles(upper_x, "upper_x");
  if ((size_t)XLENGTH(lower_x) != d || (size_t)XLENGTH(upper_x) != d)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "one public range per column of `x` (%zu)", d);
  if (TYPEOF(range_y) != REALSXP || XLENGTH(range_y) != 2)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "the response's range must be c(lower, upper)");
  if (TYPEOF(budget) != REALSXP || XLENGTH(budget) != 2)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "the budget must be c(epsilon, delta)");
  if (TYPEOF(group_of) != INTSXP)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`group_of` must be an integer vector");
  if ((size_t)XLENGTH(group_of) != d)
    dpdr_fail("DPD_ERR_LENGTH_MISMATCH", "one `group_of` entry per column of `x` (%zu)", d);
  uint32_t *groups = (uint32_t *)R_alloc(d > 0 ? d : 1, sizeof(uint32_t));
  for (size_t j = 0; j < d; j++) {
    int k = INTEGER(group_of)[j];
    if (k == NA_INTEGER || k < 0)
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`group_of`[%zu]: 0 or a group number >= 1", j + 1);
    groups[j] = (uint32_t)k;
  }
  uint32_t with_intercept = dpdr_u32(intercept, "intercept");
  uint32_t nodes = dpdr_u32(n_nodes, "n_nodes");
  dpd_regression *model = NULL;
  dpdr_check(dpd_regression_fit_grouped(rows, n * d, ys, n, lo, hi, groups, d, REAL(range_y)[0],
                                        REAL(range_y)[1], with_intercept, REAL(budget)[0],
                                        REAL(budget)[1], nodes, r, &model));
  return dpdr_wrap(model, DPDR_REGRESSION);
}

static dpd_status fill_coefficients(void *model, void *out, size_t cap, size_t *len) {
  return dpd_regression_coefficients((const dpd_regression *)model, (double *)out, cap, len);
}

static dpd_status fill_std_errors(void *model, void *out, size_t cap, size_t *len) {
  return dpd_regression_std_errors((const dpd_regression *)model, (double *)out, cap, len);
}

static dpd_status fill_warnings(void *model, void *out, size_t cap, size_t *len) {
  return dpd_regression_warnings((const dpd_regression *)model, (uint8_t *)out, cap, len);
}

SEXP dpdr_regression_coefficients(SEXP model) {
  return dpdr_fetch(DPDR_DOUBLES, fill_coefficients, regression_of(model), 0);
}

SEXP dpdr_regression_std_errors(SEXP model) {
  return dpdr_fetch(DPDR_DOUBLES, fill_std_errors, regression_of(model), 0);
}

SEXP dpdr_regression_warnings(SEXP model) {
  return dpdr_fetch(DPDR_BYTES, fill_warnings, regression_of(model), 0);
}

typedef struct {
  const dpd_regression *model;
  const double *x;
  size_t x_len;
} predict_ctx;

static dpd_status fill_predict(void *ctx, void *out, size_t cap, size_t *len) {
  predict_ctx *c = (predict_ctx *)ctx;
  return dpd_regression_predict(c->model, c->x, c->x_len, (double *)out, cap, len);
}

SEXP dpdr_regression_predict(SEXP model, SEXP x) {
  size_t n = 0, d = 0;
  predict_ctx c;
  c.model = regression_of(model);
  c.x = dpdr_row_major(x, "newdata", &n, &d);
  c.x_len = n * d;
  return dpdr_fetch(DPDR_DOUBLES, fill_predict, &c, n);
}

/* c(r_squared, constant, residual_sd, epsilon, delta); r_squared NaN when not available. */
SEXP dpdr_regression_quality(SEXP model) {
  const dpd_regression *m = regression_of(model);
  double q[5];
  dpdr_check(dpd_regression_fit_quality(m, &q[0], &q[1], &q[2]));
  dpdr_check(dpd_regression_spent(m, &q[3], &q[4]));
  SEXP out = PROTECT(Rf_allocVector(REALSXP, 5));
  for (int k = 0; k < 5; k++) REAL(out)[k] = q[k];
  UNPROTECT(1);
  return out;
}
