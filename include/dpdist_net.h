/*
 * dpdist_net: a data holder taking part in dpdist jobs over HTTPS — the C ABI of libdpdist_net.
 *
 * The core library (libdpdist, dpdist.h) has no network code; this one holds the participant:
 * the host hands it its own rows and its files (CA, token, policy, state directory), and it
 * follows a job on the aggregator — answers by its policy, keeps its ledger, computes its
 * contribution to every round locally, and sends nothing but sealed shares.
 *
 * Conventions (as in dpdist.h):
 * - Every fallible function returns a dpd_net_status (DPD_NET_OK = 0) and writes its results
 *   through out-pointers only on success; dpd_net_last_error_message() gives the message of the
 *   last failure on the calling thread. No panic crosses the ABI (DPD_NET_ERR_PANIC).
 * - Strings are NUL-terminated UTF-8. Input arrays may be NULL only when their length is 0.
 * - A participant handle may move between threads but is used by one thread at a time, except
 *   dpd_net_participant_stop(), which any thread may call while another follows a job.
 * - Calls that follow a job block the calling thread (the library runs its own I/O internally).
 * - Randomness comes from the operating system's CSPRNG; the fixed seed of
 *   dpd_net_participant_set_insecure_fixed_seed() is NON-PRIVATE and for tests only.
 */

#ifndef DPDIST_NET_H
#define DPDIST_NET_H

/* Generated from ffi/capi/net by scripts/gen-header.sh (cbindgen, pinned). Do not edit. */

#include <stddef.h>
#include <stdint.h>

/**
 * The ABI version of this library and of `dpdist_net.h`; it changes with every incompatible
 * change, and the shared library's SONAME is `libdpdist_net.so.N` (build.rs).
 */
#define DPD_NET_ABI_VERSION 1

/**
 * Result of a dpdist_net call. `DPD_NET_OK` (0) is success; every other value is an error whose
 * message can be read with `dpd_net_last_error_message` on the same thread.
 *
 * The numeric values are part of the ABI: new codes are only ever appended.
 */
typedef enum dpd_net_status {
    /**
     * Success.
     */
    DPD_NET_OK = 0,
    /**
     * A required pointer argument was NULL.
     */
    DPD_NET_ERR_NULL_POINTER = 1,
    /**
     * An argument is not what the function takes (not UTF-8, an unknown enum value, a matrix
     * with a missing value, a policy file that does not parse, ...); the message says which.
     */
    DPD_NET_ERR_INVALID_ARGUMENT = 2,
    /**
     * A file or directory named by the host cannot be read or written; the message names it.
     */
    DPD_NET_ERR_IO = 3,
    /**
     * The CA file is not a usable PEM certificate.
     */
    DPD_NET_ERR_TLS = 4,
    /**
     * The aggregator answered with an error that is not about the job; the message carries
     * the whole cause. (Unreachable aggregators and 5xx answers are retried, not returned.)
     */
    DPD_NET_ERR_NETWORK = 5,
    /**
     * The aggregator does not know the job or refuses this participant's token, or a round of
     * the job failed a check of this participant (another ε, dimension, node keys or T than it
     * accepted; rows the round cannot hold): it left the job.
     */
    DPD_NET_ERR_JOB = 6,
    /**
     * `dpd_net_participant_stop` was called; the participant stays stopped.
     */
    DPD_NET_ERR_STOPPED = 7,
    /**
     * The handle is in use or not ready (no rows set before following a job).
     */
    DPD_NET_ERR_INVALID_STATE = 8,
    /**
     * A Rust panic was caught at the ABI boundary (a bug in dpdist; please report it).
     */
    DPD_NET_ERR_PANIC = 9,
    /**
     * Any other failure; the message says what.
     */
    DPD_NET_ERR_OTHER = 10,
} dpd_net_status;

/**
 * How a matrix's values are laid out (`dpd_net_participant_set_rows`, passed as `uint32_t`).
 */
