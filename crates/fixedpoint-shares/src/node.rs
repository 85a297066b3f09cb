//! The compute node of DCA: absorbs one share per client, streaming, and outputs the sum of the
//! agreed client set's shares.
//!
//! Memory is O(d + N) whatever the number of clients: a share is added into the accumulator as
//! it arrives and only the client id (a bit) and its shard attempt are kept, plus the 16-byte
//! seed of seed shares so that a client outside the agreed set can be removed again by
//! re-expanding it (not kept by [`ComputeNode::without_kept_seeds`], for hosts that store the
//! messages anyway). A full share cannot be re-derived; a client outside the agreed set whose
//! full share was absorbed must be [`ComputeNode::retract`]ed with the same message before
//! [`ComputeNode::finalize`]. Wire bytes are absorbed without copying the payload
//! ([`ComputeNode::absorb_bytes`]).

use std::collections::HashMap;

use rayon::prelude::*;

use crate::client_set::ClientSet;
use crate::ids::{ClientId, ConfigDigest, NodeIndex, RoundId};
use crate::kernels;
use crate::message::ShareMessage;
use crate::prg::{self, MaskDomain, Seed, Sign};
use crate::round::{RoundConfig, ShareMode};
use crate::shard_set::ShardSet;
use crate::wire::{Decode, PayloadView, ShareView};
use crate::{Error, Result};

/// Granularity of the coordinate split across threads (8 KiB of each share per piece).
const PAR_SPLIT_WORDS: usize = 1024;

/// Words of the accumulator (128 KiB, well inside L2) that every message of a batch is added
/// into before moving on, so the accumulator is read and written once per batch rather than
/// once per message.
const BLOCK_WORDS: usize = 1 << 14;

/// Below this many words of work (messages × d) a batch is summed on the calling thread.
const PAR_MIN_WORK_WORDS: usize = 1 << 15;

/// A compute node's output: the wrapping sum of the agreed clients' shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSum {
    /// The round.
    pub round: RoundId,
    /// The round's config digest.
    pub config: ConfigDigest,
    /// The node that computed it.
    pub node: NodeIndex,
    /// Fractional bits of the encoding.
    pub frac_bits: u32,
    /// The (client, shard attempt) pairs whose shares are in the sum.
    pub agreed: ShardSet,
    /// Σ over `agreed` of this node's shares, in Z_2^64.
    pub sum: Vec<u64>,
}

/// Accumulator, received pairs and kept (client, attempt, seed) triples, for tests.
#[cfg(test)]
pub(crate) type NodeSnapshot = (
    Vec<u64>,
    ShardSet,
    Vec<(ClientId, crate::ids::ShardId, Option<Seed>)>,
);

/// One compute node of one round.
pub struct ComputeNode {
    config: RoundConfig,
    node: NodeIndex,
    acc: Vec<u64>,
    received: ShardSet,
    /// The seed of every absorbed seed share (to remove it again by re-expansion), unless the
    /// node was made with [`ComputeNode::without_kept_seeds`]. Full shares keep nothing here.
    seeds: HashMap<ClientId, Seed>,
    keep_seeds: bool,
}

impl ComputeNode {
    /// Node `node` of the round.
    ///
    /// # Errors
    /// [`Error::UnknownNode`] unless `node < M`; [`Error::Allocation`] if the d-word
    /// accumulator or the N-bit client set cannot be allocated.
    pub fn new(config: &RoundConfig, node: NodeIndex) -> Result<Self> {
        Self::make(config, node, true)
    }

    /// As [`ComputeNode::new`], but keeping no seeds: memory is the d-word accumulator plus
    /// the received set, whatever the share mode. For hosts that store every absorbed message
    /// themselves (e.g. a service's database): every received client outside the agreed set,
    /// seed share or full, must then be [`ComputeNode::retract`]ed with its message before
    /// [`ComputeNode::finalize`], which otherwise refuses with [`Error::NeedsRetraction`].
    /// `retract` then checks the shard attempt but cannot compare a seed.
    ///
    /// # Errors
    /// As [`ComputeNode::new`].
    pub fn without_kept_seeds(config: &RoundConfig, node: NodeIndex) -> Result<Self> {
        Self::make(config, node, false)
    }

