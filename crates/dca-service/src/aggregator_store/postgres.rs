//! The aggregator's store on PostgreSQL (`--store postgres://…`): one database that several
//! aggregator processes may share.
//!
//! The blocking `postgres` client blocks on a runtime of its own, which tokio refuses (panics)
//! on a thread that runs async tasks, and the aggregator calls its store from async handlers.
//! So the connection lives on a thread of its own and every call is shipped to it as a closure
//! and answered over a channel: the aggregator's code stays the same synchronous calls as on
//! SQLite, and waiting on a channel is no worse for the async thread than SQLite's mutex.
//!
//! What must happen once across processes is decided in the database, in one transaction:
//! a round's state changes are compare-and-swaps on its row (`SELECT … FOR UPDATE` of the
//! state left, then the update), so exactly one process moves a round created → closing
//! (recording the agreed set and the charge) and exactly one closing → released; and every
//! transaction that charges the budget first locks the one row of `agg_budget`, then checks
//! the charge against the charges as recorded, so two processes never both spend the last of
//! the budget. The release lease of a closing round is a row of `agg_release_leases`, taken by
//! one upsert whose condition (no live lease of another) is evaluated under the row's lock, so
//! of processes racing for it exactly one gets it; the release is recorded only in a
//! transaction that locks that row and finds the lease still the caller's (or nobody's live
//! one). A job's driver lease is a row of `agg_job_leases`, taken the same way; the acquirers of
//! several processes take expired leases with `FOR UPDATE SKIP LOCKED`, so they get distinct
//! jobs; a driver's status write locks the job's row and its lease row and checks the lease in
//! the same transaction. A transaction that fails with a serialization failure or a deadlock is
//! run again, a bounded number of times.
//!
//! The connection opens itself again on the next call once the server closed it (a restart,
//! a failover, an idle connection cut); a transaction cut before its commit is run again on
//! the new connection, one cut during its commit is an error that says its outcome is unknown
//! (see [`crate::postgres_tx`]). Migrations run once, at open.

use std::fmt;
use std::sync::mpsc;
use std::time::Duration;

use postgres::{IsolationLevel, Transaction};
use sha2::{Digest, Sha256};

use super::{
    JobLeaseTaken, JobWrite, JobWriter, LeaseTaken, RecordedJob, RoundPhase, RoundState,
    answer_sha256, charge_sha256, check, check_job_budget, check_round, counts_by_phase,
    job_round_sha256, job_sha256, may_write_job, reservation_id, row_sha256,
};
use crate::postgres_tx::{self, PgConnection, PgMigration, TxError};
use crate::{Error, Result};

/// A PostgreSQL database given to the aggregator's `--store`: the client's configuration and
/// the URL as it may be shown (without its password).
#[derive(Clone)]
pub struct AggregatorPgLocation {
    config: Box<postgres::Config>,
    shown: String,
}

impl fmt::Debug for AggregatorPgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Display for AggregatorPgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl AggregatorPgLocation {
    /// Parses a `postgres://` or `postgresql://` URL.
    ///
    /// # Errors
    /// [`Error::Postgres`] naming the URL (without a password) and what is wrong.
    pub fn parse(url: &str) -> Result<Self> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            // Whatever the scheme, what precedes the host may be a password.
            let shown = match (url.split_once("://"), url.rsplit_once('@')) {
                (Some((scheme, _)), Some((_, host))) => format!("{scheme}://***@{host}"),
                _ => url.to_string(),
            };
            return Err(Error::Postgres(format!(
                "--store {shown}: not a PostgreSQL URL (postgres://user@host:port/database); \
                 leave --store out and give --db for the SQLite store"
            )));
        }
        // The node's parser checks the database and redacts the password, with the same
        // messages for both services.
        let shown = crate::node::PgLocation::parse(url)?.to_string();
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| Error::Postgres(format!("--store {shown}: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        config.application_name("dpdist-aggregator");
        Ok(AggregatorPgLocation {
            config: Box::new(config),
            shown,
        })
    }

    fn connect(&self) -> Result<PgConnection> {
        PgConnection::open(&self.config, &self.shown)
    }
}

type Call = Box<dyn FnOnce(&mut PgConnection) + Send>;

pub(crate) struct PgAggregatorStore {
    calls: mpsc::Sender<Call>,
    shown: String,
}