typedef enum dpd_net_layout {
    /**
     * Row after row (C, C++, numpy's default).
     */
    DPD_NET_ROW_MAJOR = 0,
    /**
     * Column after column (R, Julia, Fortran).
     */
    DPD_NET_COLUMN_MAJOR = 1,
} dpd_net_layout;

/**
 * How a followed job ended (`dpd_net_outcome.state`).
 */
typedef enum dpd_net_job_state {
    /**
     * Released its result.
     */
    DPD_NET_JOB_DONE = 0,
    /**
     * Aborted (too many refusals or dropouts, budget, a failed round); nothing more released.
     */
    DPD_NET_JOB_ABORTED = 1,
    /**
     * Cancelled by the analyst.
     */
    DPD_NET_JOB_CANCELLED = 2,
} dpd_net_job_state;

/**
 * A data holder taking part in jobs. Opaque; create with `dpd_net_participant_new`, free with
 * `dpd_net_participant_free`.
 */
typedef struct dpd_net_participant dpd_net_participant;

/**
 * What became of a job the participant followed to its end.
 */
typedef struct dpd_net_outcome {
    /**
     * A `dpd_net_job_state`.
     */
    uint32_t state;
    /**
     * 1 when this participant's shares are in every released round it was a client of, and
     * at least one was released; else 0 (it refused, left, was a dropout, or no round it
     * sealed for was released — such a round stays charged in its ledger: charged at
     * sealing).
     */
    uint32_t took_part;
} dpd_net_outcome;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The ABI version of the loaded library (`DPD_NET_ABI_VERSION` of the header it was built with):
 * a host compares it with the header's constant before anything else.
 */
uint32_t dpd_net_abi_version(void);

/**
 * The name of a status code (e.g. `"DPD_NET_ERR_IO"`) as a static NUL-terminated string;
 * `"DPD_NET_UNKNOWN_STATUS"` for a value that is not a `dpd_net_status`. Never free it.
 */
const char *dpd_net_status_name(uint32_t status);

/**
 * Copies the message of the most recent failed dpdist_net call on the calling thread into `buf`
 * (UTF-8, NUL-terminated when `len > 0`, truncated at a character boundary to `len - 1` bytes).
 * `*out_len` (if not NULL) receives the full length in bytes without the NUL: query the size
 * with `buf = NULL, len = 0`. Successful calls leave the message alone.
 *
 * Returns `DPD_NET_OK`, or `DPD_NET_ERR_NULL_POINTER` if `buf` is NULL while `len > 0`.
 *
 * # Safety
 * `buf` must point to `len` writable bytes (or be NULL with `len == 0`); `out_len` must be NULL
 * or point to a writable `size_t`.
 */
enum dpd_net_status dpd_net_last_error_message(char *buf, size_t len, size_t *out_len);

/**
 * Creates a participant of the aggregator at `aggregator_url` (https://host:port), trusting the
 * CA certificate in `ca_pem_path`, presenting the bearer token in `token_path` (the roster lists
 * its SHA-256), answering jobs by the policy in `policy_path` (TOML: `columns`,
 * `max_epsilon_per_job`, `total_epsilon`) and keeping its ledger and sealed attempts in
 * `state_dir` (created if missing; reuse it across restarts so that no round is paid twice).
 * Every file is read now; a file that cannot be read is `DPD_NET_ERR_IO` naming it.
 *
 * # Safety
 * The strings are NUL-terminated and valid for the call; `out` points to a writable pointer.
 */
enum dpd_net_status dpd_net_participant_new(const char *aggregator_url,
                                            const char *ca_pem_path,
                                            const char *token_path,
                                            const char *policy_path,
                                            const char *state_dir,
                                            struct dpd_net_participant **out);

/**
 * Hands the participant its rows: `n_rows` rows of `n_columns` values named by
 * `column_names` (distinct, non-empty), laid out as `layout` says (`DPD_NET_ROW_MAJOR` or
 * `DPD_NET_COLUMN_MAJOR`). The values are copied. A NaN (a missing value) or an infinity is
 * `DPD_NET_ERR_INVALID_ARGUMENT` naming its row and column, and the rows set before stay.
 *
 * # Safety
 * `participant` is a live handle; `column_names` points to `n_columns` NUL-terminated strings;
 * `values` points to `n_rows * n_columns` doubles.
 */