    fn make(config: &RoundConfig, node: NodeIndex, keep_seeds: bool) -> Result<Self> {
        if node.0 >= config.n_nodes() {
            return Err(Error::UnknownNode {
                node,
                n_nodes: config.n_nodes(),
            });
        }
        Ok(Self {
            config: config.clone(),
            node,
            acc: crate::alloc::zeroed(config.dim(), "node accumulator")?,
            received: ShardSet::try_empty(config.n_clients())?,
            seeds: HashMap::new(),
            keep_seeds,
        })
    }

    /// This node's index.
    pub fn node(&self) -> NodeIndex {
        self.node
    }

    /// The (client, shard attempt) pairs whose shares are in the accumulator.
    pub fn received(&self) -> &ShardSet {
        &self.received
    }

    /// Adds one client's share.
    ///
    /// # Errors
    /// [`Error::WrongRound`], [`Error::WrongConfig`], [`Error::WrongNode`],
    /// [`Error::WrongFracBits`], [`Error::LengthMismatch`], [`Error::WrongPayloadKind`],
    /// [`Error::UnknownClient`], [`Error::DuplicateClient`]; the node is unchanged.
    pub fn absorb(&mut self, msg: &ShareMessage) -> Result<()> {
        self.absorb_views(&[msg.view()])
    }