impl PgAggregatorStore {
    /// Connects (on the store's own thread) and brings the schema up to date.
    pub fn open(at: &AggregatorPgLocation) -> Result<Self> {
        let (calls, inbox) = mpsc::channel::<Call>();
        let (ready, opened) = mpsc::sync_channel(1);
        let location = at.clone();
        std::thread::Builder::new()
            .name("dpdist-aggregator-pg".into())
            .spawn(move || {
                let connected = location.connect().and_then(|mut conn| {
                    migrate(&mut conn, &location.shown)?;
                    Ok(conn)
                });
                let mut conn = match connected {
                    Ok(conn) => conn,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                // Ends when the store (the only sender) is dropped.
                for call in inbox {
                    call(&mut conn);
                }
            })?;
        opened
            .recv()
            .map_err(|_| Error::Postgres(format!("{}: the store thread stopped", at.shown)))??;
        Ok(PgAggregatorStore {
            calls,
            shown: at.shown.clone(),
        })
    }

    /// Runs `f` on the store's thread and waits for its answer.
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PgConnection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (reply, answer) = mpsc::sync_channel(1);
        let gone = || Error::Postgres(format!("{}: the store thread stopped", self.shown));
        self.calls
            .send(Box::new(move |client| {
                let _ = reply.send(f(client));
            }))
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }

