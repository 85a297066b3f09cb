//! The client side of DCA: encode, add distributed noise, split into M shares.

use dp_noise::discrete::DiscreteGaussian;
use dp_noise::rng::{RngSource, SecretRng};
use rand_core::RngCore;
use zeroize::{Zeroize, Zeroizing};

use crate::ids::{ClientId, NodeIndex, ShardId};
use crate::message::{ShareMessage, SharePayload};
use crate::prg::{self, MaskDomain, Seed, Sign};
use crate::round::{RoundConfig, ShareMode};
use crate::{Error, Result};

/// Noise values sampled per batch (bounded scratch, independent of d).
const NOISE_BATCH: usize = 1024;

/// A client of one round.
///
/// `shard` turns a value vector z into M messages: node k >= 1 gets a mask r_k (an AES-CTR
/// keystream of a fresh seed, sent as the seed or expanded), node 0 gets the balancing share
/// enc(z) + η − Σ_k r_k (wrapping), where η is the client's discrete Gaussian noise in grid
/// units if the round has noise. The M shares sum to enc(z) + η in Z_2^64; any M − 1 of them are
/// jointly uniform (each mask is pseudorandom and the balancing share is masked by the
/// missing one), so a coalition of M − 1 nodes learns nothing about z.
pub struct Client {
    config: RoundConfig,
    id: ClientId,
    rng: SecretRng,
    noise: Option<DiscreteGaussian>,
}

impl Client {
    /// Client `id` of the round. `rng` supplies seeds and noise: [`RngSource::Os`] in
    /// production; [`RngSource::InsecureFixedSeed`] only for tests (anyone knowing it can unmask).
    ///
    /// # Errors
    /// [`Error::UnknownClient`] if `id >= N`; [`Error::Noise`] if the OS generator fails.
    pub fn new(config: &RoundConfig, id: ClientId, rng: RngSource) -> Result<Self> {
        if id.0 >= config.n_clients() as u64 {
            return Err(Error::UnknownClient {
                client: id,
                n_clients: config.n_clients(),
            });
        }
        let noise = match config.noise() {
            Some(spec) => Some(DiscreteGaussian::new(spec.sigma_client_units)?),
            None => None,
        };
        Ok(Self {
            config: config.clone(),
            id,
            rng: rng.try_rng()?,
            noise,
        })
    }

    /// This client's id.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// Encodes `values` (length d, |x| <= bound), adds the round's noise and splits the result
    /// into M messages; element k is for node k. All M carry one fresh random [`ShardId`]: a
    /// second call (a retry) is a different attempt, and nodes holding different attempts of
    /// this client never have them summed together.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::NonFinite`], [`Error::OutOfBound`] — checked before
    /// any randomness is drawn; [`Error::Allocation`] if the M shares of d words cannot be
    /// allocated.
    pub fn shard(&mut self, values: &[f64]) -> Result<Vec<ShareMessage>> {
        let mut out = Vec::new();
        self.shard_into(values, &mut out)?;
        Ok(out)
    }

    /// As [`Client::shard`], writing the M messages into `out` and reusing the d-word vectors
    /// of the messages already there (a previous call's, once the nodes have absorbed them):
    /// a loop over many clients then allocates its share buffers once instead of once per
    /// client, which in full mode (M vectors of d words per client) is most of its time in a
    /// fresh process. Reused vectors are overwritten in full.
    ///
    /// # Errors
    /// As [`Client::shard`]. A wrong length leaves `out` unchanged; after any other error
    /// `out` is empty (its vectors wiped and freed). Either way no randomness was drawn if
    /// the values were bad.
    pub fn shard_into(&mut self, values: &[f64], out: &mut Vec<ShareMessage>) -> Result<()> {
        let dim = self.config.dim();
        check_length(values, dim)?;
        let mut spare = reusable_vectors(out, dim);
        let mut vector = |what| match spare.pop() {
            Some(words) => Ok(words),
            None => crate::alloc::zeroed(dim, what).map(Zeroizing::new),
        };
        let codec = self.config.codec();
        // Wiped if an error returns early; on success it moves into node 0's message, whose
        // payload wipes itself when dropped.
        let mut balancing = vector("client's balancing share")?;
        self.encode_with_noise(values, &mut balancing, None)?;
        let mut masks = Vec::with_capacity(usize::from(self.config.n_nodes()));
        for node in 1..self.config.n_nodes() {
            let seed = Seed::random(&mut self.rng);
            let domain = MaskDomain {
                round: self.config.round(),
                client: self.id,
                node: NodeIndex(node),
            };
            let payload = match self.config.mode() {
                ShareMode::Seed => {
                    prg::apply_mask(&seed, domain, 0, &mut balancing, Sign::Sub);
                    SharePayload::Seed(seed)
                }
                ShareMode::Full => {
                    let mut mask = vector("client's mask share")?;
                    prg::split_mask(&seed, domain, &mut mask, &mut balancing);
                    SharePayload::Full(std::mem::take(&mut *mask))
                }
            };
            masks.push(payload);
        }
        let shard = ShardId(self.rng.next_u64());
        let message = |node: usize, payload| ShareMessage {
            round: self.config.round(),
            config: self.config.digest(),
            client: self.id,
            shard,
            node: NodeIndex(node as u16),
            frac_bits: codec.frac_bits(),
            dim,
            payload,
        };
        out.push(message(
            0,
            SharePayload::Full(std::mem::take(&mut *balancing)),
        ));
        out.extend(
            masks
                .into_iter()
                .enumerate()
                .map(|(k, payload)| message(k + 1, payload)),
        );
        Ok(())
    }
}

