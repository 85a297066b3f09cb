//! What a participant polls: a job's view without anything that grows with the roster.
//!
//! The analyst's view (`JobView`) carries the whole roster: O(N) bytes per poll, so N
//! participants polling cost O(N²). A participant does not need it on every poll. It fetches the job's spec once (`GET
//! /jobs/{id}/spec`, checked against the job's id, which is its SHA-256) and then polls this
//! view, whose rounds list their clients as a bitset over the roster and leave the token list
//! out: the participant rebuilds the list from the roster it holds ([`ParticipantRound::spec_for`])
//! and checks the round's id against it, exactly as it checked the full config before.

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::protocol::job::{JobRound, JobSpec, JobState, JobStatus};
use crate::protocol::spec::RoundSpec;
use crate::{Error, Result, hex};

/// `GET /jobs/{id}` (and each entry of `GET /jobs`) as a participant on the roster sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParticipantView {
    /// Hex job id.
    pub id: String,
    /// Where the job stands.
    pub state: JobState,
    /// Why it ended, if it did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The caller's place on the roster.
    pub you: usize,
    /// The most rows one participant may contribute (the spec's `max_rows`; an acceptance
    /// states its rows, from 1 to this).
    pub max_rows: usize,
    /// The compute nodes' base URLs, in node order.
    pub nodes: Vec<String>,
    /// The nodes' public keys read when the job was created (hex, node order).
    pub node_keys: Vec<String>,
    /// The job's rounds so far, in order.
    pub rounds: Vec<ParticipantRound>,
}

/// One round of a job, without its client token list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParticipantRound {
    /// The pipeline's step.
    pub step: u64,
    /// Hex round id (the SHA-256 of the whole round config, token list included).
    pub id: String,
    /// The round's spec (the token list is not in it: see [`ParticipantRound::spec_for`]).
    pub spec: RoundSpec,
    /// What each participant contributes (the job kind's rule, JSON).
    pub rule: String,
    /// The round's clients as a bitset over the roster, hex: bit `i % 8` of byte `i / 8` is
    /// roster index i. Client ids follow roster order (the driver makes them ascending).
    pub clients: String,
}

/// Roster indices `clients` (strictly ascending, each below `roster`) as a hex bitset.
pub fn clients_to_bits(clients: &[usize], roster: usize) -> Result<String> {
    let mut bits = vec![0u8; roster.div_ceil(8)];
    let mut previous = None;
    for &i in clients {
        if i >= roster || previous.is_some_and(|p| p >= i) {
            return Err(Error::Job(format!(
                "a round's clients must be ascending roster indices below {roster}"
            )));
        }
        bits[i / 8] |= 1 << (i % 8);
        previous = Some(i);
    }
    Ok(hex::encode(&bits))
}

/// The roster indices a hex bitset over a roster of `roster` names, ascending.
pub fn clients_from_bits(bits: &str, roster: usize) -> Result<Vec<usize>> {
    let bytes = (bits.len() == 2 * roster.div_ceil(8))
        .then(|| hex::decode(bits))
        .flatten()
        .ok_or_else(|| {
            Error::Job(format!(
                "a round's client bitset must be {} hex digits",
                2 * roster.div_ceil(8)
            ))
        })?;
    let clients: Vec<usize> = (0..roster)
        .filter(|&i| bytes[i / 8] & (1 << (i % 8)) != 0)
        .collect();
    let beyond = bytes.len() * 8;
    if (roster..beyond).any(|i| bytes[i / 8] & (1 << (i % 8)) != 0) {
        return Err(Error::Job(
            "a round's client bitset names no one on the roster".into(),
        ));
    }
    Ok(clients)
}

