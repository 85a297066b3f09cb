//! The public parameters of one summation round, validated once and shared by every party.

use dp_noise::calibrate::distributed_sigma;
use dp_noise::discrete::{DiscreteGaussian, MAX_SCALE_UNITS, sum_closeness_tau};

use sha2::{Digest, Sha256};

use crate::fixed_point::FixedPoint;
use crate::ids::{ConfigDigest, RoundId};
use crate::{Error, Result};

/// Largest vector length a round accepts (2^32 words = 32 GiB per share).
pub const MAX_DIM: usize = 1 << 32;

/// Largest number of clients a round accepts.
pub const MAX_CLIENTS: usize = 1 << 32;

/// Probability that the noise of a round exceeds the tail the codec reserves for it, in any
/// coordinate: 2^-64 (see [`noise_tail`]).
pub const NOISE_TAIL_FAILURE_PROBABILITY: f64 = 5.421_010_862_427_522e-20;

/// How the M − 1 masks travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShareMode {
    /// Every node receives a full vector (the paper's protocol; the benchmark baseline).
    Full,
    /// Node 0 receives the full balancing share, nodes 1..M a 16-byte seed that they expand.
    Seed,
}

/// What a round is: the inputs to [`RoundConfig::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct RoundParams {
    /// The round's id; messages of other rounds are rejected.
    pub round: RoundId,
    /// N: registered clients, ids `0..N`.
    pub n_clients: usize,
    /// M >= 2 compute nodes.
    pub n_nodes: u16,
    /// T: the most clients that may drop out or collude; more missing means no release.
    pub max_dropped: usize,
    /// Length d of every client's vector.
    pub dim: usize,
    /// Every input element satisfies |x| <= bound.
    pub bound: f64,
    /// How masks travel.
    pub mode: ShareMode,
    /// σ of the total Gaussian noise of the released sum (value units, per coordinate), or
    /// `None` for an exact sum without DP noise.
    pub noise_sigma_total: Option<f64>,
    /// Fixed-point fractional bits: `None` picks the most that are safe; `Some(f)` insists on f
    /// (an error if it is not safe).
    pub frac_bits: Option<u32>,
}

/// The distributed discrete Gaussian noise of a round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseSpec {
    /// σ_total, value units: the noise the release must carry per coordinate.
    pub sigma_total: f64,
    /// σ_client = σ_total / sqrt(N − T − 1) (DCA paper, Thm 1), value units.
    pub sigma_client: f64,
    /// σ_client·2^f: the parameter of each client's discrete Gaussian, in grid units.
    pub sigma_client_units: f64,
    /// The bound on |sum of all clients' noise| per coordinate reserved in the codec (value
    /// units); exceeded with probability <= [`NOISE_TAIL_FAILURE_PROBABILITY`].
    pub tail: f64,
    /// Kairouz–Liu–Steinke (2021, Thm 1) τ for N clients: how far the sum of discrete Gaussians
    /// may be from a single discrete Gaussian; 0 (underflow) once σ_client_units ≳ 4.
    pub kls_tau: f64,
}

/// The validated parameters of a round. Every party building it from the same
/// [`RoundParams`] gets the same config (including the fixed-point precision).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundConfig {
    params: RoundParams,
    codec: FixedPoint,
    noise: Option<NoiseSpec>,
    digest: ConfigDigest,
}