    /// Decodes untrusted wire bytes against this round and adds the share, reading a full
    /// payload straight from the bytes (no intermediate vector).
    ///
    /// # Errors
    /// [`Error::Wire`] for malformed bytes, otherwise as [`ComputeNode::absorb`]; the node is
    /// unchanged.
    pub fn absorb_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let view = ShareView::get_decoded(&self.config, bytes)?;
        self.absorb_views(&[view])
    }

    /// Adds many clients' shares, in parallel (rayon) when the batch is large. All-or-nothing:
    /// every message is checked (including duplicates within the batch) before any is added.
    ///
    /// # Errors
    /// As [`ComputeNode::absorb`], for the first bad message; the node is unchanged.
    pub fn absorb_batch(&mut self, msgs: &[ShareMessage]) -> Result<()> {
        let views: Vec<ShareView<'_>> = msgs.iter().map(ShareMessage::view).collect();
        self.absorb_views(&views)
    }

    fn absorb_views(&mut self, views: &[ShareView<'_>]) -> Result<()> {
        for view in views {
            self.check(view)?;
            if self.received.clients().contains(view.client) {
                return Err(Error::DuplicateClient {
                    client: view.client,
                });
            }
        }
        if views.len() > 1 {
            let mut ids: Vec<ClientId> = views.iter().map(|m| m.client).collect();
            ids.sort_unstable();
            if let Some(pair) = ids.windows(2).find(|p| p[0] == p[1]) {
                return Err(Error::DuplicateClient { client: pair[0] });
            }
        }
        accumulate(&mut self.acc, views, Sign::Add);
        for view in views {
            // Ids were checked above; insertion cannot fail.
            let _ = self.received.insert(view.client, view.shard);
            if let (true, PayloadView::Seed(seed)) = (self.keep_seeds, &view.payload) {
                self.seeds.insert(view.client, seed.clone());
            }
        }
        Ok(())
    }

    /// Removes a previously absorbed share again: the caller passes the identical message.
    /// Needed for full shares of clients outside the agreed set; seed shares are removed by
    /// [`ComputeNode::finalize`] on its own. The node checks that it is the share it absorbed:
    /// the same shard attempt and, for a seed share, the same seed (compared in constant
    /// time). A full vector itself is not stored, so beyond its attempt it cannot be compared.
    ///
    /// # Errors
    /// As [`ComputeNode::absorb`], [`Error::NotAbsorbed`], or [`Error::RetractMismatch`] (another
    /// attempt or seed); the node is unchanged.
    pub fn retract(&mut self, msg: &ShareMessage) -> Result<()> {
        self.retract_view(&msg.view())
    }

    /// As [`ComputeNode::retract`], from wire bytes (read in place).
    ///
    /// # Errors
    /// [`Error::Wire`] for malformed bytes, otherwise as [`ComputeNode::retract`].
    pub fn retract_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let view = ShareView::get_decoded(&self.config, bytes)?;
        self.retract_view(&view)
    }

    fn retract_view(&mut self, view: &ShareView<'_>) -> Result<()> {
        self.check(view)?;
        let shard = self.received.shard(view.client).ok_or(Error::NotAbsorbed {
            client: view.client,
        })?;
        if shard != view.shard {
            return Err(Error::RetractMismatch {
                client: view.client,
                what: "shard id",
            });
        }
        if let (Some(kept), PayloadView::Seed(seed)) = (self.seeds.get(&view.client), &view.payload)
            && kept != seed
        {
            return Err(Error::RetractMismatch {
                client: view.client,
                what: "seed",
            });
        }
        accumulate(&mut self.acc, std::slice::from_ref(view), Sign::Sub);
        self.received.remove(view.client);
        self.seeds.remove(&view.client);
        Ok(())
    }

    /// The node's sum over the `agreed` (client, shard attempt) pairs (the intersection of
    /// what every node received, see [`crate::agree`]). Seed shares of received clients outside
    /// the set are subtracted by re-expansion. Does not change the node.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (set over another N), [`Error::AgreedNotReceived`],
    /// [`Error::ShardMismatch`] (the set names another attempt of a client than this node
    /// absorbed), [`Error::TooManyDropped`] (more than T of N missing: no release),
    /// [`Error::NeedsRetraction`].
    pub fn finalize(&self, agreed: &ShardSet) -> Result<NodeSum> {
        if agreed.universe() != self.config.n_clients() {
            return Err(Error::InvalidParameter {
                name: "agreed client set universe",
                value: agreed.universe() as f64,
                requirement: "equal to the round's N",
            });
        }
        for (client, shard) in agreed.iter() {
            match self.received.shard(client) {
                None => {
                    return Err(Error::AgreedNotReceived {
                        client,
                        node: self.node,
                    });
                }
                Some(absorbed) if absorbed != shard => {
                    return Err(Error::ShardMismatch {
                        client,
                        node: self.node,
                        agreed: shard,
                        absorbed,
                    });
                }
                Some(_) => {}
            }
        }
        check_missing(agreed.clients(), &self.config)?;
        let mut excess = Vec::new();
        for client in self.received.clients().difference(agreed.clients()) {
            match self.seeds.get(&client) {
                Some(seed) => excess.push((client, seed)),
                None => return Err(Error::NeedsRetraction { client }),
            }
        }
        let mut sum = self.acc.clone();
        for (client, seed) in excess {
            let domain = MaskDomain {
                round: self.config.round(),
                client,
                node: self.node,
            };
            prg::apply_mask(seed, domain, 0, &mut sum, Sign::Sub);
        }
        Ok(NodeSum {
            round: self.config.round(),
            config: self.config.digest(),
            node: self.node,
            frac_bits: self.config.codec().frac_bits(),
            agreed: agreed.clone(),
            sum,
        })
    }

    /// Adds another instance of the same node of the same round that absorbed a disjoint set of
    /// clients (e.g. one per worker thread of a simulation): accumulators add, received sets
    /// and kept seeds unite.
    ///
    /// # Errors
    /// [`Error::WrongRound`] or [`Error::WrongNode`] for another round or node,
    /// [`Error::DuplicateClient`] if a client is in both; `self` is unchanged.
    pub(crate) fn merge(&mut self, other: &ComputeNode) -> Result<()> {
        if other.config.round() != self.config.round()
            || other.config.digest() != self.config.digest()
        {
            return Err(Error::WrongRound {
                expected: self.config.round(),
                got: other.config.round(),
            });
        }
        if other.node != self.node {
            return Err(Error::WrongNode {
                expected: self.node,
                got: other.node,
            });
        }
        let both = self
            .received
            .clients()
            .intersection(other.received.clients())?;
        if let Some(client) = both.iter().next() {
            return Err(Error::DuplicateClient { client });
        }
        kernels::add_assign(&mut self.acc, &other.acc)?;
        for (client, shard) in other.received.iter() {
            // Same universe (checked by `intersection`) and disjoint, so insertion cannot fail.
            let _ = self.received.insert(client, shard);
        }
        self.seeds
            .extend(other.seeds.iter().map(|(c, seed)| (*c, seed.clone())));
        Ok(())
    }

    /// Everything an operation could change, for tests that check errors change nothing.
    #[cfg(test)]
    pub(crate) fn snapshot(&self) -> NodeSnapshot {
        let mut kept: Vec<_> = self
            .received
            .iter()
            .map(|(c, shard)| (c, shard, self.seeds.get(&c).cloned()))
            .collect();
        kept.sort_by_key(|(c, _, _)| *c);
        (self.acc.clone(), self.received.clone(), kept)
    }

    /// Checks everything about a message except whether its client was already absorbed.
    fn check(&self, msg: &ShareView<'_>) -> Result<()> {
        check_view(&self.config, self.node, msg)
    }
}