    /// Runs `f` in a transaction on the store's thread (see [`in_tx`]).
    fn tx<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Transaction<'_>) -> std::result::Result<T, TxError> + Send + 'static,
    ) -> Result<T> {
        self.call(move |conn| in_tx(conn, f))
    }

    pub fn charges(&self) -> Result<Vec<f64>> {
        self.tx(read_charges)
    }

    pub fn insert_round(&self, id: &str, spec_json: &[u8]) -> Result<()> {
        let (id, spec) = (id.to_string(), spec_json.to_vec());
        self.tx(move |tx| {
            tx.execute(
                "INSERT INTO agg_rounds (id, spec, state, sha256) VALUES ($1, $2, 'created', $3)
                 ON CONFLICT (id) DO NOTHING",
                &[&id, &spec, &&row_sha256(&id, &spec, "created", None)[..]],
            )?;
            Ok(())
        })
    }

    pub fn specs_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, Vec<u8>)>> {
        let states: Vec<&'static str> = states.iter().map(|s| s.as_str()).collect();
        self.tx(move |tx| {
            let mut out = Vec::new();
            for row in tx.query(
                "SELECT id, spec, state, detail, sha256 FROM agg_rounds
                 WHERE state = ANY($1) ORDER BY seq",
                &[&states],
            )? {
                let (id, spec): (String, Vec<u8>) = (row.get(0), row.get(1));
                let (state, detail): (String, Option<String>) = (row.get(2), row.get(3));
                check_round(&id, &spec, &state, detail.as_deref(), row.get(4))?;
                out.push((id, spec));
            }
            Ok(out)
        })
    }

    pub fn ids_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>> {
        let states: Vec<&'static str> = states.iter().map(|s| s.as_str()).collect();
        self.tx(move |tx| {
            tx.query(
                "SELECT id, state FROM agg_rounds WHERE state = ANY($1) ORDER BY seq",
                &[&states],
            )?
            .iter()
            .map(|row| Ok((row.get(0), RoundPhase::parse(row.get(1))?)))
            .collect()
        })
    }

    pub fn count_by_state(&self) -> Result<Vec<(RoundPhase, usize)>> {
        self.tx(|tx| {
            let rows = tx.query("SELECT state, COUNT(*) FROM agg_rounds GROUP BY state", &[])?;
            Ok(counts_by_phase(
                rows.iter()
                    .map(|row| (row.get(0), row.get::<_, i64>(1) as usize)),
            )?)
        })
    }

    pub fn round(&self, id: &str) -> Result<Option<(Vec<u8>, RoundState)>> {
        let id = id.to_string();
        self.tx(move |tx| {
            let Some(row) = tx.query_opt(
                "SELECT spec, state, detail, sha256 FROM agg_rounds WHERE id = $1",
                &[&id],
            )?
            else {
                return Ok(None);
            };
            let (spec, state, detail): (Vec<u8>, String, Option<String>) =
                (row.get(0), row.get(1), row.get(2));
            check_round(&id, &spec, &state, detail.as_deref(), row.get(3))?;
            Ok(Some((spec, RoundState::from_row(&id, &state, detail)?)))
        })
    }

    pub fn begin_abort(&self, id: &str, reason: &str) -> Result<bool> {
        let (id, reason) = (id.to_string(), reason.to_string());
        self.tx(move |tx| {
            transition(
                tx,
                &id,
                RoundPhase::Created,
                RoundPhase::Aborting,
                Some(&reason),
            )
        })
    }

    pub fn finish_abort(&self, id: &str) -> Result<()> {
        let id = id.to_string();
        self.tx(move |tx| {
            let reason: Option<String> = tx
                .query_opt(
                    "SELECT detail FROM agg_rounds WHERE id = $1 AND state = 'aborting'
                     FOR UPDATE",
                    &[&id],
                )?
                .and_then(|r| r.get(0));
            transition(
                tx,
                &id,
                RoundPhase::Aborting,
                RoundPhase::Aborted,
                reason.as_deref(),
            )?;
            Ok(())
        })
    }

    pub fn begin_close(
        &self,
        id: &str,
        close_body: &[u8],
        rho: Option<f64>,
        fits: impl Fn(&[f64]) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        let (id, body) = (id.to_string(), close_body.to_vec());
        self.tx(move |tx| {
            lock_budget(tx)?;
            if !record_close(tx, &id, &body)? {
                return Ok(false);
            }
            if let Some(rho) = rho {
                fits(&read_charges(tx)?)?;
                tx.execute(
                    "INSERT INTO agg_charges (id, rho, sha256) VALUES ($1, $2, $3)",
                    &[&id, &rho, &&charge_sha256(&id, rho)[..]],
                )?;
            }
            Ok(true)
        })
    }

    pub fn begin_close_job_round(
        &self,
        id: &str,
        close_body: &[u8],
        job: &str,
        rho: f64,
    ) -> Result<bool> {
        let (id, body, job) = (id.to_string(), close_body.to_vec(), job.to_string());
        self.tx(move |tx| {
            lock_budget(tx)?;
            if !record_close(tx, &id, &body)? {
                return Ok(false);
            }
            check_job_budget(&job, reserved(tx, &job)?, job_rounds_rho(tx, &job)?, rho)?;
            tx.execute(
                "UPDATE agg_job_rounds SET rho = $3, sha256 = $4 WHERE round = $1 AND job = $2",
                &[
                    &id,
                    &job,
                    &rho,
                    &&job_round_sha256(&id, &job, Some(rho))[..],
                ],
            )?;
            Ok(true)
        })
    }

    pub fn close_body(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let id = id.to_string();
        self.tx(move |tx| {
            let Some(row) =
                tx.query_opt("SELECT body, sha256 FROM agg_closes WHERE id = $1", &[&id])?
            else {
                return Ok(None);
            };
            let (body, sha256): (Vec<u8>, Vec<u8>) = (row.get(0), row.get(1));
            check(Some(&sha256), &Sha256::digest(&body).into(), || {
                format!("the recorded agreed set of round {id}")
            })?;
            Ok(Some(body))
        })
    }

    pub fn mark_released(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        release_json: &str,
    ) -> Result<bool> {
        let (id, holder, json) = (id.to_string(), holder.to_string(), release_json.to_string());
        self.tx(move |tx| {
            // The round's row first: a lease taken concurrently (under a share lock of that
            // row) is either committed before this reads it, or waits for this to finish.
            tx.execute("SELECT 1 FROM agg_rounds WHERE id = $1 FOR UPDATE", &[&id])?;
            let lease = tx.query_opt(
                "SELECT holder, expires_ms FROM agg_release_leases WHERE round_id = $1
                 FOR UPDATE",
                &[&id],
            )?;
            if let Some(row) = lease {
                let (other, expires): (String, i64) = (row.get(0), row.get(1));
                if other != holder && expires > now_ms as i64 {
                    return Ok(false);
                }
            }
            transition(
                tx,
                &id,
                RoundPhase::Closing,
                RoundPhase::Released,
                Some(&json),
            )
        })
    }

    pub fn mark_failed(&self, id: &str, holder: &str, now_ms: u64, cause: &str) -> Result<bool> {
        let (id, holder, cause) = (id.to_string(), holder.to_string(), cause.to_string());
        self.tx(move |tx| {
            // As `mark_released`: the round's row, then its lease, locked in that order.
            tx.execute("SELECT 1 FROM agg_rounds WHERE id = $1 FOR UPDATE", &[&id])?;
            let lease = tx.query_opt(
                "SELECT holder, expires_ms FROM agg_release_leases WHERE round_id = $1
                 FOR UPDATE",
                &[&id],
            )?;
            if let Some(row) = lease {
                let (other, expires): (String, i64) = (row.get(0), row.get(1));
                if other != holder && expires > now_ms as i64 {
                    return Ok(false);
                }
            }
            transition(
                tx,
                &id,
                RoundPhase::Closing,
                RoundPhase::Failed,
                Some(&cause),
            )
        })
    }

    pub fn take_release_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<LeaseTaken> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.tx(move |tx| {
            let state: Option<String> = tx
                .query_opt(
                    "SELECT state FROM agg_rounds WHERE id = $1 FOR SHARE",
                    &[&id],
                )?
                .map(|r| r.get(0));
            if state.as_deref() != Some(RoundPhase::Closing.as_str()) {
                return Ok(LeaseTaken::NotClosing);
            }
            let taken = tx.execute(
                "INSERT INTO agg_release_leases (round_id, holder, expires_ms) VALUES ($1, $2, $4)
                 ON CONFLICT (round_id) DO UPDATE
                     SET holder = EXCLUDED.holder, expires_ms = EXCLUDED.expires_ms
                     WHERE agg_release_leases.expires_ms <= $3
                        OR agg_release_leases.holder = $2",
                &[&id, &holder, &(now_ms as i64), &(until_ms as i64)],
            )? == 1;
            if taken {
                return Ok(LeaseTaken::Taken);
            }
            let row = tx.query_one(
                "SELECT holder, expires_ms FROM agg_release_leases WHERE round_id = $1",
                &[&id],
            )?;
            Ok(LeaseTaken::HeldBy(row.get(0), row.get::<_, i64>(1) as u64))
        })
    }

    pub fn renew_release_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.tx(move |tx| {
            Ok(tx.execute(
                "UPDATE agg_release_leases SET expires_ms = $3 WHERE round_id = $1 AND holder = $2",
                &[&id, &holder, &(until_ms as i64)],
            )? == 1)
        })
    }

    pub fn drop_release_lease(&self, id: &str, holder: &str) -> Result<()> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.tx(move |tx| {
            tx.execute(
                "UPDATE agg_release_leases SET expires_ms = 0 WHERE round_id = $1 AND holder = $2",
                &[&id, &holder],
            )?;
            Ok(())
        })
    }

    #[cfg(test)]
    pub fn release_lease(&self, id: &str) -> Result<Option<(String, u64)>> {
        let id = id.to_string();
        self.tx(move |tx| {
            Ok(tx
                .query_opt(
                    "SELECT holder, expires_ms FROM agg_release_leases WHERE round_id = $1",
                    &[&id],
                )?
                .map(|r| (r.get(0), r.get::<_, i64>(1) as u64)))
        })
    }

    pub fn insert_job(
        &self,
        id: &str,
        spec: &[u8],
        status: &[u8],
        rho: f64,
        lease: (&str, u64),
        fits: impl Fn(&[f64]) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        let (id, spec, status) = (id.to_string(), spec.to_vec(), status.to_vec());
        let (holder, until) = (lease.0.to_string(), lease.1 as i64);
        self.tx(move |tx| {
            lock_budget(tx)?;
            let inserted = tx.execute(
                "INSERT INTO agg_jobs (id, spec, status, sha256) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (id) DO NOTHING",
                &[&id, &spec, &status, &&job_sha256(&id, &spec, &status)[..]],
            )? == 1;
            if inserted {
                fits(&read_charges(tx)?)?;
                let charge = reservation_id(&id);
                tx.execute(
                    "INSERT INTO agg_charges (id, rho, sha256) VALUES ($1, $2, $3)",
                    &[&charge, &rho, &&charge_sha256(&charge, rho)[..]],
                )?;
                tx.execute(
                    "INSERT INTO agg_job_leases (job_id, holder, expires_ms) VALUES ($1, $2, $3)",
                    &[&id, &holder, &until],
                )?;
            }
            Ok(inserted)
        })
    }

    pub fn job(&self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let id = id.to_string();
        self.tx(move |tx| {
            let Some(row) = tx.query_opt(
                "SELECT spec, status, sha256 FROM agg_jobs WHERE id = $1",
                &[&id],
            )?
            else {
                return Ok(None);
            };
            let (spec, status, sha256): (Vec<u8>, Vec<u8>, Vec<u8>) =
                (row.get(0), row.get(1), row.get(2));
            check(Some(&sha256), &job_sha256(&id, &spec, &status), || {
                format!("the recorded job {id}")
            })?;
            Ok(Some((spec, status)))
        })
    }

    pub fn job_ids(&self) -> Result<Vec<String>> {
        self.tx(|tx| {
            Ok(tx
                .query("SELECT id FROM agg_jobs ORDER BY seq", &[])?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
    }

    pub fn jobs(&self) -> Result<Vec<RecordedJob>> {
        self.tx(|tx| {
            let mut out = Vec::new();
            for row in tx.query(
                "SELECT id, spec, status, sha256 FROM agg_jobs ORDER BY seq",
                &[],
            )? {
                let (id, spec, status, sha256): (String, Vec<u8>, Vec<u8>, Vec<u8>) =
                    (row.get(0), row.get(1), row.get(2), row.get(3));
                check(Some(&sha256), &job_sha256(&id, &spec, &status), || {
                    format!("the recorded job {id}")
                })?;
                out.push((id, spec, status));
            }
            Ok(out)
        })
    }

    pub fn set_job_status(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        status: &[u8],
        driver: JobWriter<'_>,
    ) -> Result<JobWrite<()>> {
        let (id, status) = (id.to_string(), status.to_vec());
        let expected = expected.map(<[u8]>::to_vec);
        let driver = driver.map(|(h, now)| (h.to_string(), now));
        self.tx(move |tx| {
            let spec = match job_row_for_change(tx, &id, expected.as_deref(), &driver)? {
                Ok(spec) => spec,
                Err(refused) => return Ok(refused),
            };
            tx.execute(
                "UPDATE agg_jobs SET status = $2, sha256 = $3 WHERE id = $1",
                &[&id, &status, &&job_sha256(&id, &spec, &status)[..]],
            )?;
            Ok(JobWrite::Written(()))
        })
    }

    pub fn settle_job(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        driver: JobWriter<'_>,
        status: impl Fn(f64) -> Result<Vec<u8>> + Send + 'static,
    ) -> Result<JobWrite<f64>> {
        let id = id.to_string();
        let expected = expected.map(<[u8]>::to_vec);
        let driver = driver.map(|(h, now)| (h.to_string(), now));
        self.tx(move |tx| {
            lock_budget(tx)?;
            let spec = match job_row_for_change(tx, &id, expected.as_deref(), &driver)? {
                Ok(spec) => spec,
                Err(refused) => return Ok(refused),
            };
            let used = job_rounds_rho(tx, &id)?;
            let status = status(used)?;
            let charge = reservation_id(&id);
            tx.execute(
                "UPDATE agg_charges SET rho = $2, sha256 = $3 WHERE id = $1",
                &[&charge, &used, &&charge_sha256(&charge, used)[..]],
            )?;
            tx.execute(
                "UPDATE agg_jobs SET status = $2, sha256 = $3 WHERE id = $1",
                &[&id, &status, &&job_sha256(&id, &spec, &status)[..]],
            )?;
            tx.execute(
                "UPDATE agg_job_leases SET ended = TRUE WHERE job_id = $1",
                &[&id],
            )?;
            Ok(JobWrite::Written(used))
        })
    }

    pub fn job_version(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let id = id.to_string();
        self.tx(move |tx| {
            Ok(tx
                .query_opt("SELECT sha256 FROM agg_jobs WHERE id = $1", &[&id])?
                .map(|r| r.get(0)))
        })
    }

    pub fn take_job_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<JobLeaseTaken> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.tx(move |tx| {
            // One statement: its condition is evaluated under the row's lock, so of processes
            // racing for the lease exactly one gets it.
            let taken = tx.execute(
                "UPDATE agg_job_leases SET holder = $2, expires_ms = $4
                 WHERE job_id = $1 AND NOT ended AND (expires_ms <= $3 OR holder = $2)",
                &[&id, &holder, &(now_ms as i64), &(until_ms as i64)],
            )? == 1;
            if taken {
                return Ok(JobLeaseTaken::Taken);
            }
            Ok(match locked_job_lease(tx, &id)? {
                Some((other, expires, false)) => JobLeaseTaken::HeldBy(other, expires),
                _ => JobLeaseTaken::Ended,
            })
        })
    }

    pub fn acquire_job_leases(
        &self,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
        limit: usize,
    ) -> Result<Vec<String>> {
        let holder = holder.to_string();
        self.tx(move |tx| {
            Ok(tx
                .query(
                    "WITH taken AS (
                         UPDATE agg_job_leases SET holder = $1, expires_ms = $3
                         WHERE job_id IN (
                             SELECT job_id FROM agg_job_leases
                             WHERE NOT ended AND expires_ms <= $2
                             ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
                         RETURNING job_id, seq)
                     SELECT job_id FROM taken ORDER BY seq",
                    &[
                        &holder,
                        &(now_ms as i64),
                        &(until_ms as i64),
                        &(limit as i64),
                    ],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
    }

    pub fn renew_job_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.tx(move |tx| {
            Ok(tx.execute(
                "UPDATE agg_job_leases SET expires_ms = $3 WHERE job_id = $1 AND holder = $2",
                &[&id, &holder, &(until_ms as i64)],
            )? == 1)
        })
    }

    pub fn drop_job_lease(&self, id: &str, holder: &str, ended: bool) -> Result<()> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.tx(move |tx| {
            tx.execute(
                "UPDATE agg_job_leases SET expires_ms = 0, ended = ended OR $3
                 WHERE job_id = $1 AND holder = $2",
                &[&id, &holder, &ended],
            )?;
            Ok(())
        })
    }

    #[cfg(test)]
    pub fn job_lease(&self, id: &str) -> Result<Option<(String, u64, bool)>> {
        let id = id.to_string();
        self.tx(move |tx| locked_job_lease(tx, &id))
    }

    pub fn record_answer(&self, job: &str, index: usize, answer: &[u8]) -> Result<Vec<u8>> {
        let (job, answer) = (job.to_string(), answer.to_vec());
        self.tx(move |tx| {
            let participant = index as i64;
            tx.execute(
                "INSERT INTO agg_answers (job, participant, answer, sha256)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (job, participant) DO NOTHING",
                &[
                    &job,
                    &participant,
                    &answer,
                    &&answer_sha256(&job, index, &answer)[..],
                ],
            )?;
            let row = tx.query_one(
                "SELECT answer FROM agg_answers WHERE job = $1 AND participant = $2",
                &[&job, &participant],
            )?;
            Ok(row.get(0))
        })
    }

    pub fn answer_of(&self, job: &str, index: usize) -> Result<Option<Vec<u8>>> {
        let job = job.to_string();
        self.tx(move |tx| {
            let Some(row) = tx.query_opt(
                "SELECT answer, sha256 FROM agg_answers WHERE job = $1 AND participant = $2",
                &[&job, &(index as i64)],
            )?
            else {
                return Ok(None);
            };
            let (answer, sha256): (Vec<u8>, Vec<u8>) = (row.get(0), row.get(1));
            check(Some(&sha256), &answer_sha256(&job, index, &answer), || {
                format!("participant {index}'s recorded answer to job {job}")
            })?;
            Ok(Some(answer))
        })
    }

    pub fn answers(&self, job: &str) -> Result<Vec<(usize, Vec<u8>)>> {
        let job = job.to_string();
        self.tx(move |tx| {
            let mut out = Vec::new();
            for row in tx.query(
                "SELECT participant, answer, sha256 FROM agg_answers WHERE job = $1
                 ORDER BY participant",
                &[&job],
            )? {
                let (index, answer, sha256): (i64, Vec<u8>, Vec<u8>) =
                    (row.get(0), row.get(1), row.get(2));
                let index = index as usize;
                check(Some(&sha256), &answer_sha256(&job, index, &answer), || {
                    format!("participant {index}'s recorded answer to job {job}")
                })?;
                out.push((index, answer));
            }
            Ok(out)
        })
    }

    pub fn link_round(&self, round: &str, job: &str) -> Result<()> {
        let (round, job) = (round.to_string(), job.to_string());
        self.tx(move |tx| {
            tx.execute(
                "INSERT INTO agg_job_rounds (round, job, rho, sha256) VALUES ($1, $2, NULL, $3)
                 ON CONFLICT (round) DO NOTHING",
                &[&round, &job, &&job_round_sha256(&round, &job, None)[..]],
            )?;
            Ok(())
        })
    }

    pub fn job_of_round(&self, round: &str) -> Result<Option<String>> {
        let round = round.to_string();
        self.tx(move |tx| {
            let Some(row) = tx.query_opt(
                "SELECT job, rho, sha256 FROM agg_job_rounds WHERE round = $1",
                &[&round],
            )?
            else {
                return Ok(None);
            };
            let (job, rho, sha256): (String, Option<f64>, Vec<u8>) =
                (row.get(0), row.get(1), row.get(2));
            check(Some(&sha256), &job_round_sha256(&round, &job, rho), || {
                format!("the recorded job of round {round}")
            })?;
            Ok(Some(job))
        })
    }

    /// Test hook: runs `sql` as is (to damage a row as a bad disk or a bad hand would).
    #[cfg(test)]
    pub fn execute(&self, sql: &str) -> Result<()> {
        let sql = sql.to_string();
        self.call(move |conn| Ok(conn.client()?.batch_execute(&sql)?))
    }
}

/// Takes the budget's lock for the rest of the transaction: every transaction that reads the
/// charges to decide a new one, or changes one, holds it, so they run one at a time across
/// every process on the database.
fn lock_budget(tx: &mut Transaction<'_>) -> std::result::Result<(), TxError> {
    tx.execute("SELECT one FROM agg_budget FOR UPDATE", &[])?;
    Ok(())
}

fn read_charges(tx: &mut Transaction<'_>) -> std::result::Result<Vec<f64>, TxError> {
    let mut out = Vec::new();
    for row in tx.query("SELECT id, rho, sha256 FROM agg_charges ORDER BY seq", &[])? {
        let (id, rho, sha256): (String, f64, Vec<u8>) = (row.get(0), row.get(1), row.get(2));
        check(Some(&sha256), &charge_sha256(&id, rho), || {
            format!("the recorded charge of round {id}")
        })?;
        out.push(rho);
    }
    Ok(out)
}

/// Moves round `id` from `from` to `to` with `detail` (a compare-and-swap: the row is locked,
/// and a concurrent change is waited for and then seen); false if it was not in `from`.
fn transition(
    tx: &mut Transaction<'_>,
    id: &str,
    from: RoundPhase,
    to: RoundPhase,
    detail: Option<&str>,
) -> std::result::Result<bool, TxError> {
    let (from, to) = (from.as_str(), to.as_str());
    let Some(row) = tx.query_opt(
        "SELECT spec FROM agg_rounds WHERE id = $1 AND state = $2 FOR UPDATE",
        &[&id, &from],
    )?
    else {
        return Ok(false);
    };
    let spec: Vec<u8> = row.get(0);
    let changed = tx.execute(
        "UPDATE agg_rounds SET state = $3, detail = $4, sha256 = $5 WHERE id = $1 AND state = $2",
        &[
            &id,
            &from,
            &to,
            &detail,
            &&row_sha256(id, &spec, to, detail)[..],
        ],
    )?;
    Ok(changed == 1)
}

/// created → closing with the close request every node will be sent; false if the round was
/// not "created".
fn record_close(
    tx: &mut Transaction<'_>,
    id: &str,
    body: &[u8],
) -> std::result::Result<bool, TxError> {
    if !transition(tx, id, RoundPhase::Created, RoundPhase::Closing, None)? {
        return Ok(false);
    }
    tx.execute(
        "INSERT INTO agg_closes (id, body, sha256) VALUES ($1, $2, $3)",
        &[&id, &body, &Sha256::digest(body).as_slice()],
    )?;
    Ok(true)
}

/// Job `id`'s driver lease (holder, expiry, ended), its row locked for the rest of the
/// transaction.
fn locked_job_lease(
    tx: &mut Transaction<'_>,
    id: &str,
) -> std::result::Result<Option<(String, u64, bool)>, TxError> {
    Ok(tx
        .query_opt(
            "SELECT holder, expires_ms, ended FROM agg_job_leases WHERE job_id = $1 FOR UPDATE",
            &[&id],
        )?
        .map(|r| (r.get(0), r.get::<_, i64>(1) as u64, r.get(2))))
}

/// Job `id`'s spec, its row locked for the rest of the transaction, if the row is still version
/// `expected` (its SHA-256) and `driver` may write it (its lease row locked too); else what the
/// write comes to.
fn job_row_for_change<T>(
    tx: &mut Transaction<'_>,
    id: &str,
    expected: Option<&[u8]>,
    driver: &Option<(String, u64)>,
) -> std::result::Result<std::result::Result<Vec<u8>, JobWrite<T>>, TxError> {
    let Some(row) = tx.query_opt(
        "SELECT spec, sha256 FROM agg_jobs WHERE id = $1 FOR UPDATE",
        &[&id],
    )?
    else {
        return Err(Error::Job(format!("no job {id}")).into());
    };
    let (spec, version): (Vec<u8>, Vec<u8>) = (row.get(0), row.get(1));
    let lease = locked_job_lease(tx, id)?;
    if !may_write_job(driver.as_ref().map(|(h, now)| (h.as_str(), *now)), lease) {
        return Ok(Err(JobWrite::Refused));
    }
    if expected.is_some_and(|e| e != version.as_slice()) {
        return Ok(Err(JobWrite::Changed));
    }
    Ok(Ok(spec))
}

/// Job `job`'s reservation, checked.
fn reserved(tx: &mut Transaction<'_>, job: &str) -> std::result::Result<f64, TxError> {
    let charge = reservation_id(job);
    let row = tx.query_one(
        "SELECT rho, sha256 FROM agg_charges WHERE id = $1",
        &[&charge],
    )?;
    let (reserved, sha256): (f64, Vec<u8>) = (row.get(0), row.get(1));
    check(Some(&sha256), &charge_sha256(&charge, reserved), || {
        format!("the reservation of job {job}")
    })?;
    Ok(reserved)
}

fn job_rounds_rho(tx: &mut Transaction<'_>, job: &str) -> std::result::Result<f64, TxError> {
    let mut used = 0.0;
    for row in tx.query(
        "SELECT round, rho, sha256 FROM agg_job_rounds WHERE job = $1 ORDER BY seq",
        &[&job],
    )? {
        let (round, rho, sha256): (String, Option<f64>, Vec<u8>) =
            (row.get(0), row.get(1), row.get(2));
        check(Some(&sha256), &job_round_sha256(&round, job, rho), || {
            format!("the recorded charge of job {job}'s round {round}")
        })?;
        used += rho.unwrap_or(0.0);
    }
    Ok(used)
}

/// Runs `f` in a READ COMMITTED transaction, retried as [`postgres_tx::in_tx`] does (what must
/// not race takes row locks explicitly).
fn in_tx<T>(
    conn: &mut PgConnection,
    f: impl FnMut(&mut Transaction<'_>) -> std::result::Result<T, TxError>,
) -> Result<T> {
    postgres_tx::in_tx(conn, IsolationLevel::ReadCommitted, f)
}

const AGGREGATOR_MIGRATIONS: &[PgMigration] = &[
    PgMigration {
        version: 1,
        what: "rounds with their state, agreed sets, charges and the budget's lock, jobs, answers",
        // `seq` keeps the order rows were written in (SQLite's rowid): charges replay, and
        // rounds and jobs list, oldest first.
        sql: "CREATE TABLE agg_rounds (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              id TEXT PRIMARY KEY,
              spec BYTEA NOT NULL,
              state TEXT NOT NULL
                  CHECK (state IN ('created', 'closing', 'aborting', 'aborted', 'released')),
              detail TEXT,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_closes (
              id TEXT PRIMARY KEY REFERENCES agg_rounds (id),
              body BYTEA NOT NULL,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_charges (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              id TEXT PRIMARY KEY,
              rho DOUBLE PRECISION NOT NULL,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_budget (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one));
          INSERT INTO agg_budget VALUES (TRUE);
          CREATE TABLE agg_jobs (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              id TEXT PRIMARY KEY,
              spec BYTEA NOT NULL,
              status BYTEA NOT NULL,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_answers (
              job TEXT NOT NULL,
              participant BIGINT NOT NULL,
              answer BYTEA NOT NULL,
              sha256 BYTEA NOT NULL,
              PRIMARY KEY (job, participant)
          );
          CREATE TABLE agg_job_rounds (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              round TEXT PRIMARY KEY,
              job TEXT NOT NULL,
              rho DOUBLE PRECISION,
              sha256 BYTEA NOT NULL
          );",
    },
    PgMigration {
        version: 2,
        what: "a release lease per closing round: the process that drives its release",
        sql: "CREATE TABLE agg_release_leases (
                  round_id TEXT PRIMARY KEY REFERENCES agg_rounds (id),
                  holder TEXT NOT NULL,
                  expires_ms BIGINT NOT NULL
              );",
    },
    PgMigration {
        version: 3,
        what: "a driver lease per job: the process that drives it",
        // Jobs recorded before get a lease held by nobody: the first process to take one
        // finds out whether the job is still live, and marks it ended if not.
        sql: "CREATE TABLE agg_job_leases (
                  seq BIGINT GENERATED ALWAYS AS IDENTITY,
                  job_id TEXT PRIMARY KEY REFERENCES agg_jobs (id),
                  holder TEXT NOT NULL,
                  expires_ms BIGINT NOT NULL,
                  ended BOOLEAN NOT NULL DEFAULT FALSE
              );
              INSERT INTO agg_job_leases (job_id, holder, expires_ms)
                  SELECT id, '', 0 FROM agg_jobs ORDER BY seq;",
    },
    PgMigration {
        version: 4,
        what: "a round whose release became impossible ends as 'failed', with the cause",
        sql: "ALTER TABLE agg_rounds DROP CONSTRAINT IF EXISTS agg_rounds_state_check;
              ALTER TABLE agg_rounds ADD CONSTRAINT agg_rounds_state_check CHECK (state IN
                  ('created', 'closing', 'aborting', 'aborted', 'released', 'failed'));",
    },
];

/// Applies the aggregator's migrations the database lacks (row `aggregator` of
/// `dpdist_schema`, under the advisory lock the node's store takes too).
fn migrate(conn: &mut PgConnection, shown: &str) -> Result<()> {
    postgres_tx::migrate(conn, "aggregator", shown, AGGREGATOR_MIGRATIONS)
}

#[cfg(test)]
#[path = "postgres_tests.rs"]
mod tests;
#[cfg(test)]
pub(crate) use tests::test_db;