impl RoundConfig {
    /// Validates `params` and sizes the codec.
    ///
    /// With noise, σ_client comes from `dp_noise::calibrate::distributed_sigma` and the codec
    /// reserves [`noise_tail`] for the summed noise; f is lowered if needed so that the
    /// per-client σ in grid units stays within the exact sampler's range (<= 2^52).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (N, M, T, d, bound, frac bits out of range),
    /// [`Error::Capacity`], [`Error::Noise`] (N − T − 1 < 1, σ not positive, σ too small for the
    /// grid).
    pub fn new(params: &RoundParams) -> Result<Self> {
        let p = params;
        check_range("n_clients", p.n_clients, 1, MAX_CLIENTS)?;
        check_range("n_nodes", usize::from(p.n_nodes), 2, usize::from(u16::MAX))?;
        check_range("dim", p.dim, 1, MAX_DIM)?;
        if p.max_dropped >= p.n_clients {
            return Err(Error::InvalidParameter {
                name: "max_dropped",
                value: p.max_dropped as f64,
                requirement: "< n_clients",
            });
        }
        let noise_base = match p.noise_sigma_total {
            None => None,
            Some(sigma_total) => {
                let sigma_client = distributed_sigma(sigma_total, p.n_clients, p.max_dropped)?;
                Some((
                    sigma_total,
                    sigma_client,
                    noise_tail(sigma_client, p.n_clients, p.dim),
                ))
            }
        };
        let tail = noise_base.map_or(0.0, |(_, _, tail)| tail);
        let codec = match p.frac_bits {
            Some(f) => {
                let codec = FixedPoint::new(f, p.bound)?;
                if !codec.holds_sum(p.n_clients, tail) {
                    return Err(Error::Capacity {
                        n_clients: p.n_clients,
                        bound: p.bound,
                        noise_tail: tail,
                    });
                }
                codec
            }
            None => {
                let codec = FixedPoint::for_sum(p.n_clients, p.bound, tail)?;
                match noise_base {
                    // Largest f with σ_client·2^f <= 2^52 (never below 0; `new` then checks).
                    Some((_, sigma_client, _)) => {
                        let mut f = codec.frac_bits();
                        while f > 0 && sigma_client * pow2(f) > MAX_SCALE_UNITS {
                            f -= 1;
                        }
                        FixedPoint::new(f, p.bound)?
                    }
                    None => codec,
                }
            }
        };
        let noise = match noise_base {
            None => None,
            Some((sigma_total, sigma_client, tail)) => {
                let sigma_client_units = sigma_client * codec.scale();
                // Validates the range of σ in units (an error if the grid is too coarse).
                DiscreteGaussian::new(sigma_client_units)?;
                let kls_tau = if sigma_client_units >= 0.5 {
                    sum_closeness_tau(sigma_client_units, p.n_clients)?
                } else {
                    f64::INFINITY
                };
                Some(NoiseSpec {
                    sigma_total,
                    sigma_client,
                    sigma_client_units,
                    tail,
                    kls_tau,
                })
            }
        };
        Ok(Self {
            digest: config_digest(p, codec.frac_bits()),
            params: params.clone(),
            codec,
            noise,
        })
    }

    /// The round's id.
    pub fn round(&self) -> RoundId {
        self.params.round
    }
    /// N.
    pub fn n_clients(&self) -> usize {
        self.params.n_clients
    }
    /// M.
    pub fn n_nodes(&self) -> u16 {
        self.params.n_nodes
    }
    /// T.
    pub fn max_dropped(&self) -> usize {
        self.params.max_dropped
    }
    /// d.
    pub fn dim(&self) -> usize {
        self.params.dim
    }
    /// The element bound.
    pub fn bound(&self) -> f64 {
        self.params.bound
    }
    /// How masks travel.
    pub fn mode(&self) -> ShareMode {
        self.params.mode
    }
    /// The fixed-point codec.
    pub fn codec(&self) -> FixedPoint {
        self.codec
    }
    /// The distributed noise, if any.
    pub fn noise(&self) -> Option<NoiseSpec> {
        self.noise
    }
    /// The parameters this config was built from.
    pub fn params(&self) -> &RoundParams {
        &self.params
    }
    /// The digest of every parameter (and the resolved precision), carried by every message
    /// and node sum of the round: equal configs have equal digests, and bytes of another
    /// configuration under the same round id are refused ([`crate::Error::WrongConfig`]).
    pub fn digest(&self) -> ConfigDigest {
        self.digest
    }
}