enum dpd_net_status dpd_net_participant_set_rows(struct dpd_net_participant *participant,
                                                 const char *const *column_names,
                                                 size_t n_columns,
                                                 const double *values,
                                                 size_t n_rows,
                                                 uint32_t layout);

/**
 * NON-PRIVATE, for tests only: draws this participant's noise and masks from `seed` (derived
 * per round and client exactly as `dpdist participant --insecure-seed`), so that a job's result
 * can be compared bit for bit with the in-process pipeline. Never use it with real data.
 *
 * # Safety
 * `participant` is a live handle.
 */
enum dpd_net_status dpd_net_participant_set_insecure_fixed_seed(struct dpd_net_participant *participant,
                                                                uint64_t seed);

/**
 * How often the participant asks the aggregator for work (milliseconds, 10 to 600000; default
 * 200). It backs off up to 5 s while the aggregator cannot be reached.
 *
 * # Safety
 * `participant` is a live handle.
 */
enum dpd_net_status dpd_net_participant_set_poll_ms(struct dpd_net_participant *participant,
                                                    uint32_t poll_ms);

/**
 * Follows job `job_id` (64 hex digits, as `dpdist job create` prints it) until it ends: answers
 * it by the policy, and if it accepted, contributes to each of its rounds. Blocks the calling
 * thread. On `DPD_NET_OK`, `*out` says how the job ended and whether this participant took
 * part; the job's reason (if it did not end done) is read with
 * `dpd_net_participant_outcome_reason`. With `job_id` NULL it follows every job whose roster
 * lists its token and returns only when stopped (`DPD_NET_ERR_STOPPED`).
 *
 * Errors: `DPD_NET_ERR_JOB` when the aggregator does not know the job or refuses the token, or
 * when a round of the job fails this participant's checks (it leaves the job);
 * `DPD_NET_ERR_STOPPED` after `dpd_net_participant_stop`; `DPD_NET_ERR_INVALID_STATE` without
 * rows. Transient network failures are retried, not returned.
 *
 * # Safety
 * `participant` is a live handle; `job_id` is NULL or NUL-terminated; `out` is NULL only when
 * `job_id` is NULL, else points to a writable `dpd_net_outcome`.
 */
enum dpd_net_status dpd_net_participant_follow_job(struct dpd_net_participant *participant,
                                                   const char *job_id,
                                                   struct dpd_net_outcome *out);

/**
 * Copies the reason the last followed job gave for not ending done (empty if it ended done)
 * into `buf`, as `dpd_net_last_error_message` does.
 *
 * # Safety
 * `participant` is a live handle; `buf` points to `len` writable bytes (or is NULL with
 * `len == 0`); `out_len` is NULL or writable.
 */
enum dpd_net_status dpd_net_participant_outcome_reason(const struct dpd_net_participant *participant,
                                                       char *buf,
                                                       size_t len,
                                                       size_t *out_len);

/**
 * Stops the participant: a `dpd_net_participant_follow_job` running on another thread returns
 * `DPD_NET_ERR_STOPPED` at its next wait (an upload in flight finishes or is cut; its sealed
 * shares stay on disk, so a new participant on the same state directory re-sends exactly them).
 * A stopped participant stays stopped. Safe to call from any thread, any number of times.
 *
 * # Safety
 * `participant` is a live handle.
 */
enum dpd_net_status dpd_net_participant_stop(const struct dpd_net_participant *participant);

/**
 * Frees a participant (NULL is ignored). It must not be following a job.
 *
 * # Safety
 * `participant` is NULL or a handle from `dpd_net_participant_new` not yet freed.
 */
void dpd_net_participant_free(struct dpd_net_participant *participant);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* DPDIST_NET_H */