/// The running sum of one compute node of one round, for hosts that store every absorbed
/// message themselves (e.g. a service's database): the d-word accumulator and the received
/// client ids (a bit per client), nothing else — no seeds, no shard attempts, so memory is
/// O(d + N/8) bytes. The host keeps each client's attempt and checks the agreed set's
/// attempts against it; every received client outside the agreed set must be
/// [`RunningSum::retract`]ed with its stored message before [`RunningSum::finalize`].
/// [`ComputeNode`] is the self-contained node that checks attempts and seeds itself.
pub struct RunningSum {
    config: RoundConfig,
    node: NodeIndex,
    acc: Vec<u64>,
    received: ClientSet,
}

impl RunningSum {
    /// The running sum of node `node` of the round.
    ///
    /// # Errors
    /// As [`ComputeNode::new`].
    pub fn new(config: &RoundConfig, node: NodeIndex) -> Result<Self> {
        if node.0 >= config.n_nodes() {
            return Err(Error::UnknownNode {
                node,
                n_nodes: config.n_nodes(),
            });
        }
        Ok(Self {
            config: config.clone(),
            node,
            acc: crate::alloc::zeroed(config.dim(), "node accumulator")?,
            received: ClientSet::try_empty(config.n_clients())?,
        })
    }

    /// This node's index.
    pub fn node(&self) -> NodeIndex {
        self.node
    }

    /// The clients whose shares are in the accumulator.
    pub fn received(&self) -> &ClientSet {
        &self.received
    }

    /// Adds one client's share.
    ///
    /// # Errors
    /// As [`ComputeNode::absorb`]; the sum is unchanged.
    pub fn absorb(&mut self, msg: &ShareMessage) -> Result<()> {
        self.absorb_view(&msg.view())
    }

