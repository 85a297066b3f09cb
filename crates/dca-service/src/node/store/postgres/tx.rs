//! [`NodeTx`] on PostgreSQL: the rows of one read-committed transaction of
//! [`crate::db::postgres_tx::in_tx`], with the round's state a column of its row.

use std::collections::HashMap;

use fixedpoint_shares::ClientSet;
use postgres::{Statement, Transaction};

use super::super::layout::agreed_words;
use super::super::tx::{LeaseTx, NewSum, NodeTx, RowLock};
use super::super::{PendingShare, RoundState};
use super::state_of;
use crate::db::postgres_tx::cause;
use crate::{Error, Result};

pub(crate) struct PgTx<'a, 'b> {
    tx: &'a mut Transaction<'b>,
    /// The first PostgreSQL error, kept for [`crate::db::postgres_tx::in_tx`], which runs the
    /// transaction again after some (a serialization failure, a lost connection).
    pub(super) failed: Option<postgres::Error>,
    /// Statements run once per row, prepared on first use (one round trip each per
    /// transaction, not one per row).
    prepared: HashMap<&'static str, Statement>,
}

impl<'a, 'b> PgTx<'a, 'b> {
    pub(super) fn new(tx: &'a mut Transaction<'b>) -> Self {
        PgTx {
            tx,
            failed: None,
            prepared: HashMap::new(),
        }
    }

    /// `outcome` with its PostgreSQL error kept in [`Self::failed`].
    fn pg<T>(&mut self, outcome: std::result::Result<T, postgres::Error>) -> Result<T> {
        outcome.map_err(|e| {
            let named = Error::Postgres(cause(&e));
            self.failed.get_or_insert(e);
            named
        })
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let prepared = self.tx.prepare(sql);
        let s = self.pg(prepared)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }

    /// Runs `sql` once with `params`: the number of rows it changed.
    fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<u64> {
        let outcome = self.tx.execute(sql, params);
        self.pg(outcome)
    }

    /// Runs the prepared `sql` with `params`: the number of rows it changed.
    fn execute_prepared(
        &mut self,
        sql: &'static str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<u64> {
        let stmt = self.statement(sql)?;
        let outcome = self.tx.execute(&stmt, params);
        self.pg(outcome)
    }
}

impl NodeTx for PgTx<'_, '_> {
    fn round_state(&mut self, id: &[u8; 32], lock: RowLock) -> Result<RoundState> {
        let stmt = self.statement(match lock {
            RowLock::Share => "SELECT state FROM node_rounds WHERE id = $1 FOR SHARE",
            RowLock::Update => "SELECT state FROM node_rounds WHERE id = $1 FOR UPDATE",
        })?;
        let row = self.tx.query_opt(&stmt, &[&&id[..]]);
        let row = self.pg(row)?;
        Ok(state_of(row.as_ref().map(|r| r.get(0))))
    }

    fn insert_round(&mut self, id: &[u8; 32], round: u64, spec_json: &[u8]) -> Result<()> {
        self.execute(
            "INSERT INTO node_rounds (id, round, spec) VALUES ($1, $2, $3)",
            &[&&id[..], &(round as i64), &spec_json],
        )?;
        Ok(())
    }

    fn replace_spec(&mut self, id: &[u8; 32], spec_json: &[u8]) -> Result<()> {
        self.execute(
            "UPDATE node_rounds SET spec = $2 WHERE id = $1",
            &[&&id[..], &spec_json],
        )?;
        Ok(())
    }

    fn delete_token_chunks(&mut self, id: &[u8; 32]) -> Result<()> {
        self.execute(
            "DELETE FROM node_round_tokens WHERE round_id = $1",
            &[&&id[..]],
        )?;
        Ok(())
    }

    fn insert_token_chunks(&mut self, id: &[u8; 32], first: u64, chunks: &[&[u8]]) -> Result<()> {
        let numbers: Vec<i64> = (first..).take(chunks.len()).map(|k| k as i64).collect();
        self.execute_prepared(
            "INSERT INTO node_round_tokens (round_id, chunk, hashes)
             SELECT $1, c, h FROM unnest($2::BIGINT[], $3::BYTEA[]) AS t (c, h)",
            &[&&id[..], &numbers, &chunks],
        )?;
        Ok(())
    }