/// SHA-256 over a fixed-layout encoding of the parameters, truncated to 16 bytes (collisions
/// cost 2^64 work). The resolved fractional bits are included, so a config that insists on f
/// and one that picked f automatically digest alike exactly when they agree.
fn config_digest(p: &RoundParams, frac_bits: u32) -> ConfigDigest {
    let mut h = Sha256::new();
    h.update(b"dpdist round config v1\0");
    h.update(p.round.0.to_le_bytes());
    h.update((p.n_clients as u64).to_le_bytes());
    h.update(p.n_nodes.to_le_bytes());
    h.update((p.max_dropped as u64).to_le_bytes());
    h.update((p.dim as u64).to_le_bytes());
    h.update(p.bound.to_bits().to_le_bytes());
    h.update([match p.mode {
        ShareMode::Full => 1u8,
        ShareMode::Seed => 2,
    }]);
    match p.noise_sigma_total {
        None => h.update([0u8]),
        Some(sigma) => {
            h.update([1u8]);
            h.update(sigma.to_bits().to_le_bytes());
        }
    }
    h.update(frac_bits.to_le_bytes());
    let full = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    ConfigDigest(out)
}

/// The bound t (value units) on |Σ_i η_ij| over N clients each adding discrete Gaussian noise of
/// parameter σ_client, for every coordinate j < d at once, failing with probability
/// <= p = 2^-64 ([`NOISE_TAIL_FAILURE_PROBABILITY`]):
///
/// ```text
///   t = σ_client·sqrt(N)·sqrt(2·ln(2d/p))
/// ```
///
/// Proof sketch: N_Z(0, σ²) is σ²-subgaussian (Canonne–Kamath–Steinke 2020, Cor. 9), so a sum
/// of N independent ones is Nσ²-subgaussian and P(|S| >= t) <= 2·exp(−t²/(2Nσ²)); a union bound
/// over d coordinates gives d·2·exp(−t²/(2Nσ²)) = p at the t above. Clients that drop out or
/// collude only remove terms. (For d = 1 this is 9.5σ√N; for d = 10^6, 10.9σ√N.)
pub fn noise_tail(sigma_client: f64, n_clients: usize, dim: usize) -> f64 {
    let ln_2d_over_p = (2.0 * dim as f64).ln() + 64.0 * std::f64::consts::LN_2;
    sigma_client * (n_clients as f64).sqrt() * (2.0 * ln_2d_over_p).sqrt()
}

fn pow2(f: u32) -> f64 {
    (1u64 << f) as f64
}