    /// Decodes untrusted wire bytes against this round and adds the share (read in place).
    ///
    /// # Errors
    /// As [`ComputeNode::absorb_bytes`]; the sum is unchanged.
    pub fn absorb_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let view = ShareView::get_decoded(&self.config, bytes)?;
        self.absorb_view(&view)
    }

    fn absorb_view(&mut self, view: &ShareView<'_>) -> Result<()> {
        check_view(&self.config, self.node, view)?;
        if self.received.contains(view.client) {
            return Err(Error::DuplicateClient {
                client: view.client,
            });
        }
        accumulate(&mut self.acc, std::slice::from_ref(view), Sign::Add);
        // Checked above (id < N, not yet present).
        let _ = self.received.insert(view.client);
        Ok(())
    }

    /// Removes a previously absorbed share again; the caller passes the identical message
    /// (nothing beyond the client id can be compared: the sum keeps no attempts or seeds).
    ///
    /// # Errors
    /// As [`ComputeNode::absorb`], or [`Error::NotAbsorbed`]; the sum is unchanged.
    pub fn retract(&mut self, msg: &ShareMessage) -> Result<()> {
        let view = msg.view();
        check_view(&self.config, self.node, &view)?;
        if !self.received.contains(view.client) {
            return Err(Error::NotAbsorbed {
                client: view.client,
            });
        }
        accumulate(&mut self.acc, std::slice::from_ref(&view), Sign::Sub);
        self.received.remove(view.client);
        Ok(())
    }

    /// The node's sum over `agreed`, which must name exactly the received clients (retract
    /// the others first); its attempts are the host's, checked by the host. Does not change
    /// the sum.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (set over another N), [`Error::AgreedNotReceived`],
    /// [`Error::NeedsRetraction`], [`Error::TooManyDropped`].
    pub fn finalize(&self, agreed: ShardSet) -> Result<NodeSum> {
        self.check_agreed(agreed.clients())?;
        Ok(NodeSum {
            round: self.config.round(),
            config: self.config.digest(),
            node: self.node,
            frac_bits: self.config.codec().frac_bits(),
            agreed,
            sum: self.acc.clone(),
        })
    }

    /// What [`RunningSum::finalize`] and [`RunningSum::write_sum`] require of the agreed set:
    /// over the round's N, every client received, no more dropped than the round allows, and
    /// nothing received outside it.
    fn check_agreed(&self, agreed: &ClientSet) -> Result<()> {
        if agreed.universe() != self.config.n_clients() {
            return Err(Error::InvalidParameter {
                name: "agreed client set universe",
                value: agreed.universe() as f64,
                requirement: "equal to the round's N",
            });
        }
        if let Some(client) = agreed.iter().find(|c| !self.received.contains(*c)) {
            return Err(Error::AgreedNotReceived {
                client,
                node: self.node,
            });
        }
        check_missing(agreed, &self.config)?;
        if let Some(client) = self.received.difference(agreed).next() {
            return Err(Error::NeedsRetraction { client });
        }
        Ok(())
    }

    /// [`RunningSum::finalize`] streamed: writes the node sum's wire bytes to `out` — exactly
    /// `finalize(pairs)?.get_encoded()?` — taking the agreed clients as a set (N bits) and
    /// their attempts one by one from `pairs`, which must yield `(client, attempt)` for every
    /// client of `agreed` in increasing client order (as a host's store reads them back) and
    /// nothing else. Memory is O(1) beyond the set: the pairs are never held together. The
    /// same checks as `finalize` run before anything is written; `out` is buffered here.
    ///
    /// # Errors
    /// As [`RunningSum::finalize`], before anything is written; then
    /// [`Error::InvalidParameter`] if `pairs` names a client out of the set's order,
    /// [`Error::LengthMismatch`] if it yields fewer or more pairs than the set has clients,
    /// [`Error::Transport`] if writing to `out` fails. After an error `out` may hold part of
    /// the bytes; discard them.
    pub fn write_sum<W: std::io::Write>(
        &self,
        agreed: &ClientSet,
        pairs: impl IntoIterator<Item = (ClientId, crate::ids::ShardId)>,
        out: W,
    ) -> Result<()> {
        self.check_agreed(agreed)?;
        crate::wire::write_node_sum_streamed(
            &self.config,
            self.node,
            agreed,
            pairs.into_iter(),
            &self.acc,
            out,
        )
    }
}

/// Checks everything about a share message for node `node` of `config`'s round that the
/// message and the round decide — round, config digest, node, fractional bits, client id below
/// N, payload kind, length — but not whether its client was already absorbed. The one check of
/// a share, used by every node (in process, over the C ABI, over the network).
///
/// # Errors
/// The first field that does not fit, named by its [`Error`] variant.
pub fn check_share(config: &RoundConfig, node: NodeIndex, msg: &ShareMessage) -> Result<()> {
    check_view(config, node, &msg.view())
}

/// As [`check_share`], on a borrowed view.
fn check_view(config: &RoundConfig, node: NodeIndex, msg: &ShareView<'_>) -> Result<()> {
    let c = config;
    if msg.round != c.round() {
        return Err(Error::WrongRound {
            expected: c.round(),
            got: msg.round,
        });
    }
    if msg.config != c.digest() {
        return Err(Error::WrongConfig {
            round: msg.round,
            expected: c.digest(),
            got: msg.config,
        });
    }
    if msg.node != node {
        return Err(Error::WrongNode {
            expected: node,
            got: msg.node,
        });
    }
    if msg.frac_bits != c.codec().frac_bits() {
        return Err(Error::WrongFracBits {
            expected: c.codec().frac_bits(),
            got: msg.frac_bits,
        });
    }
    if msg.client.0 >= c.n_clients() as u64 {
        return Err(Error::UnknownClient {
            client: msg.client,
            n_clients: c.n_clients(),
        });
    }
    let expected_kind = if node.0 == 0 || c.mode() == ShareMode::Full {
        "full"
    } else {
        "seed"
    };
    if msg.payload.kind() != expected_kind {
        return Err(Error::WrongPayloadKind {
            node,
            expected: expected_kind,
            got: msg.payload.kind(),
        });
    }
    let len = msg.payload.full_len().unwrap_or(msg.dim);
    if msg.dim != c.dim() || len != c.dim() {
        return Err(Error::LengthMismatch {
            what: "share",
            expected: c.dim(),
            actual: if msg.dim != c.dim() { msg.dim } else { len },
        });
    }
    Ok(())
}

