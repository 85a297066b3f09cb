//! The rules of a round's life in the store: created → closing (charged, its agreed set
//! recorded) → released or failed, created → aborting → aborted; each change a compare-and-swap
//! on the locked row, each charge decided under the budget's lock.

use super::tx::{AggTx, ChargeRow, Lease, RoundRow};
use super::{AggregatorStore, RoundPhase, RoundState, digests};
use crate::Result;

impl AggregatorStore {
    /// Every recorded charge (zCDP ρ), each checked.
    #[cfg(test)]
    pub fn charges(&self) -> Result<Vec<f64>> {
        Ok(self.recorded_charges()?.rho)
    }

    /// Every charge recorded, with the verified rounds' δ_t, each checked.
    pub fn recorded_charges(&self) -> Result<Charges> {
        self.run_tx("charges", checked_charges)
    }

    /// Records a new round as "created"; nothing changes if it is recorded already.
    pub fn insert_round(&self, id: &str, spec_json: &[u8]) -> Result<()> {
        let row = RoundRow::sealed(id, spec_json.to_vec(), RoundPhase::Created, None);
        self.run_tx("insert_round", move |tx| {
            tx.insert_round(&row)?;
            Ok(())
        })
    }

    /// The (id, spec JSON) of every recorded round in one of `states`, oldest first, checked.
    pub fn specs_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, Vec<u8>)>> {
        let states = states.to_vec();
        self.run_tx("specs_in", move |tx| {
            tx.rounds_in(&states)?
                .into_iter()
                .map(|row| row.checked().map(|r| (r.id, r.spec)))
                .collect()
        })
    }

    /// The (id, state) of every recorded round in one of `states`, oldest first: the rows'
    /// specs are not read (nor checked), so a polling pass costs a few bytes per round rather
    /// than 32 per client.
    pub fn ids_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>> {
        let states = states.to_vec();
        self.run_tx("ids_in", move |tx| tx.round_states_in(&states))
    }

    /// How many rounds are recorded in each state (every state listed, zeros included).
    pub fn count_by_state(&self) -> Result<Vec<(RoundPhase, usize)>> {
        self.run_tx("count_by_state", |tx| {
            let counted = tx.count_rounds()?;
            Ok(RoundPhase::ALL
                .iter()
                .map(|&p| (p, counted.iter().find(|(q, _)| *q == p).map_or(0, |c| c.1)))
                .collect())
        })
    }

    /// The recorded spec (JSON) of round `id` and its state, checked.
    pub fn round(&self, id: &str) -> Result<Option<(Vec<u8>, RoundState)>> {
        let id = id.to_string();
        self.run_tx("round", move |tx| {
            tx.round_row(&id)?
                .map(|row| {
                    let row = row.checked()?;
                    let state = RoundState::from_row(&id, row.state.as_str(), row.detail)?;
                    Ok((row.spec, state))
                })
                .transpose()
        })
    }

    /// created → aborting (with the reason); false if the round was not "created".
    pub fn begin_abort(&self, id: &str, reason: &str) -> Result<bool> {
        let (id, reason) = (id.to_string(), reason.to_string());
        self.run_tx("begin_abort", move |tx| {
            transition(tx, &id, RoundPhase::Created, RoundPhase::Aborting, |_| {
                Some(reason.clone())
            })
        })
    }

    /// aborting → aborted (the reason kept), once every node was told.
    pub fn finish_abort(&self, id: &str) -> Result<()> {
        let id = id.to_string();
        self.run_tx("finish_abort", move |tx| {
            transition(tx, &id, RoundPhase::Aborting, RoundPhase::Aborted, |row| {
                row.detail.clone()
            })?;
            Ok(())
        })
    }

    /// created → closing: records the close request every node will be sent (unchanged until
    /// all have it) and the round's charge (`rho`, if it has noise), in one transaction that
    /// first asks `fits` whether the charge fits the budget given every charge recorded (an
    /// error from `fits` changes nothing). From here on the budget is spent whether or not
    /// the release comes out, and the agreed set never changes. False if the round was not
    /// "created" (another caller, maybe another process, closed or aborted it first).
    pub fn begin_close(
        &self,
        id: &str,
        close_body: &[u8],
        rho: Option<f64>,
        fits: impl Fn(&Charges) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        self.begin_close_truncated(id, close_body, rho, 0.0, fits)
    }

    /// [`Self::begin_close`] of a verified round, whose charge records its δ_t too.
    pub fn begin_close_truncated(
        &self,
        id: &str,
        close_body: &[u8],
        rho: Option<f64>,
        truncation_delta: f64,
        fits: impl Fn(&Charges) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        let (id, body) = (id.to_string(), close_body.to_vec());
        self.run_tx("begin_close", move |tx| {
            tx.lock_budget()?;
            if !record_close(tx, &id, &body)? {
                return Ok(false);
            }
            if let Some(rho) = rho {
                fits(&checked_charges(tx)?)?;
                tx.insert_charge(&ChargeRow::sealed(&id, rho, truncation_delta))?;
            }
            Ok(true)
        })
    }

    /// The close request recorded for round `id`, checked.
    pub fn close_body(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let id = id.to_string();
        self.run_tx("close_body", move |tx| {
            tx.close_row(&id)?
                .map(|row| digests::checked_close(&id, row))
                .transpose()
        })
    }

    /// closing → released, with the release's JSON, if `holder` holds the round's release
    /// lease or no other holder's lease is live at `now_ms`; false (nothing changed) if the
    /// round was not "closing" or another holder's lease is live.
    pub fn mark_released(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        release_json: &str,
    ) -> Result<bool> {
        let (id, holder, release) = (id.to_string(), holder.to_string(), release_json.to_string());
        self.run_tx("mark_released", move |tx| {
            end_under_lease(tx, &id, &holder, now_ms, RoundPhase::Released, &release)
        })
    }

    /// closing → failed, with the cause (the node's answer that made the release impossible),
    /// under the same lease rule as [`Self::mark_released`]; false (nothing changed) if the
    /// round was not "closing" or another holder's lease is live. A failed round is never
    /// released; its charge, recorded when it was closed, stays.
    pub fn mark_failed(&self, id: &str, holder: &str, now_ms: u64, cause: &str) -> Result<bool> {
        let (id, holder, cause) = (id.to_string(), holder.to_string(), cause.to_string());
        self.run_tx("mark_failed", move |tx| {
            end_under_lease(tx, &id, &holder, now_ms, RoundPhase::Failed, &cause)
        })
    }
}

