/* Status codes become R conditions; R values become C arguments; handles become external
 * pointers with finalizers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "dpdist_r.h"

/* 2^53: every integer up to here is exact in a double, so ids and sizes round-trip. */
#define DPDR_MAX_EXACT 9007199254740992.0

/* Calls dpdist:::signal_dpdist_error(status, message), which never returns. */
static void signal_condition(const char *status_name, const char *message) {
  SEXP ns = PROTECT(R_FindNamespace(Rf_mkString("dpdist")));
  SEXP status = PROTECT(Rf_mkString(status_name));
  SEXP msg = PROTECT(Rf_ScalarString(Rf_mkCharCE(message, CE_UTF8)));
  SEXP call = PROTECT(Rf_lang3(Rf_install("signal_dpdist_error"), status, msg));
  Rf_eval(call, ns);
  UNPROTECT(4);
  Rf_error("%s: %s", status_name, message); /* not reached: the R function stops */
}

void dpdr_check(dpd_status status) {
  if (status == DPD_OK) return;
  size_t len = 0;
  dpd_last_error_message(NULL, 0, &len);
  char *buf = R_alloc(len + 1, 1);
  dpd_last_error_message(buf, len + 1, NULL);
  signal_condition(dpd_status_name((uint32_t)status), buf);
}

void dpdr_fail(const char *status_name, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  signal_condition(status_name, buf);
}

static int is_number(SEXP x) { return TYPEOF(x) == REALSXP || TYPEOF(x) == INTSXP; }

double dpdr_double(SEXP x, const char *name) {
  if (!is_number(x) || XLENGTH(x) != 1)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a single number", name);
  if (TYPEOF(x) == INTSXP) return INTEGER(x)[0] == NA_INTEGER ? NAN : (double)INTEGER(x)[0];
  return REAL(x)[0];
}

static double integral(SEXP x, const char *name, double max) {
  double v = dpdr_double(x, name);
  if (!isfinite(v))
    dpdr_fail("DPD_ERR_NON_FINITE", "`%s` must be finite, got %g", name, v);
  if (v < 0 || v > max || v != floor(v))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a whole number in [0, %.0f], got %g",
              name, max, v);
  return v;
}

uint64_t dpdr_u64(SEXP x, const char *name) {
  return (uint64_t)integral(x, name, DPDR_MAX_EXACT);
}

size_t dpdr_size(SEXP x, const char *name) {
  double max = (double)SIZE_MAX < DPDR_MAX_EXACT ? (double)SIZE_MAX : DPDR_MAX_EXACT;
  return (size_t)integral(x, name, max);
}

uint32_t dpdr_u32(SEXP x, const char *name) {
  return (uint32_t)integral(x, name, 4294967295.0);
}

const double *dpdr_doubles(SEXP x, const char *name) {
  if (TYPEOF(x) != REALSXP)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a double vector", name);
  return XLENGTH(x) == 0 ? NULL : REAL(x);
}

const uint8_t *dpdr_raw(SEXP x, const char *name) {
  if (TYPEOF(x) != RAWSXP)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a raw vector of wire bytes", name);
  return XLENGTH(x) == 0 ? NULL : RAW(x);
}

SEXP dpdr_u64s_to_r(const uint64_t *v, size_t n) {
  SEXP out = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)n));
  for (size_t i = 0; i < n; i++) {
    if ((double)v[i] > DPDR_MAX_EXACT)
      dpdr_fail("DPD_ERR_OVERFLOW", "id %llu exceeds 2^53 and has no exact R double",
                (unsigned long long)v[i]);
    REAL(out)[i] = (double)v[i];
  }
  UNPROTECT(1);
  return out;
}

uint64_t *dpdr_u64s_from_r(SEXP x, const char *name) {
  if (!is_number(x))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a numeric vector of ids", name);
  R_xlen_t n = XLENGTH(x);
  uint64_t *out = (uint64_t *)R_alloc(n > 0 ? (size_t)n : 1, sizeof(uint64_t));
  for (R_xlen_t i = 0; i < n; i++) {
    double v = TYPEOF(x) == INTSXP
                   ? (INTEGER(x)[i] == NA_INTEGER ? NAN : (double)INTEGER(x)[i])
                   : REAL(x)[i];
    if (!isfinite(v) || v < 0 || v > DPDR_MAX_EXACT || v != floor(v))
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT",
                "`%s`[%lld] must be a whole number in [0, 2^53], got %g", name,
                (long long)i + 1, v);
    out[i] = (uint64_t)v;
  }
  return out;
}