/// Refuses a set missing more than T of the N clients.
pub(crate) fn check_missing(agreed: &ClientSet, config: &RoundConfig) -> Result<()> {
    if agreed.missing() > config.max_dropped() {
        Err(Error::TooManyDropped {
            missing: agreed.missing(),
            max_dropped: config.max_dropped(),
            n_clients: config.n_clients(),
        })
    } else {
        Ok(())
    }
}

/// `acc ±= Σ_msgs share` (every message already checked: right round, node and length).
///
/// Large vectors are split by coordinate range across threads (each thread expands seeds from
/// its own offset, no extra accumulator); many small ones are split by client with one
/// accumulator per thread, reduced at the end. Memory stays O(threads · d).
fn accumulate(acc: &mut [u64], msgs: &[ShareView<'_>], sign: Sign) {
    let d = acc.len();
    let threads = rayon::current_num_threads();
    let work = msgs.len().saturating_mul(d);
    if threads < 2 || work < PAR_MIN_WORK_WORDS {
        accumulate_blocked(acc, 0, msgs, sign);
    } else if d >= 2 * PAR_SPLIT_WORDS * threads || msgs.len() < 2 * threads {
        let per = d.div_ceil(threads).next_multiple_of(PAR_SPLIT_WORDS);
        acc.par_chunks_mut(per)
            .enumerate()
            .for_each(|(i, part)| accumulate_blocked(part, i * per, msgs, sign));
    } else {
        let per = msgs.len().div_ceil(threads);
        let partial = msgs
            .par_chunks(per)
            .map(|chunk| {
                let mut local = vec![0u64; d];
                accumulate_blocked(&mut local, 0, chunk, Sign::Add);
                local
            })
            .reduce_with(|mut a, b| {
                let _ = kernels::add_assign(&mut a, &b);
                a
            });
        if let Some(partial) = partial {
            // Equal lengths by construction.
            let _ = match sign {
                Sign::Add => kernels::add_assign(acc, &partial),
                Sign::Sub => kernels::sub_assign(acc, &partial),
            };
        }
    }
}

/// `part ±= Σ_msgs share[start .. start + part.len()]`, one cache-sized block of `part` at a
/// time with the messages inner: full shares are added four at a time
/// ([`kernels::add_assign_many`]), seed shares are expanded from the block's offset in their
/// keystream (CTR seeks exactly to any word, see `prg::apply_mask`).
fn accumulate_blocked(part: &mut [u64], start: usize, msgs: &[ShareView<'_>], sign: Sign) {
    let mut fulls: Vec<&[u64]> = Vec::with_capacity(msgs.len());
    for (b, block) in part.chunks_mut(BLOCK_WORDS).enumerate() {
        let offset = start + b * BLOCK_WORDS;
        fulls.clear();
        for msg in msgs {
            match (&msg.payload, sign) {
                (PayloadView::Words(v), Sign::Add) => {
                    if let Some(src) = v.get(offset..offset + block.len()) {
                        fulls.push(src);
                    }
                }
                _ => apply_range(block, offset, msg, sign),
            }
        }
        // Every source has the block's length by construction.
        let _ = kernels::add_assign_many(block, &fulls);
    }
}

/// `part ±= share[start .. start + part.len()]`.
fn apply_range(part: &mut [u64], start: usize, msg: &ShareView<'_>, sign: Sign) {
    match &msg.payload {
        PayloadView::Words(v) => {
            if let Some(src) = v.get(start..start + part.len()) {
                let _ = match sign {
                    Sign::Add => kernels::add_assign(part, src),
                    Sign::Sub => kernels::sub_assign(part, src),
                };
            }
        }
        PayloadView::Bytes(b) => {
            if let Some(src) = b.get(8 * start..8 * (start + part.len())) {
                let _ = match sign {
                    Sign::Add => kernels::add_assign_le_bytes(part, src),
                    Sign::Sub => kernels::sub_assign_le_bytes(part, src),
                };
            }
        }
        PayloadView::Seed(seed) => {
            let domain = MaskDomain {
                round: msg.round,
                client: msg.client,
                node: msg.node,
            };
            prg::apply_mask(seed, domain, start as u64, part, sign);
        }
    }
}
