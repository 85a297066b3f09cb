/* Shared helpers of the R binding: status -> R condition, argument conversion, handles. */
#ifndef DPDIST_R_H
#define DPDIST_R_H

#define R_NO_REMAP
#include <R.h>
#include <Rinternals.h>
#include <stddef.h>
#include <stdint.h>

#include "dpdist.h"

/* Signals an R condition of class c(<status name>, "dpdist_error", "error", "condition")
 * carrying the library's last error message, unless status is DPD_OK. */
void dpdr_check(dpd_status status);

/* Signals the same kind of condition for an argument the binding itself refuses
 * (status_name is one of the DPD_ERR_* names). Never returns. */
void dpdr_fail(const char *status_name, const char *fmt, ...);

/* Argument conversion; every failure is a dpdist_error naming the argument. */
double dpdr_double(SEXP x, const char *name);          /* numeric scalar (NaN passes through) */
uint64_t dpdr_u64(SEXP x, const char *name);           /* integral, 0 <= x <= 2^53 */
size_t dpdr_size(SEXP x, const char *name);            /* integral, 0 <= x <= 2^53 */
uint32_t dpdr_u32(SEXP x, const char *name);           /* integral, 0 <= x <= 2^32 - 1 */
const double *dpdr_doubles(SEXP x, const char *name);  /* double vector (NULL pointer if empty) */
const uint8_t *dpdr_raw(SEXP x, const char *name);     /* raw vector (NULL pointer if empty) */
SEXP dpdr_u64s_to_r(const uint64_t *v, size_t n);      /* exact conversion to double */
/* An R double matrix (column-major) as an R_alloc'ed row-major copy; writes its shape. */
const double *dpdr_row_major(SEXP x, const char *name, size_t *n_rows, size_t *n_cols);
uint64_t *dpdr_u64s_from_r(SEXP x, const char *name);  /* R_alloc'ed copy, each as dpdr_u64 */

/* Size-then-fill (fetch.c): reads one output array of the C ABI into a new R vector. `fill`
 * calls the C getter with (out, out_cap, out_len) and whatever it needs from `ctx`.
 * `expected_len` is the length the caller expects (0 when unknown): when it suffices the getter
 * runs once; otherwise a second call fills a vector of the length the first one reported. */
typedef enum {
  DPDR_DOUBLES, /* double[]  -> R double vector */
  DPDR_BYTES,   /* uint8_t[] -> R raw vector */
  DPDR_IDS      /* uint64_t[] -> R double vector, exact (ids beyond 2^53 are refused) */
} dpdr_elements;
typedef dpd_status (*dpdr_fill)(void *ctx, void *out, size_t out_cap, size_t *out_len);
SEXP dpdr_fetch(dpdr_elements kind, dpdr_fill fill, void *ctx, size_t expected_len);

/* Handles: an external pointer whose tag names its type and whose finalizer frees it. */
typedef enum {
  DPDR_RNG,
  DPDR_ACCOUNTANT,
  DPDR_ROUND_CONFIG,
  DPDR_CLIENT,
  DPDR_NODE,
  DPDR_NODE_SUM,
  DPDR_SHARES,
  DPDR_AGGREGATOR,
  DPDR_PLR_MODEL,
  DPDR_BLR_MODEL,
  DPDR_BLR_NOISE_AWARE,
  DPDR_ITERATIVE_TRAINER,
  DPDR_ROUND_LEDGER,
  DPDR_REGRESSION,
  DPDR_KIND_COUNT
} dpdr_kind;

SEXP dpdr_wrap(void *handle, dpdr_kind kind);             /* returns an unprotected EXTPTRSXP */
void *dpdr_handle(SEXP x, dpdr_kind kind, const char *name); /* never NULL */
void dpdr_dispose(SEXP x); /* frees the handle now; the finalizer then does nothing */

#endif
