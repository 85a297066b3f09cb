//! The participant handle: a data holder that follows jobs on the aggregator with rows its host
//! handed over (`dca_service::participant` does the work; this file is its C face).

use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use dca_service::participant::{Participant, Policy, Rows};
use dca_service::secret::SecretString;

use crate::error::{NetError, NetResult, copy_out, dpd_net_status, entry};

/// How a matrix's values are laid out (`dpd_net_participant_set_rows`, passed as `uint32_t`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_net_layout {
    /// Row after row (C, C++, numpy's default).
    DPD_NET_ROW_MAJOR = 0,
    /// Column after column (R, Julia, Fortran).
    DPD_NET_COLUMN_MAJOR = 1,
}

/// How a followed job ended (`dpd_net_outcome.state`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_net_job_state {
    /// Released its result.
    DPD_NET_JOB_DONE = 0,
    /// Aborted (too many refusals or dropouts, budget, a failed round); nothing more released.
    DPD_NET_JOB_ABORTED = 1,
    /// Cancelled by the analyst.
    DPD_NET_JOB_CANCELLED = 2,
}

/// What became of a job the participant followed to its end.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct dpd_net_outcome {
    /// A `dpd_net_job_state`.
    pub state: u32,
    /// 1 when this participant's shares are in every released round it was a client of, and
    /// at least one was released; else 0 (it refused, left, was a dropout, or no round it
    /// sealed for was released — such a round stays charged in its ledger: charged at
    /// sealing).
    pub took_part: u32,
}

/// A data holder taking part in jobs. Opaque; create with `dpd_net_participant_new`, free with
/// `dpd_net_participant_free`.
#[allow(non_camel_case_types)]
pub struct dpd_net_participant {
    state: Mutex<State>,
    stop: tokio::sync::watch::Sender<bool>,
    runtime: tokio::runtime::Runtime,
}

struct State {
    aggregator: String,
    http: reqwest::Client,
    token: SecretString,
    policy: Policy,
    state_dir: PathBuf,
    rows: Option<Rows>,
    insecure_seed: Option<u64>,
    poll: Duration,
    reason: String,
}

/// A required NUL-terminated UTF-8 argument.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that stays valid for the call.
unsafe fn text<'a>(p: *const c_char, name: &str) -> NetResult<&'a str> {
    if p.is_null() {
        return Err(NetError::null(name));
    }
    // SAFETY: NUL-terminated and valid for the call (caller's contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| NetError::invalid(format!("argument `{name}` is not UTF-8")))
}

fn read(path: &Path, what: &str) -> NetResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        NetError::new(
            dpd_net_status::DPD_NET_ERR_IO,
            format!("{what} {}: {e}", path.display()),
        )
    })
}

fn handle<'a>(p: *const dpd_net_participant) -> NetResult<&'a dpd_net_participant> {
    // SAFETY: a non-NULL handle came from dpd_net_participant_new and is not freed (caller's
    // contract); only shared references are made, the state behind them is a Mutex.
    unsafe { p.as_ref() }.ok_or_else(|| NetError::null("participant"))
}

impl dpd_net_participant {
    /// The state, or INVALID_STATE while another call (a job being followed) holds it.
    fn state(&self) -> NetResult<std::sync::MutexGuard<'_, State>> {
        self.state.try_lock().map_err(|_| {
            NetError::new(
                dpd_net_status::DPD_NET_ERR_INVALID_STATE,
                "the participant is following a job on another thread (only \
                 dpd_net_participant_stop may be called meanwhile)",
            )
        })
    }
}

