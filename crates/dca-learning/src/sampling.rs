//! Which clients contribute to an iteration, and what that lets the accountant claim.
//!
//! In both modes **every** registered client takes part in the DCA round; a client that is not
//! in the batch sends a zero vector (plus its share of the noise). The compute nodes and the
//! aggregator therefore never learn who was sampled, which is what amplification by subsampling
//! needs: the analyst sees only the noisy sum.
//!
//! * [`ClientSampling::Poisson`]: each client flips its own coin with the public rate q, from
//!   its own randomness. Nobody learns the batch, not even the trainer. Guarantee:
//!   add/remove-one client, Poisson-subsampled Gaussian (Mironov–Talwar–Zhang 2019 for a
//!   continuous Gaussian; Zhu–Wang 2019 with the Kairouz–Liu–Steinke bound for DCA's discrete
//!   sum, see `dp_noise::rdp`). The gradient is normalised by the expected batch size qN.
//! * [`ClientSampling::FixedSize`]: the trainer draws a uniformly random batch of exactly m of
//!   the N clients (from its CSPRNG) and tells each selected client privately. Guarantee:
//!   replace-one client, sampling without replacement (Wang–Balle–Kasiviswanathan 2019, Thm 9),
//!   **against everyone but the trainer** — the trainer knows the batch, so against it the
//!   amplification does not hold (use Poisson when the trainer is not trusted).

use rand_core::RngCore;

use crate::{Error, Result};

/// How the batch of one iteration is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClientSampling {
    /// Each client independently with probability `rate` ∈ (0, 1].
    Poisson {
        /// q.
        rate: f64,
    },
    /// Exactly `batch` of the N clients, uniformly without replacement (1 ≤ m ≤ N).
    FixedSize {
        /// m.
        batch: usize,
    },
}

impl ClientSampling {
    pub(crate) fn validate(&self, n_clients: usize) -> Result<()> {
        match *self {
            ClientSampling::Poisson { rate } => {
                if !(rate > 0.0 && rate <= 1.0) {
                    return Err(Error::InvalidParameter {
                        name: "sampling rate",
                        value: rate,
                        requirement: "in (0, 1]",
                    });
                }
            }
            ClientSampling::FixedSize { batch } => {
                if batch == 0 || batch > n_clients {
                    return Err(Error::InvalidParameter {
                        name: "batch",
                        value: batch as f64,
                        requirement: "in 1..=n_clients",
                    });
                }
            }
        }
        Ok(())
    }

    /// The public divisor of the released sum: qN (Poisson) or m.
    pub(crate) fn normaliser(&self, n_clients: usize) -> f64 {
        match *self {
            ClientSampling::Poisson { rate } => rate * n_clients as f64,
            ClientSampling::FixedSize { batch } => batch as f64,
        }
    }

    /// What the accountant charges for this sampling.
    pub(crate) fn accounting(&self, n_clients: usize) -> dp_noise::rdp::Sampling {
        match *self {
            ClientSampling::Poisson { rate } => dp_noise::rdp::Sampling::Poisson { rate },
            ClientSampling::FixedSize { batch } => dp_noise::rdp::Sampling::WithoutReplacement {
                fraction: batch as f64 / n_clients as f64,
            },
        }
    }
}

/// One client's Poisson coin: true with probability `rate` (53-bit uniform).
pub fn poisson_coin<R: RngCore + ?Sized>(rng: &mut R, rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    u < rate
}

/// A uniformly random subset of exactly `m` of `0..n`, as a membership mask (partial
/// Fisher–Yates with unbiased bounded integers).
pub fn fixed_size_batch<R: RngCore + ?Sized>(rng: &mut R, n: usize, m: usize) -> Vec<bool> {
    let mut idx: Vec<usize> = (0..n).collect();
    let mut mask = vec![false; n];
    for k in 0..m.min(n) {
        let j = k + below(rng, (n - k) as u64) as usize;
        idx.swap(k, j);
        mask[idx[k]] = true;
    }
    mask
}

/// Uniform integer in 0..n (n ≥ 1) by rejection: no modulo bias.
fn below<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % n + 1) % n;
    loop {
        let u = rng.next_u64();
        if u <= zone {
            return u % n;
        }
    }
}