impl ParticipantView {
    /// The participant's view of job `spec` at `status`, for roster index `you`.
    pub fn of(spec: &JobSpec, status: &JobStatus, nodes: &[String], you: usize) -> Result<Self> {
        let roster = spec.roster.len();
        let rounds = status
            .rounds
            .iter()
            .map(|r| {
                Ok(ParticipantRound {
                    step: r.step,
                    id: r.id.clone(),
                    spec: RoundSpec {
                        client_token_sha256: Vec::new(),
                        ..r.spec.clone()
                    },
                    rule: r.rule.clone(),
                    clients: clients_to_bits(&r.clients, roster)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(ParticipantView {
            id: status.id.clone(),
            state: status.state,
            reason: status.reason.clone(),
            you,
            max_rows: spec.max_rows,
            nodes: nodes.to_vec(),
            node_keys: status.node_keys.clone(),
            rounds,
        })
    }

    /// The view a participant works from, with `spec` (fetched once and checked against the
    /// job's id): rounds with their clients as roster indices. Their configs still lack the
    /// token list; [`ParticipantRound::spec_for`] rebuilds it when a round is joined.
    pub fn with_spec(self, spec: &HashedSpec) -> Result<JoinedView> {
        if spec.id != self.id {
            return Err(Error::Integrity(format!(
                "job {}: the spec fetched for it hashes to {}",
                self.id, spec.id
            )));
        }
        let spec = spec.spec.clone();
        let rounds = self
            .rounds
            .into_iter()
            .map(|r| {
                Ok(JobRound {
                    clients: clients_from_bits(&r.clients, spec.roster.len())?,
                    step: r.step,
                    id: r.id,
                    spec: r.spec,
                    rule: r.rule,
                })
            })
            .collect::<Result<_>>()?;
        Ok(JoinedView {
            status: JobStatus {
                id: self.id,
                state: self.state,
                reason: self.reason,
                node_keys: self.node_keys,
                rounds,
                ..JobStatus::default()
            },
            spec,
            nodes: self.nodes,
            you: Some(self.you),
        })
    }
}

/// A job spec with its id, hashed once: the canonical JSON of a spec with a roster of 10⁴ is
/// ~700 kB, too much to hash on every poll.
#[derive(Debug, Clone)]
pub struct HashedSpec {
    /// SHA-256 of the spec's canonical JSON, hex: the job's id.
    pub id: String,
    /// The spec.
    pub spec: Arc<JobSpec>,
}

impl HashedSpec {
    /// `spec` with its id.
    pub fn new(spec: JobSpec) -> Self {
        HashedSpec {
            id: spec.id(),
            spec: Arc::new(spec),
        }
    }
}

/// A participant's working view of a job: the poll's view joined with the job's spec, shared by
/// every participant of this process (it is content-addressed: the job's id is its SHA-256).
#[derive(Debug, Clone)]
pub struct JoinedView {
    /// The job's spec.
    pub spec: Arc<JobSpec>,
    /// Its status as the participant sees it (rounds, state; no answers, no result).
    pub status: JobStatus,
    /// The nodes' base URLs.
    pub nodes: Vec<String>,
    /// The participant's roster index.
    pub you: Option<usize>,
}

/// A job's participant view for every participant at once: the view without `you`, and each
/// roster token's index.
#[derive(Debug)]
pub struct SharedParticipantView {
    view: ParticipantView,
    roster: std::collections::HashMap<String, usize>,
}

impl SharedParticipantView {
    /// From the job's spec and status, with the nodes' URLs.
    pub fn build(spec: &JobSpec, status: &JobStatus, nodes: &[String]) -> Result<Self> {
        Ok(SharedParticipantView {
            view: ParticipantView::of(spec, status, nodes, 0)?,
            roster: spec
                .roster
                .iter()
                .enumerate()
                .map(|(i, h)| (h.clone(), i))
                .collect(),
        })
    }

    /// The view of the participant whose token hashes to `token_sha256`, if on the roster.
    pub fn for_token(&self, token_sha256: &str) -> Option<ParticipantView> {
        let you = *self.roster.get(token_sha256)?;
        Some(ParticipantView {
            you,
            ..self.view.clone()
        })
    }
}

impl ParticipantRound {
    /// `round`'s whole config: its token list rebuilt from the job's roster (client j of the
    /// round is roster index `round.clients[j]`), whatever list the config came with (none,
    /// from any current aggregator: specs are serialized without it).
    pub fn spec_for(round: &JobRound, spec: &JobSpec) -> Result<RoundSpec> {
        let client_token_sha256 = round
            .clients
            .iter()
            .map(|&i| {
                spec.roster.get(i).cloned().ok_or_else(|| {
                    Error::Job(format!(
                        "round {}: client {i} is not on the roster",
                        round.id
                    ))
                })
            })
            .collect::<Result<_>>()?;
        Ok(RoundSpec {
            client_token_sha256,
            ..round.spec.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rounds_token_list_is_rebuilt_from_the_roster_whatever_its_config_came_with() {
        let spec = crate::protocol::job::tests::spec();
        let round_spec = RoundSpec {
            validity: None,
            round: 1,
            n_clients: 2,
            n_nodes: 2,
            max_dropped: 1,
            dim: 1,
            bound: 1.0,
            mode: "seed".into(),
            noise_sigma_total: None,
            l2_sensitivity: None,
            frac_bits: None,
            deadline_unix_ms: 0,
            node_keys: vec![],
            client_token_sha256: vec![],
        };
        let round = |listed: Vec<String>| JobRound {
            step: 1,
            id: "00".into(),
            spec: RoundSpec {
                client_token_sha256: listed,
                ..round_spec.clone()
            },
            rule: String::new(),
            clients: vec![1, 3],
        };
        // Roster entry i is 32 bytes of i, in hex.
        let from_roster = vec!["01".repeat(32), "03".repeat(32)];
        for listed in [vec![], vec!["ff".repeat(32), "ee".repeat(32)]] {
            let config = ParticipantRound::spec_for(&round(listed), &spec).unwrap();
            assert_eq!(config.client_token_sha256, from_roster);
        }
        let beyond = JobRound {
            clients: vec![1, 4],
            ..round(vec![])
        };
        let e = ParticipantRound::spec_for(&beyond, &spec).unwrap_err();
        assert!(
            e.to_string().contains("client 4 is not on the roster"),
            "{e}"
        );
    }

    #[test]
    fn client_bitsets_round_trip_and_refuse_what_is_not_a_roster_subset() {
        // Roster of 11: indices 0, 3, 8, 10 → bytes 0b0000_1001 = 09, 0b0000_0101 = 05.
        let bits = clients_to_bits(&[0, 3, 8, 10], 11).unwrap();
        assert_eq!(bits, "0905");
        assert_eq!(clients_from_bits(&bits, 11).unwrap(), vec![0, 3, 8, 10]);
        assert_eq!(clients_from_bits("0000", 11).unwrap(), Vec::<usize>::new());
        assert!(clients_to_bits(&[3, 3], 11).is_err());
        assert!(clients_to_bits(&[4, 2], 11).is_err());
        assert!(clients_to_bits(&[11], 11).is_err());
        // Bit 11 is beyond a roster of 11; a wrong length or not hex is refused.
        assert!(clients_from_bits("0908", 11).is_err());
        assert!(clients_from_bits("09", 11).is_err());
        assert!(clients_from_bits("zz05", 11).is_err());
    }
}
