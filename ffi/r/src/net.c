/* participate(): an R session taking part in a dpdist job through libdpdist_net.
 *
 * The package does not link libdpdist_net (the network stack never enters its core build): the
 * R code dyn.load()s the library the user names and passes the addresses of its functions here,
 * as the external pointers getNativeSymbolInfo() returns, in the order of `net_functions` in
 * R/participate.R. The types come from dpdist_net.h.
 *
 * Following a job blocks for as long as the job runs, so it runs on a thread of its own while
 * the R thread waits and checks for a user interrupt; an interrupt stops the participant
 * (dpd_net_participant_stop), waits for the follow to return, frees it and signals an error:
 * nothing R-side is left behind and the state directory keeps what was already sent. */
#include "dpdist_r.h"

#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

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
typedef dpd_net_status (*stop_fn)(const dpd_net_participant *);
typedef dpd_net_status (*message_fn)(char *, size_t, size_t *);
typedef const char *(*name_fn)(uint32_t);

/* GCC's -Wcast-function-type allows casts through void (*)(void), the generic function type. */
typedef void (*any_fn)(void);

enum { F_NEW, F_SET_ROWS, F_SET_SEED, F_SET_POLL, F_FOLLOW, F_REASON, F_FREE, F_MESSAGE, F_NAME,
       F_STOP, F_COUNT };

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

/* One dpd_net_participant_follow_job call on its own thread. The library's last error message
 * is per thread, so the follow thread reads it. */
typedef struct {
  any_fn *f;
  dpd_net_participant *p;
  const char *job;
  dpd_net_outcome outcome;
  dpd_net_status status;
  char message[2048];
  int done;
  pthread_mutex_t lock;
  pthread_cond_t ended;
} follow_call;

static void *follow_thread(void *arg) {
  follow_call *c = arg;
  size_t len = 0;
  dpd_net_status status = ((follow_fn)c->f[F_FOLLOW])(c->p, c->job, &c->outcome);
  if (status != DPD_NET_OK) ((message_fn)c->f[F_MESSAGE])(c->message, sizeof c->message, &len);
  pthread_mutex_lock(&c->lock);
  c->status = status;
  c->done = 1;
  pthread_cond_signal(&c->ended);
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

static void check_interrupt(void *unused) {
  (void)unused;
  R_CheckUserInterrupt();
}

/* True when the user asked to interrupt: R_CheckUserInterrupt() would jump out of this frame,
 * so it runs under R_ToplevelExec, which catches the jump and reports it. */
static int interrupt_pending(void) { return !R_ToplevelExec(check_interrupt, NULL); }

/* Waits up to `ms` for the follow to end; whether it has. */
static int wait_for_follow(follow_call *c, long ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += ms * 1000000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&c->lock);
  int rc = 0;
  while (!c->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&c->ended, &c->lock, &until);
  int done = c->done;
  pthread_mutex_unlock(&c->lock);
  return done;
}

/* Follows the job on a thread of its own; 1 if the user interrupted it (the participant was
 * stopped and the follow has returned), 0 when it ended by itself. */
static int follow_interruptibly(follow_call *c) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, follow_thread, c) != 0) {
    follow_thread(c); /* no thread to be had: follow here, uninterruptibly */
    return 0;
  }
  int interrupted = 0;
  while (!wait_for_follow(c, 100)) {
    if (!interrupted && interrupt_pending()) {
      ((stop_fn)c->f[F_STOP])(c->p);
      interrupted = 1;
    }
  }
  pthread_join(thread, NULL);
  return interrupted;
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
  int interrupted = 0;
  if (status == DPD_NET_OK) {
    follow_call c = {.f = f, .p = p, .job = job_id, .outcome = {0, 0}, .status = DPD_NET_OK,
                     .message = "", .done = 0, .lock = PTHREAD_MUTEX_INITIALIZER,
                     .ended = PTHREAD_COND_INITIALIZER};
    interrupted = follow_interruptibly(&c);
    status = c.status;
    outcome = c.outcome;
    if (status != DPD_NET_OK) memcpy(message, c.message, sizeof message);
    if (status == DPD_NET_OK) status = ((reason_fn)f[F_REASON])(p, reason, sizeof reason, &len);
  }
  if (status != DPD_NET_OK && message[0] == '\0')
    ((message_fn)f[F_MESSAGE])(message, sizeof message, &len);
  ((free_fn)f[F_FREE])(p);
  if (interrupted && status == DPD_NET_ERR_STOPPED)
    dpdr_fail("DPD_NET_ERR_STOPPED",
              "interrupted: participate() stopped following job %s (its state directory keeps "
              "what was sent; call participate() again with it to go on)",
              job_id);
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