    fn insert_share(&mut self, p: &PendingShare<'_>) -> Result<bool> {
        let inserted = self.execute_prepared(
            "INSERT INTO node_shares (round_id, client, shard, digest, message)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (round_id, client) DO NOTHING",
            &[
                &&p.round_id[..],
                &(p.client as i64),
                &(p.shard as i64),
                &&p.digest[..],
                &p.message,
            ],
        )?;
        Ok(inserted == 1)
    }

    fn share_digest(&mut self, id: &[u8; 32], client: u64) -> Result<Vec<u8>> {
        let stmt =
            self.statement("SELECT digest FROM node_shares WHERE round_id = $1 AND client = $2")?;
        let row = self.tx.query_one(&stmt, &[&&id[..], &(client as i64)]);
        Ok(self.pg(row)?.get(0))
    }

    fn set_shard(&mut self, id: &[u8; 32], client: u64, shard: u64) -> Result<()> {
        self.execute_prepared(
            "UPDATE node_shares SET shard = $3 WHERE round_id = $1 AND client = $2",
            &[&&id[..], &(client as i64), &(shard as i64)],
        )?;
        Ok(())
    }

    fn delete_shares(&mut self, id: &[u8; 32]) -> Result<()> {
        self.execute("DELETE FROM node_shares WHERE round_id = $1", &[&&id[..]])?;
        Ok(())
    }

    fn write_aborted(&mut self, id: &[u8; 32], reason: &str) -> Result<()> {
        self.execute(
            "UPDATE node_rounds SET state = 'aborted', aborted = $2 WHERE id = $1",
            &[&&id[..], &reason],
        )?;
        Ok(())
    }

    fn write_agreed(&mut self, id: &[u8; 32], agreed: &ClientSet, sha256: &[u8; 32]) -> Result<()> {
        let bytes: Vec<u8> = agreed_words(agreed).flatten().collect();
        self.execute(
            "UPDATE node_rounds SET state = 'closed', agreed = $2, agreed_sha256 = $3
             WHERE id = $1",
            &[&&id[..], &bytes, &&sha256[..]],
        )?;
        Ok(())
    }

    /// Read whole first: a statement sends it in one piece.
    fn write_sum(&mut self, id: &[u8; 32], sum: NewSum<'_>) -> Result<()> {
        let mut bytes = Vec::with_capacity(sum.len as usize);
        sum.bytes.read_to_end(&mut bytes)?;
        self.execute(
            "INSERT INTO node_round_sums (id, sum_sha256, sum) VALUES ($1, $2, $3)
             ON CONFLICT (id) DO UPDATE SET sum_sha256 = EXCLUDED.sum_sha256,
                 sum = EXCLUDED.sum",
            &[&&id[..], &&sum.sha256[..], &bytes],
        )?;
        Ok(())
    }
}

impl LeaseTx for PgTx<'_, '_> {
    fn sum_stored(&mut self, id: &[u8; 32]) -> Result<bool> {
        let row = self.tx.query_one(
            "SELECT EXISTS (SELECT 1 FROM node_round_sums WHERE id = $1)",
            &[&&id[..]],
        );
        Ok(self.pg(row)?.get(0))
    }

    fn claim_sum_lease(
        &mut self,
        id: &[u8; 32],
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool> {
        Ok(self.execute(
            "INSERT INTO node_sum_leases (round_id, holder, expires_ms) VALUES ($1, $2, $4)
             ON CONFLICT (round_id) DO UPDATE
                 SET holder = EXCLUDED.holder, expires_ms = EXCLUDED.expires_ms
                 WHERE node_sum_leases.expires_ms <= $3 OR node_sum_leases.holder = $2",
            &[&&id[..], &holder, &(now_ms as i64), &(until_ms as i64)],
        )? == 1)
    }

    fn sum_lease_holder(&mut self, id: &[u8; 32]) -> Result<Option<String>> {
        let row = self.tx.query_opt(
            "SELECT holder FROM node_sum_leases WHERE round_id = $1 FOR UPDATE",
            &[&&id[..]],
        );
        Ok(self.pg(row)?.map(|r| r.get(0)))
    }

    fn insert_sum_once(&mut self, id: &[u8; 32], sha256: &[u8; 32], sum: &[u8]) -> Result<()> {
        self.execute(
            "INSERT INTO node_round_sums (id, sum_sha256, sum) VALUES ($1, $2, $3)
             ON CONFLICT (id) DO NOTHING",
            &[&&id[..], &&sha256[..], &sum],
        )?;
        Ok(())
    }
}
