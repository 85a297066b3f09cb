//! A round's state at the aggregator, typed: which states there are, what each one carries
//! (the abort's reason, the release, the failure's cause), and how a stored row reads as one.
//! The stores keep the name in a text column and what the state carries beside it.

use crate::{Error, Result};

/// The name of a round's state: what the stores filter and count by, and what the HTTP API and
/// the metrics show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoundPhase {
    /// Collecting shares.
    Created,
    /// Closed: the agreed set and the charge recorded, the release on its way.
    Closing,
    /// Aborted, not every node told yet.
    Aborting,
    /// Aborted, every node told.
    Aborted,
    /// Released.
    Released,
    /// Its release became impossible after it was closing; it is never released.
    Failed,
}

impl RoundPhase {
    /// Every state, in the order a round may pass through them.
    pub const ALL: [RoundPhase; 6] = [
        RoundPhase::Created,
        RoundPhase::Closing,
        RoundPhase::Aborting,
        RoundPhase::Aborted,
        RoundPhase::Released,
        RoundPhase::Failed,
    ];

    /// The states of a round that still needs work: collecting, closing, or its nodes not all
    /// told of its abort.
    pub const LIVE: [RoundPhase; 3] = [
        RoundPhase::Created,
        RoundPhase::Closing,
        RoundPhase::Aborting,
    ];

    /// The name as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            RoundPhase::Created => "created",
            RoundPhase::Closing => "closing",
            RoundPhase::Aborting => "aborting",
            RoundPhase::Aborted => "aborted",
            RoundPhase::Released => "released",
            RoundPhase::Failed => "failed",
        }
    }

    /// The state named `name` as stored.
    ///
    /// # Errors
    /// [`Error::Integrity`] for a name no state has (a damaged or foreign row).
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| Error::Integrity(format!("unknown round state {name:?} recorded")))
    }
}

impl std::fmt::Display for RoundPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A round's state as recorded, with what the state carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundState {
    /// Collecting shares.
    Created,
    /// Closed, its release on the way.
    Closing,
    /// Aborted (the reason), not every node told yet.
    Aborting(String),
    /// Aborted (the reason).
    Aborted(String),
    /// Released: the release as JSON.
    Released(String),
    /// Failed: the node's answer that made the release impossible.
    Failed(String),
}

impl RoundState {
    /// The state's name.
    pub fn phase(&self) -> RoundPhase {
        match self {
            RoundState::Created => RoundPhase::Created,
            RoundState::Closing => RoundPhase::Closing,
            RoundState::Aborting(_) => RoundPhase::Aborting,
            RoundState::Aborted(_) => RoundPhase::Aborted,
            RoundState::Released(_) => RoundPhase::Released,
            RoundState::Failed(_) => RoundPhase::Failed,
        }
    }

    /// Why the round will never be released, if it was aborted or failed.
    pub fn ended_unreleased(&self) -> Option<&str> {
        match self {
            RoundState::Aborting(why) | RoundState::Aborted(why) | RoundState::Failed(why) => {
                Some(why)
            }
            _ => None,
        }
    }

    /// The state read from a stored row: its name and the detail beside it. Rows of aborted or
    /// failed rounds written without a detail read with an empty reason.
    ///
    /// # Errors
    /// [`Error::Integrity`] for an unknown name, or a released round without its release.
    pub(crate) fn from_row(id: &str, name: &str, detail: Option<String>) -> Result<Self> {
        Ok(match RoundPhase::parse(name)? {
            RoundPhase::Created => RoundState::Created,
            RoundPhase::Closing => RoundState::Closing,
            RoundPhase::Aborting => RoundState::Aborting(detail.unwrap_or_default()),
            RoundPhase::Aborted => RoundState::Aborted(detail.unwrap_or_default()),
            RoundPhase::Failed => RoundState::Failed(detail.unwrap_or_default()),
            RoundPhase::Released => RoundState::Released(detail.ok_or_else(|| {
                Error::Integrity(format!(
                    "round {id} is recorded as released without its release"
                ))
            })?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_from_its_row() {
        for phase in RoundPhase::ALL {
            assert_eq!(RoundPhase::parse(phase.as_str()).unwrap(), phase);
            let state = RoundState::from_row("r", phase.as_str(), Some("why".into())).unwrap();
            assert_eq!(state.phase(), phase);
        }
        assert_eq!(
            RoundState::from_row("r", "aborted", None).unwrap(),
            RoundState::Aborted(String::new())
        );
        assert_eq!(
            RoundState::from_row("r", "failed", Some("node 2: gone".into()))
                .unwrap()
                .ended_unreleased(),
            Some("node 2: gone")
        );
        assert_eq!(RoundState::Closing.ended_unreleased(), None);
    }

    #[test]
    fn unknown_states_and_releases_without_a_release_are_refused() {
        assert!(matches!(
            RoundPhase::parse("finished"),
            Err(Error::Integrity(_))
        ));
        assert!(matches!(
            RoundState::from_row("r", "released", None),
            Err(Error::Integrity(_))
        ));
    }
}