/// Every charge recorded, each checked.
pub(super) fn checked_charges(tx: &mut dyn AggTx) -> Result<Charges> {
    let mut charges = Charges::default();
    for row in tx.charges()? {
        let row = row.checked(|id| format!("the recorded charge of round {id}"))?;
        charges.rho.push(row.rho);
        charges.truncation_delta += row.truncation_delta;
    }
    Ok(charges)
}

/// The recorded charges: each round's (and job reservation's) zCDP ρ in order, and the sum of
/// the verified rounds' δ_t.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Charges {
    /// ρ of each charge.
    pub rho: Vec<f64>,
    /// Σ δ_t over the charged verified rounds.
    pub truncation_delta: f64,
}

/// Moves round `id` from `from` to `to`, with the detail `detail` makes of the row as it was;
/// false (nothing changed) if the round is not in `from`. The row is locked first: of
/// concurrent changes one wins, the others see its outcome.
fn transition(
    tx: &mut dyn AggTx,
    id: &str,
    from: RoundPhase,
    to: RoundPhase,
    detail: impl FnOnce(&RoundRow) -> Option<String>,
) -> Result<bool> {
    let Some(row) = tx.lock_round(id)? else {
        return Ok(false);
    };
    if row.state != from {
        return Ok(false);
    }
    let detail = detail(&row);
    tx.put_round_state(&RoundRow::sealed(id, row.spec, to, detail.as_deref()))?;
    Ok(true)
}

/// created → closing with the close request every node will be sent; false if the round was
/// not "created".
pub(super) fn record_close(tx: &mut dyn AggTx, id: &str, body: &[u8]) -> Result<bool> {
    if !transition(tx, id, RoundPhase::Created, RoundPhase::Closing, |_| None)? {
        return Ok(false);
    }
    tx.insert_close(id, body, &digests::close_sha256(body))?;
    Ok(true)
}

/// Whether `holder` may end a closing round at `now_ms`: it holds the release lease, or no
/// other holder's lease is live.
pub(super) fn may_release(lease: Option<&Lease>, holder: &str, now_ms: u64) -> bool {
    lease.is_none_or(|l| l.holder == holder || l.expires_ms <= now_ms)
}

/// closing → `to` (released or failed) with `detail`, if `holder` may (see [`may_release`]).
/// The round's row is locked before its lease, as a lease taker locks them.
fn end_under_lease(
    tx: &mut dyn AggTx,
    id: &str,
    holder: &str,
    now_ms: u64,
    to: RoundPhase,
    detail: &str,
) -> Result<bool> {
    if tx.lock_round(id)?.is_none() {
        return Ok(false);
    }
    if !may_release(tx.lock_release_lease(id)?.as_ref(), holder, now_ms) {
        return Ok(false);
    }
    transition(tx, id, RoundPhase::Closing, to, |_| {
        Some(detail.to_string())
    })
}
