/* The one place that reads an output array of the C ABI into an R vector.
 *
 * Every array getter of dpdist.h has the query-size shape `f(..., T *out, size_t out_cap,
 * size_t *out_len)`: when the result needs more than `out_cap` elements it returns
 * DPD_ERR_BUFFER_TOO_SMALL and writes the needed length to `*out_len`, nothing else. The
 * caller passes the length it expects; when that is right (the length follows from the inputs)
 * the C function runs exactly once, otherwise a second call fills a vector of the reported
 * length. */
#include "dpdist_r.h"

static size_t element_size(dpdr_elements kind) {
  switch (kind) {
    case DPDR_DOUBLES: return sizeof(double);
    case DPDR_BYTES: return sizeof(uint8_t);
    case DPDR_IDS: return sizeof(uint64_t);
  }
  return 1;
}

/* Doubles and bytes are filled in place; ids go through an R_alloc'ed uint64_t buffer, since R
 * has no 64-bit integers (dpdr_u64s_to_r converts them exactly or signals). */
static SEXP vector_of(dpdr_elements kind, size_t len, void **data) {
  SEXP out = R_NilValue;
  switch (kind) {
    case DPDR_DOUBLES:
      out = Rf_allocVector(REALSXP, (R_xlen_t)len);
      *data = len > 0 ? (void *)REAL(out) : NULL;
      break;
    case DPDR_BYTES:
      out = Rf_allocVector(RAWSXP, (R_xlen_t)len);
      *data = len > 0 ? (void *)RAW(out) : NULL;
      break;
    case DPDR_IDS:
      *data = len > 0 ? (void *)R_alloc(len, element_size(kind)) : NULL;
      break;
  }
  return out;
}

SEXP dpdr_fetch(dpdr_elements kind, dpdr_fill fill, void *ctx, size_t expected_len) {
  void *data = NULL;
  PROTECT_INDEX ipx;
  SEXP out;
  PROTECT_WITH_INDEX(out = vector_of(kind, expected_len, &data), &ipx);
  size_t cap = expected_len, len = 0;
  dpd_status st = fill(ctx, data, cap, &len);
  if (st == DPD_ERR_BUFFER_TOO_SMALL && len > cap) {
    cap = len;
    REPROTECT(out = vector_of(kind, cap, &data), ipx);
    st = fill(ctx, data, cap, &len);
  }
  dpdr_check(st);
  if (len > cap)
    dpdr_fail("DPD_ERR_BUFFER_TOO_SMALL", "the library reported %zu elements for a buffer of %zu",
              len, cap);
  if (kind == DPDR_IDS) {
    REPROTECT(out = dpdr_u64s_to_r((const uint64_t *)data, len), ipx);
  } else if (len < cap) {
    REPROTECT(out = Rf_xlengthgets(out, (R_xlen_t)len), ipx);
  }
  UNPROTECT(1);
  return out;
}