/// Creates a participant of the aggregator at `aggregator_url` (https://host:port), trusting the
/// CA certificate in `ca_pem_path`, presenting the bearer token in `token_path` (the roster lists
/// its SHA-256), answering jobs by the policy in `policy_path` (TOML: `columns`,
/// `max_epsilon_per_job`, `total_epsilon`) and keeping its ledger and sealed attempts in
/// `state_dir` (created if missing; reuse it across restarts so that no round is paid twice).
/// Every file is read now; a file that cannot be read is `DPD_NET_ERR_IO` naming it.
///
/// # Safety
/// The strings are NUL-terminated and valid for the call; `out` points to a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_new(
    aggregator_url: *const c_char,
    ca_pem_path: *const c_char,
    token_path: *const c_char,
    policy_path: *const c_char,
    state_dir: *const c_char,
    out: *mut *mut dpd_net_participant,
) -> dpd_net_status {
    entry("dpd_net_participant_new", || {
        // SAFETY: the caller's contract for each string.
        let (url, ca, token, policy, dir) = unsafe {
            (
                text(aggregator_url, "aggregator_url")?,
                text(ca_pem_path, "ca_pem_path")?,
                text(token_path, "token_path")?,
                text(policy_path, "policy_path")?,
                text(state_dir, "state_dir")?,
            )
        };
        if out.is_null() {
            return Err(NetError::null("out"));
        }
        if !url.starts_with("https://") {
            return Err(NetError::invalid(format!(
                "aggregator_url {url:?} is not an https:// URL"
            )));
        }
        let ca_pem = read(Path::new(ca), "CA file")?;
        let http = dca_service::http::tls::http_client(&ca_pem, 8, Duration::from_secs(60))
            .map_err(|e| NetError::new(dpd_net_status::DPD_NET_ERR_TLS, format!("{ca}: {e}")))?;
        let token = SecretString::read_file(Path::new(token)).map_err(|e| {
            NetError::new(
                dpd_net_status::DPD_NET_ERR_IO,
                format!("token file {token}: {e}"),
            )
        })?;
        let policy_text = String::from_utf8(read(Path::new(policy), "policy file")?)
            .map_err(|_| NetError::invalid(format!("policy file {policy} is not UTF-8")))?;
        let policy = Policy::parse(&policy_text)
            .map_err(|e| NetError::invalid(format!("policy file {policy}: {e}")))?;
        std::fs::create_dir_all(dir).map_err(|e| {
            NetError::new(
                dpd_net_status::DPD_NET_ERR_IO,
                format!("state directory {dir}: {e}"),
            )
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetError::new(dpd_net_status::DPD_NET_ERR_OTHER, e.to_string()))?;
        let participant = Box::new(dpd_net_participant {
            state: Mutex::new(State {
                aggregator: url.trim_end_matches('/').to_string(),
                http,
                token,
                policy,
                state_dir: PathBuf::from(dir),
                rows: None,
                insecure_seed: None,
                poll: Duration::from_millis(200),
                reason: String::new(),
            }),
            stop: tokio::sync::watch::channel(false).0,
            runtime,
        });
        // SAFETY: out is writable (checked non-NULL; caller's contract).
        unsafe { *out = Box::into_raw(participant) };
        Ok(())
    })
}

/// Hands the participant its rows: `n_rows` rows of `n_columns` values named by
/// `column_names` (distinct, non-empty), laid out as `layout` says (`DPD_NET_ROW_MAJOR` or
/// `DPD_NET_COLUMN_MAJOR`). The values are copied. A NaN (a missing value) or an infinity is
/// `DPD_NET_ERR_INVALID_ARGUMENT` naming its row and column, and the rows set before stay.
///
/// # Safety
/// `participant` is a live handle; `column_names` points to `n_columns` NUL-terminated strings;
/// `values` points to `n_rows * n_columns` doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_set_rows(
    participant: *mut dpd_net_participant,
    column_names: *const *const c_char,
    n_columns: usize,
    values: *const f64,
    n_rows: usize,
    layout: u32,
) -> dpd_net_status {
    entry("dpd_net_participant_set_rows", || {
        let p = handle(participant)?;
        if column_names.is_null() && n_columns > 0 {
            return Err(NetError::null("column_names"));
        }
        let count = n_rows
            .checked_mul(n_columns)
            .ok_or_else(|| NetError::invalid("n_rows * n_columns does not fit a size_t"))?;
        if values.is_null() && count > 0 {
            return Err(NetError::null("values"));
        }
        let column_major = match layout {
            0 => false,
            1 => true,
            other => {
                return Err(NetError::invalid(format!(
                    "layout {other} is neither DPD_NET_ROW_MAJOR (0) nor DPD_NET_COLUMN_MAJOR (1)"
                )));
            }
        };
        let names: Vec<String> = (0..n_columns)
            .map(|j| {
                // SAFETY: column_names has n_columns entries (caller's contract).
                let name = unsafe { *column_names.add(j) };
                // SAFETY: each entry is NULL or NUL-terminated (caller's contract).
                unsafe { text(name, &format!("column_names[{j}]")) }.map(str::to_string)
            })
            .collect::<NetResult<_>>()?;
        let given: &[f64] = if count == 0 {
            &[]
        } else {
            // SAFETY: values has n_rows * n_columns doubles (caller's contract).
            unsafe { std::slice::from_raw_parts(values, count) }
        };
        let mut matrix = Vec::new();
        matrix
            .try_reserve_exact(count)
            .map_err(|_| NetError::invalid(format!("no memory for {count} values")))?;
        if column_major {
            for i in 0..n_rows {
                matrix.extend((0..n_columns).map(|j| given[j * n_rows + i]));
            }
        } else {
            matrix.extend_from_slice(given);
        }
        let rows = Rows::memory(names, matrix)?;
        p.state()?.rows = Some(rows);
        Ok(())
    })
}