fn check_range(name: &'static str, value: usize, lo: usize, hi: usize) -> Result<()> {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name,
            value: value as f64,
            requirement: match name {
                "n_nodes" => "in 2..=65535",
                "dim" => "in 1..=2^32",
                _ => "in 1..=2^32",
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn params(n: usize, m: u16, t: usize, d: usize) -> RoundParams {
        RoundParams {
            round: RoundId(1),
            n_clients: n,
            n_nodes: m,
            max_dropped: t,
            dim: d,
            bound: 1.0,
            mode: ShareMode::Seed,
            noise_sigma_total: None,
            frac_bits: None,
        }
    }

    #[test]
    fn rejects_out_of_range_parameters() {
        for p in [
            params(0, 2, 0, 1),
            params(5, 1, 0, 1),
            params(5, 2, 5, 1),
            params(5, 2, 0, 0),
            RoundParams {
                bound: f64::NAN,
                ..params(5, 2, 0, 1)
            },
            RoundParams {
                frac_bits: Some(63),
                ..params(5, 2, 0, 1)
            },
            // 2^62 clients' worth of precision is not available at f = 62 with N = 5.
            RoundParams {
                frac_bits: Some(62),
                ..params(5, 2, 0, 1)
            },
        ] {
            assert!(RoundConfig::new(&p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn digest_binds_every_parameter() {
        let base = RoundConfig::new(&params(5, 2, 1, 3)).unwrap();
        assert_eq!(
            RoundConfig::new(&params(5, 2, 1, 3)).unwrap().digest(),
            base.digest()
        );
        // Asking for the precision the round picks anyway is the same round.
        let same_f = RoundParams {
            frac_bits: Some(base.codec().frac_bits()),
            ..params(5, 2, 1, 3)
        };
        assert_eq!(RoundConfig::new(&same_f).unwrap().digest(), base.digest());
        let others = [
            RoundParams {
                round: RoundId(2),
                ..params(5, 2, 1, 3)
            },
            params(6, 2, 1, 3),
            params(5, 3, 1, 3),
            params(5, 2, 0, 3),
            params(5, 2, 1, 4),
            RoundParams {
                bound: 2.0,
                ..params(5, 2, 1, 3)
            },
            RoundParams {
                mode: ShareMode::Full,
                ..params(5, 2, 1, 3)
            },
            RoundParams {
                noise_sigma_total: Some(1.0),
                ..params(5, 2, 1, 3)
            },
            RoundParams {
                frac_bits: Some(base.codec().frac_bits() - 1),
                ..params(5, 2, 1, 3)
            },
        ];
        for p in others {
            assert_ne!(
                RoundConfig::new(&p).unwrap().digest(),
                base.digest(),
                "{p:?}"
            );
        }
    }

    #[test]
    fn noise_tail_matches_hand_computation() {
        // d = 1, N = 100, σ = 0.5: t = 0.5·10·sqrt(2·(ln 2 + 64 ln 2)) = 5·sqrt(130 ln 2)
        // = 5·sqrt(90.1090) = 5·9.49258 = 47.4629.
        assert!((noise_tail(0.5, 100, 1) - 47.4629).abs() < 1e-3);
        // p = 2^-64 written out.
        assert_eq!(NOISE_TAIL_FAILURE_PROBABILITY, 2f64.powi(-64));
    }

    #[test]
    fn noisy_config_uses_distributed_sigma_and_reserves_the_tail() {
        let p = RoundParams {
            noise_sigma_total: Some(3.0),
            ..params(10, 3, 1, 4)
        };
        let c = RoundConfig::new(&p).unwrap();
        let noise = c.noise().unwrap();
        // σ_client = 3/sqrt(10 − 1 − 1) = 3/sqrt(8) = 1.0606602.
        assert!((noise.sigma_client - 1.060_660_2).abs() < 1e-7);
        assert_eq!(
            noise.sigma_client_units,
            noise.sigma_client * c.codec().scale()
        );
        assert!(noise.sigma_client_units <= MAX_SCALE_UNITS);
        assert!(c.codec().holds_sum(10, noise.tail));
        assert_eq!(noise.kls_tau, 0.0); // σ in units is astronomically above 4
        // N − T − 1 = 0: refused by the calibration; T = N: refused outright.
        let p = RoundParams {
            noise_sigma_total: Some(3.0),
            ..params(10, 3, 9, 4)
        };
        assert!(matches!(RoundConfig::new(&p), Err(Error::Noise(_))));
        let p = RoundParams {
            noise_sigma_total: Some(3.0),
            ..params(10, 3, 10, 4)
        };
        assert!(matches!(
            RoundConfig::new(&p),
            Err(Error::InvalidParameter { .. })
        ));
        // N − T − 1 = 1 is the smallest accepted.
        let p = RoundParams {
            noise_sigma_total: Some(3.0),
            ..params(10, 3, 8, 4)
        };
        assert!(RoundConfig::new(&p).is_ok());
    }

    #[test]
    fn large_sigma_lowers_the_precision_into_the_sampler_range() {
        // σ_client = 2^20/sqrt(1) with 3 clients, T = 1: σ·2^f <= 2^52 forces f <= 32.
        let p = RoundParams {
            noise_sigma_total: Some(1048576.0),
            ..params(3, 2, 1, 1)
        };
        let c = RoundConfig::new(&p).unwrap();
        assert_eq!(c.codec().frac_bits(), 32);
    }
}
