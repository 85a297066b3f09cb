//! A round as the aggregator recorded it: the live rounds, a round's state, its release, and
//! the configs and closes stored by earlier versions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fixedpoint_shares::{ShardSet, wire};

use crate::aggregator::store::{AggregatorStore, RoundPhase, RoundState};
use crate::aggregator::*;
use crate::protocol::spec::{Round, RoundSpec, decode_round_config, legacy_json_round_id};
use crate::{Error, Result};

impl Aggregator {
    /// A numeric round id names one configuration for good: the rounds this aggregator ever
    /// created (persisted in its database) are the ledger of seen (round id, config) pairs.
    pub(in crate::aggregator) fn refuse_reused_round_number(&self, round: &Round) -> Result<()> {
        for (id, spec) in self.store.specs_in(&RoundPhase::ALL)? {
            let seen = recorded_spec(&spec)
                .map_err(|e| Error::InvalidSpec(format!("stored spec: {e}")))?;
            if seen.round == round.spec.round && id != round.id() {
                return Err(Error::InvalidSpec(format!(
                    "round number {} was already used with another configuration (round {id})",
                    round.spec.round
                )));
            }
        }
        Ok(())
    }

    /// Rounds created by this aggregator and neither released nor aborted yet (collecting,
    /// or closing: the agreed set recorded, not every node told or not every sum fetched).
    pub fn open_rounds(&self) -> Result<Vec<Arc<Round>>> {
        self.live_rounds_in(&[RoundPhase::Created, RoundPhase::Closing])
    }

    /// The live rounds in one of `states`, oldest first.
    pub(in crate::aggregator) fn live_rounds_in(
        &self,
        states: &[RoundPhase],
    ) -> Result<Vec<Arc<Round>>> {
        self.live_rounds.in_states(&self.store, states)
    }

    /// How many recorded rounds are in each state.
    pub fn rounds_by_state(&self) -> Result<Vec<(RoundPhase, usize)>> {
        self.store.count_by_state()
    }

    /// The round with hex id `id`, if this aggregator created it.
    pub fn round(&self, id: &str) -> Result<Option<Round>> {
        self.store
            .round(id)?
            .map(|(json, _)| recorded_round(id, &json))
            .transpose()
    }

    /// The round's state as recorded, with the abort reason, the release (JSON) or the
    /// failure's cause.
    pub fn recorded_state(&self, round: &Round) -> Result<Option<RoundState>> {
        self.state(&round.id())
    }

    pub(in crate::aggregator) fn state(&self, id: &str) -> Result<Option<RoundState>> {
        Ok(self.store.round(id)?.map(|(_, state)| state))
    }

    /// The release of a round already released, if any.
    pub fn published(&self, round: &Round) -> Result<Option<PublishedRelease>> {
        self.recorded_release(&round.id())
    }

    /// The recorded release of round `id`, if it is released.
    pub fn recorded_release(&self, id: &str) -> Result<Option<PublishedRelease>> {
        match self.state(id)? {
            Some(RoundState::Released(release)) => Ok(Some(
                serde_json::from_str(&release).map_err(|e| Error::Http(e.to_string()))?,
            )),
            _ => Ok(None),
        }
    }
}

/// The live rounds (created, closing, aborting) as read and checked once: a round's config
/// never changes under its id (the id is its SHA-256), so a polling pass reads only the live
/// rounds' ids and states, and a round's 32 bytes per client once per process.
#[derive(Default)]
pub(in crate::aggregator) struct LiveRounds(
    pub(in crate::aggregator) Mutex<HashMap<String, Arc<Round>>>,
);