/// NON-PRIVATE, for tests only: draws this participant's noise and masks from `seed` (derived
/// per round and client exactly as `dpdist participant --insecure-seed`), so that a job's result
/// can be compared bit for bit with the in-process pipeline. Never use it with real data.
///
/// # Safety
/// `participant` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_set_insecure_fixed_seed(
    participant: *mut dpd_net_participant,
    seed: u64,
) -> dpd_net_status {
    entry("dpd_net_participant_set_insecure_fixed_seed", || {
        handle(participant)?.state()?.insecure_seed = Some(seed);
        Ok(())
    })
}

/// How often the participant asks the aggregator for work (milliseconds, 10 to 600000; default
/// 200). It backs off up to 5 s while the aggregator cannot be reached.
///
/// # Safety
/// `participant` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_set_poll_ms(
    participant: *mut dpd_net_participant,
    poll_ms: u32,
) -> dpd_net_status {
    entry("dpd_net_participant_set_poll_ms", || {
        if !(10..=600_000).contains(&poll_ms) {
            return Err(NetError::invalid(format!(
                "poll_ms {poll_ms} is outside 10..=600000"
            )));
        }
        handle(participant)?.state()?.poll = Duration::from_millis(poll_ms.into());
        Ok(())
    })
}

/// Follows job `job_id` (64 hex digits, as `dpdist job create` prints it) until it ends: answers
/// it by the policy, and if it accepted, contributes to each of its rounds. Blocks the calling
/// thread. On `DPD_NET_OK`, `*out` says how the job ended and whether this participant took
/// part; the job's reason (if it did not end done) is read with
/// `dpd_net_participant_outcome_reason`. With `job_id` NULL it follows every job whose roster
/// lists its token and returns only when stopped (`DPD_NET_ERR_STOPPED`).
///
/// Errors: `DPD_NET_ERR_JOB` when the aggregator does not know the job or refuses the token, or
/// when a round of the job fails this participant's checks (it leaves the job);
/// `DPD_NET_ERR_STOPPED` after `dpd_net_participant_stop`; `DPD_NET_ERR_INVALID_STATE` without
/// rows. Transient network failures are retried, not returned.
///
/// # Safety
/// `participant` is a live handle; `job_id` is NULL or NUL-terminated; `out` is NULL only when
/// `job_id` is NULL, else points to a writable `dpd_net_outcome`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_follow_job(
    participant: *mut dpd_net_participant,
    job_id: *const c_char,
    out: *mut dpd_net_outcome,
) -> dpd_net_status {
    entry("dpd_net_participant_follow_job", || {
        let p = handle(participant)?;
        let job = if job_id.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated (caller's contract).
            let id = unsafe { text(job_id, "job_id") }?;
            if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(NetError::invalid(format!(
                    "job_id {id:?} is not 64 hex digits"
                )));
            }
            if out.is_null() {
                return Err(NetError::null("out"));
            }
            Some(id.to_ascii_lowercase())
        };
        let mut state = p.state()?;
        let rows = state.rows.take().ok_or_else(|| {
            NetError::new(
                dpd_net_status::DPD_NET_ERR_INVALID_STATE,
                "no rows: call dpd_net_participant_set_rows first",
            )
        })?;
        let participant = Participant {
            aggregator: state.aggregator.clone(),
            http: state.http.clone(),
            token: state.token.clone(),
            rows,
            policy: state.policy.clone(),
            state_dir: state.state_dir.clone(),
            insecure_seed: state.insecure_seed,
            poll: state.poll,
            // A host that follows a job by id was given the id after the job was created;
            // one that follows every job is told at once when its token is on no roster.
            wait_for_job: std::time::Duration::ZERO,
            rebuild_ledger: false,
        };
        let mut stopped = p.stop.subscribe();
        let result = p.runtime.block_on(async {
            tokio::select! {
                outcome = participant.run(job.as_deref()) => Some(outcome),
                _ = stopped.wait_for(|stop| *stop) => None,
            }
        });
        state.rows = Some(participant.rows);
        let outcome = result.ok_or_else(|| {
            NetError::new(
                dpd_net_status::DPD_NET_ERR_STOPPED,
                "stopped by dpd_net_participant_stop",
            )
        })??;
        let job_state = match outcome.state.as_str() {
            "done" => dpd_net_job_state::DPD_NET_JOB_DONE,
            "aborted" => dpd_net_job_state::DPD_NET_JOB_ABORTED,
            "cancelled" => dpd_net_job_state::DPD_NET_JOB_CANCELLED,
            other => {
                return Err(NetError::new(
                    dpd_net_status::DPD_NET_ERR_OTHER,
                    format!("the job ended in a state this library does not know: {other}"),
                ));
            }
        };
        state.reason = outcome.reason.unwrap_or_default();
        // SAFETY: out is writable when job_id is not NULL (checked above; caller's contract).
        unsafe {
            *out = dpd_net_outcome {
                state: job_state as u32,
                took_part: outcome.took_part.into(),
            }
        };
        Ok(())
    })
}

