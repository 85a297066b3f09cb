//! Sets of client ids `0..N` as bitsets: which clients a node received, which the nodes agreed on.

use crate::ids::ClientId;
use crate::{Error, Result};

/// A subset of the clients `0..N` of a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSet {
    universe: usize,
    words: Vec<u64>,
    len: usize,
}

impl ClientSet {
    /// The empty subset of `0..universe`.
    pub fn empty(universe: usize) -> Self {
        Self {
            universe,
            words: vec![0; universe.div_ceil(64)],
            len: 0,
        }
    }

    /// The empty subset of `0..universe`, or [`Error::Allocation`] if the allocator refuses its
    /// `universe / 8` bytes (for a universe that comes from a caller).
    pub fn try_empty(universe: usize) -> Result<Self> {
        Ok(Self {
            universe,
            words: crate::alloc::zeroed(universe.div_ceil(64), "client set")?,
            len: 0,
        })
    }

    /// All of `0..universe`.
    pub fn full(universe: usize) -> Self {
        let mut set = Self::empty(universe);
        for i in 0..universe {
            set.words[i / 64] |= 1 << (i % 64);
        }
        set.len = universe;
        set
    }

    /// The subset of `0..universe` holding `ids`.
    ///
    /// # Errors
    /// [`Error::UnknownClient`] for an id >= universe; [`Error::DuplicateClient`] for a repeat.
    pub fn from_ids(universe: usize, ids: &[ClientId]) -> Result<Self> {
        let mut set = Self::try_empty(universe)?;
        for &id in ids {
            if !set.insert(id)? {
                return Err(Error::DuplicateClient { client: id });
            }
        }
        Ok(set)
    }

    /// N: ids range over `0..universe`.
    pub fn universe(&self) -> usize {
        self.universe
    }

    /// Number of clients in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no client is in the set.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Clients of `0..N` not in the set.
    pub fn missing(&self) -> usize {
        self.universe - self.len
    }

    /// True if `id` is in the set (false for ids outside the universe).
    pub fn contains(&self, id: ClientId) -> bool {
        self.slot(id)
            .is_some_and(|(w, bit)| self.words[w] & bit != 0)
    }

    /// Adds `id`; returns whether it was new.
    ///
    /// # Errors
    /// [`Error::UnknownClient`] if `id >= universe`.
    pub fn insert(&mut self, id: ClientId) -> Result<bool> {
        let (w, bit) = self.slot(id).ok_or(Error::UnknownClient {
            client: id,
            n_clients: self.universe,
        })?;
        let new = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.len += usize::from(new);
        Ok(new)
    }

    /// Removes `id`; returns whether it was present.
    pub fn remove(&mut self, id: ClientId) -> bool {
        let Some((w, bit)) = self.slot(id) else {
            return false;
        };
        let present = self.words[w] & bit != 0;
        self.words[w] &= !bit;
        self.len -= usize::from(present);
        present
    }

    /// Clients in both sets.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if the universes differ.
    pub fn intersection(&self, other: &ClientSet) -> Result<ClientSet> {
        self.same_universe(other)?;
        let words: Vec<u64> = self
            .words
            .iter()
            .zip(&other.words)
            .map(|(a, b)| a & b)
            .collect();
        let len = words.iter().map(|w| w.count_ones() as usize).sum();
        Ok(Self {
            universe: self.universe,
            words,
            len,
        })
    }

    /// True if every client of `self` is in `other` (false if the universes differ).
    pub fn is_subset(&self, other: &ClientSet) -> bool {
        self.universe == other.universe
            && self
                .words
                .iter()
                .zip(&other.words)
                .all(|(a, b)| a & !b == 0)
    }

    /// The clients in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    ClientId((w * 64 + bit) as u64)
                })
            })
        })
    }

    /// The bitset words (bit i of word w is client 64·w + i), for the wire format.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    /// The set with these bitset words, or `None` if the word count is wrong or a bit at or
    /// beyond `universe` is set.
    pub(crate) fn from_words(universe: usize, words: Vec<u64>) -> Option<Self> {
        if words.len() != universe.div_ceil(64) {
            return None;
        }
        let tail_bits = universe % 64;
        if tail_bits != 0 && words.last().is_some_and(|&w| w >> tail_bits != 0) {
            return None;
        }
        let len = words.iter().map(|w| w.count_ones() as usize).sum();
        Some(Self {
            universe,
            words,
            len,
        })
    }

    /// The clients of `self` that are not in `other`, in increasing order.
    pub(crate) fn difference<'a>(
        &'a self,
        other: &'a ClientSet,
    ) -> impl Iterator<Item = ClientId> + 'a {
        self.iter().filter(move |&id| !other.contains(id))
    }

    fn same_universe(&self, other: &ClientSet) -> Result<()> {
        if self.universe == other.universe {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "client set universe",
                value: other.universe as f64,
                requirement: "equal to the round's N",
            })
        }
    }

    fn slot(&self, id: ClientId) -> Option<(usize, u64)> {
        let i = usize::try_from(id.0).ok().filter(|&i| i < self.universe)?;
        Some((i / 64, 1 << (i % 64)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_iter_and_intersection() {
        let mut a = ClientSet::empty(130);
        assert!(a.insert(ClientId(0)).unwrap());
        assert!(a.insert(ClientId(64)).unwrap());
        assert!(a.insert(ClientId(129)).unwrap());
        assert!(!a.insert(ClientId(129)).unwrap());
        assert!(matches!(
            a.insert(ClientId(130)),
            Err(Error::UnknownClient { .. })
        ));
        assert_eq!(a.len(), 3);
        assert_eq!(a.missing(), 127);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [ClientId(0), ClientId(64), ClientId(129)]
        );
        let b = ClientSet::from_ids(130, &[ClientId(64), ClientId(5), ClientId(129)]).unwrap();
        let both = a.intersection(&b).unwrap();
        assert_eq!(
            both.iter().collect::<Vec<_>>(),
            [ClientId(64), ClientId(129)]
        );
        assert!(both.is_subset(&a) && both.is_subset(&b) && !a.is_subset(&b));
        assert_eq!(a.difference(&b).collect::<Vec<_>>(), [ClientId(0)]);
        assert!(a.remove(ClientId(0)) && !a.remove(ClientId(0)) && !a.remove(ClientId(999)));
        assert_eq!(a.len(), 2);
        assert_eq!(ClientSet::full(130).len(), 130);
        assert_eq!(ClientSet::full(130).iter().count(), 130);
        assert!(ClientSet::from_ids(3, &[ClientId(1), ClientId(1)]).is_err());
        assert!(a.intersection(&ClientSet::empty(7)).is_err());
    }
}
