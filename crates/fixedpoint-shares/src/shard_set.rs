//! Sets of (client, shard attempt) pairs: what a node received and what the nodes agree on.
//!
//! Agreeing on client ids alone is not enough: a client that shards twice (a retry) may have
//! its first attempt's share at one node and its second attempt's at another; the masks of two
//! attempts do not cancel, and summing them releases garbage. The nodes therefore agree on
//! pairs, and a client whose attempts differ between nodes is simply not in the intersection
//! (it counts as missing, against T).

use std::collections::BTreeMap;

use crate::client_set::ClientSet;
use crate::ids::{ClientId, ShardId};
use crate::{Error, Result};

/// A subset of the clients `0..N`, each with the shard attempt it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardSet {
    clients: ClientSet,
    shards: BTreeMap<ClientId, ShardId>,
}

impl ShardSet {
    /// No client of `0..universe` (a universe the program chose; see [`ShardSet::try_empty`]).
    pub fn empty(universe: usize) -> Self {
        Self {
            clients: ClientSet::empty(universe),
            shards: BTreeMap::new(),
        }
    }

    /// No client of `0..universe`, or [`Error::Allocation`] if the allocator refuses its
    /// `universe / 8` bytes (for a universe that comes from a caller or from bytes).
    pub fn try_empty(universe: usize) -> Result<Self> {
        Ok(Self {
            clients: ClientSet::try_empty(universe)?,
            shards: BTreeMap::new(),
        })
    }

    /// The set of these pairs.
    ///
    /// # Errors
    /// [`Error::UnknownClient`] for an id >= universe; [`Error::DuplicateClient`] for a client
    /// listed twice (even with the same attempt).
    pub fn from_pairs(universe: usize, pairs: &[(ClientId, ShardId)]) -> Result<Self> {
        let mut set = Self::try_empty(universe)?;
        for &(client, shard) in pairs {
            set.insert(client, shard)?;
        }
        Ok(set)
    }

    /// Adds a pair.
    ///
    /// # Errors
    /// [`Error::UnknownClient`] for an id >= universe; [`Error::DuplicateClient`] if the client
    /// is already in the set. The set is unchanged on error.
    pub fn insert(&mut self, client: ClientId, shard: ShardId) -> Result<()> {
        if self.clients.contains(client) {
            return Err(Error::DuplicateClient { client });
        }
        self.clients.insert(client)?;
        self.shards.insert(client, shard);
        Ok(())
    }

    /// Removes a client; returns its attempt if it was present.
    pub fn remove(&mut self, client: ClientId) -> Option<ShardId> {
        self.clients.remove(client);
        self.shards.remove(&client)
    }

    /// The clients, without their attempts.
    pub fn clients(&self) -> &ClientSet {
        &self.clients
    }

    /// The attempt of `client`, if it is in the set.
    pub fn shard(&self, client: ClientId) -> Option<ShardId> {
        self.shards.get(&client).copied()
    }

    /// N.
    pub fn universe(&self) -> usize {
        self.clients.universe()
    }

    /// Number of clients in the set.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// True if no client is in the set.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// The pairs in increasing client order.
    pub fn iter(&self) -> impl Iterator<Item = (ClientId, ShardId)> + '_ {
        self.shards.iter().map(|(c, s)| (*c, *s))
    }

    /// The pairs in both sets: clients in both with the same attempt in both.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the universes differ.
    pub fn intersection(&self, other: &ShardSet) -> Result<ShardSet> {
        let both = self.clients.intersection(&other.clients)?;
        let mut out = Self::try_empty(self.universe())?;
        for client in both.iter() {
            if let (Some(a), Some(b)) = (self.shard(client), other.shard(client))
                && a == b
            {
                // Ids come from a set over the same universe; cannot fail.
                let _ = out.insert(client, a);
            }
        }
        Ok(out)
    }

    /// The pairs of the clients in `clients`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the universes differ; [`Error::NotAbsorbed`] for a client
    /// of `clients` that is not in `self`.
    pub fn restricted_to(&self, clients: &ClientSet) -> Result<ShardSet> {
        let mut out = Self::try_empty(self.universe())?;
        if clients.universe() != self.universe() {
            return Err(Error::InvalidParameter {
                name: "client set universe",
                value: clients.universe() as f64,
                requirement: "equal to the round's N",
            });
        }
        for client in clients.iter() {
            let shard = self.shard(client).ok_or(Error::NotAbsorbed { client })?;
            out.insert(client, shard)?;
        }
        Ok(out)
    }
}

/// The agreed set of a round: the (client, attempt) pairs every node received. A client whose
/// nodes hold different attempts is left out (and counts as missing).
///
/// # Errors
/// [`Error::InvalidParameter`] if `received` is empty or the universes differ.
pub fn agree(received: &[&ShardSet]) -> Result<ShardSet> {
    let (first, rest) = received.split_first().ok_or(Error::InvalidParameter {
        name: "received",
        value: 0.0,
        requirement: "at least one node's set",
    })?;
    rest.iter()
        .try_fold((*first).clone(), |acc, set| acc.intersection(set))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(u64, u64)]) -> Vec<(ClientId, ShardId)> {
        v.iter().map(|&(c, s)| (ClientId(c), ShardId(s))).collect()
    }

    #[test]
    fn agreement_keeps_pairs_present_everywhere_with_the_same_attempt() {
        let a = ShardSet::from_pairs(70, &pairs(&[(0, 10), (3, 11), (64, 12), (69, 13)])).unwrap();
        // Client 3 retried: node b holds its second attempt. Client 69 is missing at b.
        let b = ShardSet::from_pairs(70, &pairs(&[(0, 10), (3, 99), (64, 12)])).unwrap();
        let agreed = agree(&[&a, &b]).unwrap();
        assert_eq!(
            agreed.iter().collect::<Vec<_>>(),
            pairs(&[(0, 10), (64, 12)])
        );
        assert_eq!(agreed.clients().missing(), 68);
        assert_eq!(agree(&[&a]).unwrap(), a);
        assert!(agree(&[]).is_err());
        assert!(a.intersection(&ShardSet::empty(7)).is_err());
    }

    #[test]
    fn insert_refuses_unknown_and_repeated_clients_and_changes_nothing() {
        let mut s = ShardSet::from_pairs(4, &pairs(&[(1, 5)])).unwrap();
        let before = s.clone();
        assert!(matches!(
            s.insert(ClientId(1), ShardId(5)),
            Err(Error::DuplicateClient { .. })
        ));
        assert!(matches!(
            s.insert(ClientId(4), ShardId(5)),
            Err(Error::UnknownClient { .. })
        ));
        assert_eq!(s, before);
        assert_eq!(s.remove(ClientId(1)), Some(ShardId(5)));
        assert!(s.is_empty() && s.clients().is_empty());
    }

    #[test]
    fn restriction_takes_this_sets_attempts() {
        let s = ShardSet::from_pairs(5, &pairs(&[(0, 7), (2, 8), (4, 9)])).unwrap();
        let only = ClientSet::from_ids(5, &[ClientId(0), ClientId(4)]).unwrap();
        assert_eq!(
            s.restricted_to(&only).unwrap().iter().collect::<Vec<_>>(),
            pairs(&[(0, 7), (4, 9)])
        );
        let absent = ClientSet::from_ids(5, &[ClientId(1)]).unwrap();
        assert!(matches!(
            s.restricted_to(&absent),
            Err(Error::NotAbsorbed { .. })
        ));
        assert!(s.restricted_to(&ClientSet::empty(6)).is_err());
    }
}