/// How a verified mode bounds a client's noise slice η (grid units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceBound {
    /// Each η_i clamped into [−b, b] (the L∞ mode).
    Coordinate(u64),
    /// η scaled towards 0 to ‖η‖₂ ≤ b if it is longer (the L2 mode); each entry keeps its sign
    /// and does not grow.
    Norm(u64),
}

impl Client {
    /// The vector this client contributes, enc(z) + η in grid units (two's complement), without
    /// splitting it: for a mode that proves a bound on it (crate `verified-shares`). Each noise
    /// value is clamped into [−`slice_bound`, `slice_bound`] units; the draws are those of
    /// [`Client::shard`], so where no value reaches the bound the vector is the one `shard`'s
    /// shares sum to.
    ///
    /// # Errors
    /// As [`Client::shard`]; nothing is drawn if the values are bad.
    pub fn contribution(
        &mut self,
        values: &[f64],
        slice_bound: u64,
    ) -> Result<Zeroizing<Vec<u64>>> {
        self.bounded_contribution(values, SliceBound::Coordinate(slice_bound))
    }

    /// As [`Client::contribution`], the noise slice bounded as `slice_bound` says.
    ///
    /// # Errors
    /// As [`Client::shard`]; nothing is drawn if the values are bad.
    pub fn bounded_contribution(
        &mut self,
        values: &[f64],
        slice_bound: SliceBound,
    ) -> Result<Zeroizing<Vec<u64>>> {
        let dim = self.config.dim();
        check_length(values, dim)?;
        let mut words = crate::alloc::zeroed(dim, "client's contribution").map(Zeroizing::new)?;
        match slice_bound {
            SliceBound::Coordinate(bound) => {
                self.encode_with_noise(values, &mut words, Some(bound))?;
            }
            SliceBound::Norm(bound) => self.encode_with_noise_in_norm(values, &mut words, bound)?,
        }
        Ok(words)
    }

    /// Draws 16 bytes from this client's generator (after its noise, as `shard` draws its seeds).
    pub fn random_bytes(&mut self) -> [u8; 16] {
        let mut out = [0u8; 16];
        self.rng.fill_bytes(&mut out);
        out
    }

    /// enc(`values`) + η into `words` (length d), each η clamped into ±`slice_bound` if given.
    fn encode_with_noise(
        &mut self,
        values: &[f64],
        words: &mut [u64],
        slice_bound: Option<u64>,
    ) -> Result<()> {
        self.config.codec().encode(values, words)?;
        if let Some(noise) = &self.noise {
            let bound = slice_bound.map(|b| i64::try_from(b).unwrap_or(i64::MAX));
            let mut eta = [0i64; NOISE_BATCH];
            // One keystream for the whole vector, drawn in chunks (`GaussianStream`).
            let mut stream = noise.stream(&mut self.rng);
            for chunk in words.chunks_mut(NOISE_BATCH) {
                let eta = &mut eta[..chunk.len()];
                stream.fill(eta);
                // Only the verified mode clamps: `shard`'s loop stays the plain add.
                if let Some(bound) = bound {
                    eta.iter_mut().for_each(|e| *e = (*e).clamp(-bound, bound));
                }
                for (v, e) in chunk.iter_mut().zip(eta.iter()) {
                    *v = v.wrapping_add(*e as u64);
                }
            }
            // The noise is as secret as the value it hides.
            eta.zeroize();
        }
        Ok(())
    }

    /// enc(`values`) + η into `words`, η (the same draws as `shard`'s) scaled to ‖η‖₂ ≤
    /// `norm_bound` if it is longer: the whole slice is drawn before any of it is added.
    fn encode_with_noise_in_norm(
        &mut self,
        values: &[f64],
        words: &mut [u64],
        norm_bound: u64,
    ) -> Result<()> {
        self.config.codec().encode(values, words)?;
        let Some(noise) = &self.noise else {
            return Ok(());
        };
        let mut eta =
            crate::alloc::zeroed(words.len(), "client's noise slice").map(Zeroizing::new)?;
        let mut stream = noise.stream(&mut self.rng);
        for chunk in eta.chunks_mut(NOISE_BATCH) {
            stream.fill(chunk);
        }
        let norm_squared: u128 = eta
            .iter()
            .map(|&e| u128::from(e.unsigned_abs()).pow(2))
            .sum();
        let bound_squared = u128::from(norm_bound).pow(2);
        if norm_squared > bound_squared {
            // Truncating each scaled entry towards 0 keeps ‖η‖₂ ≤ bound whatever the rounding of
            // the scale, which is shrunk by a margin far above f64's relative error.
            let scale = norm_bound as f64 / (norm_squared as f64).sqrt() * (1.0 - 1e-12);
            eta.iter_mut()
                .for_each(|e| *e = (*e as f64 * scale).trunc() as i64);
        }
        for (v, e) in words.iter_mut().zip(eta.iter()) {
            *v = v.wrapping_add(*e as u64);
        }
        Ok(())
    }
}

fn check_length(values: &[f64], dim: usize) -> Result<()> {
    if values.len() == dim {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what: "client vector",
            expected: dim,
            actual: values.len(),
        })
    }
}

/// Empties `messages`, keeping their full vectors of exactly `dim` words (the rest are wiped
/// and freed as the messages drop).
fn reusable_vectors(messages: &mut Vec<ShareMessage>, dim: usize) -> Vec<Zeroizing<Vec<u64>>> {
    messages
        .drain(..)
        .filter_map(|mut message| match &mut message.payload {
            SharePayload::Full(words) if words.len() == dim => {
                Some(Zeroizing::new(std::mem::take(words)))
            }
            _ => None,
        })
        .collect()
}
