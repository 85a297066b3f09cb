/* participate(): an R session taking part in a dpdist job through libdpdist_net.
 *
 * The package does not link libdpdist_net (the network stack never enters its core build): the
 * R code dyn.load()s the library the user names and passes the addresses of its functions here,
 * as the external pointers getNativeSymbolInfo() returns, in the order of `net_functions` in
 * R/participate.R. The types come from dpdist_net.h. */
#include "dpdist_r.h"

#include "dpdist_net.h"

typedef dpd_net_status (*new_fn)(const char *, const char *, const char *, const char *,
                                 const char *, dpd_net_participant **);
typedef dpd_net_status (*set_rows_fn)(dpd_net_participant *, const char *const *, size_t,
                                      const double *, size_t, uint32_t);
typedef dpd_net_status (*set_seed_fn)(dpd_net_participant *, uint64_t);
typedef dpd_net_status (*set_poll_fn)(dpd_net_participant *, uint32_t);
typedef dpd_net_status (*follow_fn)(dpd_net_participant *, const char *, dpd_net_outcome *);
typedef dpd_net_status (*reason_fn)(const dpd_net_participant *, char *, size_t, size_t *);
typedef void (*free_fn)(dpd_net_participant *);
typedef dpd_net_status (*message_fn)(char *, size_t, size_t *);
typedef const char *(*name_fn)(uint32_t);

/* GCC's -Wcast-function-type allows casts through void (*)(void), the generic function type. */
typedef void (*any_fn)(void);

enum { F_NEW, F_SET_ROWS, F_SET_SEED, F_SET_POLL, F_FOLLOW, F_REASON, F_FREE, F_MESSAGE, F_NAME,
       F_COUNT };

static any_fn function_at(SEXP functions, int i) {
  SEXP ptr = VECTOR_ELT(functions, i);
  if (TYPEOF(ptr) != EXTPTRSXP || R_ExternalPtrAddrFn(ptr) == NULL)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "libdpdist_net function %d was not found", i + 1);
  return (any_fn)R_ExternalPtrAddrFn(ptr);
}

static const char *string(SEXP x, const char *name) {
  if (TYPEOF(x) != STRSXP || XLENGTH(x) != 1 || STRING_ELT(x, 0) == NA_STRING)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`%s` must be a single string", name);
  return Rf_translateCharUTF8(STRING_ELT(x, 0));
}

/* Follows job `job` with the rows of `x` (a double matrix, column-major as R keeps it, with
 * `columns` naming its columns); the participant is freed before anything is signalled. */
SEXP dpdr_net_participate(SEXP functions, SEXP files, SEXP x, SEXP columns, SEXP job,
                          SEXP poll_ms, SEXP seed) {
  if (TYPEOF(functions) != VECSXP || XLENGTH(functions) != F_COUNT)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "expected %d libdpdist_net functions", F_COUNT);
  any_fn f[F_COUNT];
  for (int i = 0; i < F_COUNT; i++) f[i] = function_at(functions, i);
  if (TYPEOF(files) != STRSXP || XLENGTH(files) != 5)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "expected 5 paths");
  const char *paths[5];
  for (int i = 0; i < 5; i++) {
    if (STRING_ELT(files, i) == NA_STRING)
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "a file path is NA");
    paths[i] = Rf_translateCharUTF8(STRING_ELT(files, i));
  }
  size_t n_rows = 0, n_cols = 0;
  if (!Rf_isMatrix(x) || TYPEOF(x) != REALSXP)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`data` must be a numeric matrix");
  n_rows = (size_t)Rf_nrows(x);
  n_cols = (size_t)Rf_ncols(x);
  if (TYPEOF(columns) != STRSXP || (size_t)XLENGTH(columns) != n_cols)
    dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "`data` needs one name per column");
  const char **names = (const char **)R_alloc(n_cols ? n_cols : 1, sizeof(char *));
  for (size_t j = 0; j < n_cols; j++) {
    if (STRING_ELT(columns, j) == NA_STRING)
      dpdr_fail("DPD_ERR_INVALID_ARGUMENT", "column %zu of `data` has no name", j + 1);
    names[j] = Rf_translateCharUTF8(STRING_ELT(columns, j));
  }
  const char *job_id = string(job, "job");
  uint32_t poll = dpdr_u32(poll_ms, "poll_ms");
  int with_seed = !Rf_isNull(seed);
  uint64_t seed_value = with_seed ? dpdr_u64(seed, "insecure_seed") : 0;

  /* From here on no R error may be raised until the participant is freed. */
  dpd_net_participant *p = NULL;
  dpd_net_outcome outcome = {0, 0};
  char message[2048] = "";
  char reason[2048] = "";
  size_t len = 0;
  dpd_net_status status =
      ((new_fn)f[F_NEW])(paths[0], paths[1], paths[2], paths[3], paths[4], &p);
  if (status == DPD_NET_OK)
    status = ((set_rows_fn)f[F_SET_ROWS])(p, names, n_cols, n_rows ? REAL(x) : NULL, n_rows,
                                          DPD_NET_COLUMN_MAJOR);
  if (status == DPD_NET_OK && with_seed) status = ((set_seed_fn)f[F_SET_SEED])(p, seed_value);
  if (status == DPD_NET_OK) status = ((set_poll_fn)f[F_SET_POLL])(p, poll);
  if (status == DPD_NET_OK) status = ((follow_fn)f[F_FOLLOW])(p, job_id, &outcome);
  if (status == DPD_NET_OK) status = ((reason_fn)f[F_REASON])(p, reason, sizeof reason, &len);
  if (status != DPD_NET_OK) ((message_fn)f[F_MESSAGE])(message, sizeof message, &len);
  ((free_fn)f[F_FREE])(p);
  if (status != DPD_NET_OK)
    dpdr_fail(((name_fn)f[F_NAME])((uint32_t)status), "%s", message);

  static const char *states[] = {"done", "aborted", "cancelled"};
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
  SEXP out_names = PROTECT(Rf_allocVector(STRSXP, 3));
  SET_VECTOR_ELT(out, 0, Rf_mkString(outcome.state < 3 ? states[outcome.state] : "unknown"));
  SET_VECTOR_ELT(out, 1, Rf_ScalarLogical(outcome.took_part != 0));
  SET_VECTOR_ELT(out, 2, Rf_ScalarString(Rf_mkCharCE(reason, CE_UTF8)));
  SET_STRING_ELT(out_names, 0, Rf_mkChar("state"));
  SET_STRING_ELT(out_names, 1, Rf_mkChar("took_part"));
  SET_STRING_ELT(out_names, 2, Rf_mkChar("reason"));
  Rf_setAttrib(out, R_NamesSymbol, out_names);
  UNPROTECT(2);
  return out;
}