/// Copies the reason the last followed job gave for not ending done (empty if it ended done)
/// into `buf`, as `dpd_net_last_error_message` does.
///
/// # Safety
/// `participant` is a live handle; `buf` points to `len` writable bytes (or is NULL with
/// `len == 0`); `out_len` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_outcome_reason(
    participant: *const dpd_net_participant,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> dpd_net_status {
    entry("dpd_net_participant_outcome_reason", || {
        let reason = handle(participant)?.state()?.reason.clone();
        // SAFETY: the caller's contract is copy_out's.
        unsafe { copy_out(&reason, buf, len, out_len) }
    })
}

/// Stops the participant: a `dpd_net_participant_follow_job` running on another thread returns
/// `DPD_NET_ERR_STOPPED` at its next wait (an upload in flight finishes or is cut; its sealed
/// shares stay on disk, so a new participant on the same state directory re-sends exactly them).
/// A stopped participant stays stopped. Safe to call from any thread, any number of times.
///
/// # Safety
/// `participant` is a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_stop(
    participant: *const dpd_net_participant,
) -> dpd_net_status {
    entry("dpd_net_participant_stop", || {
        handle(participant)?.stop.send_replace(true);
        Ok(())
    })
}

/// Frees a participant (NULL is ignored). It must not be following a job.
///
/// # Safety
/// `participant` is NULL or a handle from `dpd_net_participant_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_participant_free(participant: *mut dpd_net_participant) {
    if !participant.is_null() {
        // SAFETY: from Box::into_raw in dpd_net_participant_new, freed once (caller's contract).
        drop(unsafe { Box::from_raw(participant) });
    }
}