const double *dpdr_row_major(SEXP x, const char *name, size_t *n_rows, size_t *n_cols) {
  if (TYPEOF(x) != REALSXP || !Rf_isMatrix(x))
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a double matrix", name);
  size_t n = (size_t)Rf_nrows(x), d = (size_t)Rf_ncols(x);
  const double *col_major = REAL(x);
  double *rows = (double *)R_alloc(n * d > 0 ? n * d : 1, sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) rows[i * d + j] = col_major[j * n + i];
  *n_rows = n;
  *n_cols = d;
  return n * d > 0 ? rows : NULL;
}

/* ---- handles ------------------------------------------------------------------------------- */

static const char *const kind_names[DPDR_KIND_COUNT] = {
    "dpdist_rng",       "dpdist_accountant", "dpdist_round_config", "dpdist_client",
    "dpdist_node",      "dpdist_node_sum",   "dpdist_shares",       "dpdist_aggregator",
    "dpdist_plr_model", "dpdist_blr_model",  "dpdist_blr_noise_aware", "dpdist_iterative_trainer", "dpdist_round_ledger",
    "dpdist_regression"};

static void free_handle(dpdr_kind kind, void *p) {
  switch (kind) {
    case DPDR_RNG: dpd_rng_free((dpd_rng *)p); break;
    case DPDR_ACCOUNTANT: dpd_accountant_free((dpd_accountant *)p); break;
    case DPDR_ROUND_CONFIG: dpd_round_config_free((dpd_round_config *)p); break;
    case DPDR_CLIENT: dpd_client_free((dpd_client *)p); break;
    case DPDR_NODE: dpd_node_free((dpd_node *)p); break;
    case DPDR_NODE_SUM: dpd_node_sum_free((dpd_node_sum *)p); break;
    case DPDR_SHARES: dpd_shares_free((dpd_shares *)p); break;
    case DPDR_AGGREGATOR: dpd_aggregator_free((dpd_aggregator *)p); break;
    case DPDR_PLR_MODEL: dpd_plr_model_free((dpd_plr_model *)p); break;
    case DPDR_BLR_MODEL: dpd_blr_model_free((dpd_blr_model *)p); break;
    case DPDR_BLR_NOISE_AWARE: dpd_blr_noise_aware_free((dpd_blr_noise_aware *)p); break;
    case DPDR_ITERATIVE_TRAINER:
      dpd_iterative_trainer_free((dpd_iterative_trainer *)p);
      break;
    case DPDR_ROUND_LEDGER: dpd_round_ledger_free((dpd_round_ledger *)p); break;
    case DPDR_REGRESSION: dpd_regression_free((dpd_regression *)p); break;
    default: break;
  }
}

static dpdr_kind kind_of(SEXP ptr) {
  SEXP tag = R_ExternalPtrTag(ptr);
  for (int k = 0; k < DPDR_KIND_COUNT; k++)
    if (tag == Rf_install(kind_names[k])) return (dpdr_kind)k;
  return DPDR_KIND_COUNT;
}

/* Finalizer: free_handle is NULL-safe, and clearing makes a second run a no-op. */
static void finalize(SEXP ptr) {
  void *p = R_ExternalPtrAddr(ptr);
  dpdr_kind kind = kind_of(ptr);
  if (p != NULL && kind != DPDR_KIND_COUNT) free_handle(kind, p);
  R_ClearExternalPtr(ptr);
}

SEXP dpdr_wrap(void *handle, dpdr_kind kind) {
  SEXP ptr = PROTECT(R_MakeExternalPtr(handle, Rf_install(kind_names[kind]), R_NilValue));
  R_RegisterCFinalizerEx(ptr, finalize, TRUE);
  Rf_setAttrib(ptr, R_ClassSymbol, Rf_mkString(kind_names[kind]));
  UNPROTECT(1);
  return ptr;
}

void *dpdr_handle(SEXP x, dpdr_kind kind, const char *name) {
  if (TYPEOF(x) != EXTPTRSXP || kind_of(x) != kind)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a %s object", name, kind_names[kind]);
  void *p = R_ExternalPtrAddr(x);
  if (p == NULL)
    dpdr_fail("DPD_ERR_NULL_POINTER",
              "`%s` is a freed %s (handles do not survive saveRDS/readRDS or a new session)",
              name, kind_names[kind]);
  return p;
}

void dpdr_dispose(SEXP x) {
  if (TYPEOF(x) == EXTPTRSXP) finalize(x);
}

/* Frees a handle now instead of at garbage collection. */
SEXP dpdr_free(SEXP x) {
  dpdr_dispose(x);
  return R_NilValue;
}