impl LiveRounds {
    /// The live rounds of `store` in one of `states`, oldest first: each read from the store
    /// and checked the first time it is seen, then kept until it is no longer live.
    fn in_states(&self, store: &AggregatorStore, states: &[RoundPhase]) -> Result<Vec<Arc<Round>>> {
        let live = store.ids_in(&RoundPhase::LIVE)?;
        let mut cached = self.0.lock().expect("live rounds lock");
        cached.retain(|id, _| live.iter().any(|(live_id, _)| live_id == id));
        let mut out = Vec::new();
        for (id, state) in live {
            if !states.contains(&state) {
                continue;
            }
            let round = match cached.get(&id) {
                Some(round) => round.clone(),
                None => {
                    // Gone since the ids were read (released, or aborted): not live any more.
                    let Some((spec, _)) = store.round(&id)? else {
                        continue;
                    };
                    let round = Arc::new(recorded_round(&id, &spec)?);
                    cached.insert(id, round.clone());
                    round
                }
            };
            out.push(round);
        }
        Ok(out)
    }
}

/// A recorded round config as a round, checked to hash to the id it is recorded under.
pub(in crate::aggregator) fn recorded_round(id: &str, bytes: &[u8]) -> Result<Round> {
    let integrity = |e: String| Error::Integrity(format!("the recorded spec of round {id}: {e}"));
    if !bytes.starts_with(&wire::ROUND_CONFIG_MAGIC) {
        return recorded_json_round(id, bytes);
    }
    let round = decode_round_config(bytes)
        .map_err(|e| integrity(e.to_string()))?
        .validate()?;
    if round.id() != id {
        return Err(integrity(format!("hashes to {}", round.id())));
    }
    Ok(round)
}

/// A round recorded before round configs carried their token list in binary: its JSON with
/// the list inline, whose SHA-256 was the round's id.
pub(in crate::aggregator) fn recorded_json_round(id: &str, json: &[u8]) -> Result<Round> {
    let integrity = |e: String| Error::Integrity(format!("the recorded spec of round {id}: {e}"));
    let mut round = serde_json::from_slice::<RoundSpec>(json)
        .map_err(|e| integrity(e.to_string()))?
        .validate()?;
    let legacy = legacy_json_round_id(&round.spec, round.token_hashes.iter().copied().map(Ok))?;
    if crate::hex::encode(&legacy) != id {
        return Err(integrity(format!(
            "hashes to {}",
            crate::hex::encode(&legacy)
        )));
    }
    round.hash = legacy;
    Ok(round)
}

/// The spec of a recorded round config (or of the JSON older versions recorded).
pub(in crate::aggregator) fn recorded_spec(bytes: &[u8]) -> Result<RoundSpec> {
    if bytes.starts_with(&wire::ROUND_CONFIG_MAGIC) {
        let mut source = bytes;
        RoundSpec::from_config_json(&wire::read_round_spec(&mut source)?)
    } else {
        serde_json::from_slice(bytes).map_err(|e| Error::InvalidSpec(e.to_string()))
    }
}

/// The agreed set as aggregators before the binary pair set recorded it (`{"agreed": [ids],
/// "shards": ["<16 hex>", …]}`), read only to resend a close recorded in an older store: the
/// pairs, checked against a round of `n_clients` clients.
///
/// # Errors
/// Not such a body; lists of different lengths, a malformed shard id, a client id ≥ N or
/// listed twice.
pub(in crate::aggregator) fn legacy_close_json(bytes: &[u8], n_clients: usize) -> Result<ShardSet> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Legacy {
        agreed: Vec<u64>,
        shards: Vec<String>,
    }
    let legacy: Legacy = serde_json::from_slice(bytes)
        .map_err(|e| Error::InvalidSpec(format!("recorded close request: {e}")))?;
    if legacy.agreed.len() != legacy.shards.len() {
        return Err(Error::InvalidSpec(format!(
            "{} client ids but {} shard ids",
            legacy.agreed.len(),
            legacy.shards.len()
        )));
    }
    let mut pairs = ShardSet::try_empty(n_clients)?;
    for (&c, s) in legacy.agreed.iter().zip(&legacy.shards) {
        let shard = crate::hex::decode_array::<8>(s)
            .map(|b| fixedpoint_shares::ShardId(u64::from_be_bytes(b)))
            .ok_or_else(|| Error::InvalidSpec(format!("shard id {s:?}: need 16 hex digits")))?;
        pairs.insert(fixedpoint_shares::ClientId(c), shard)?;
    }
    Ok(pairs)
}
