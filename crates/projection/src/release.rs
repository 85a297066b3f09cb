//! Noisy release of a sum Σ_i z_i of per-client vectors, in the three settings the papers compare:
//! a trusted aggregator (TA) that adds noise once, DCA (each client adds a share of discrete
//! Gaussian noise and M compute nodes sum secret shares; DCA paper Alg. 1, Thm 1) and input
//! perturbation (each client adds the full noise to its own vector).
//!
//! Privacy (replace-one neighbours, n public): the caller states the sensitivity of the sum, i.e.
//! the largest change of Σ_i z_i when one client's vector is replaced, which for a sum is the
//! largest ‖z − z′‖ over two admissible client vectors; every entry must satisfy |z_ij| ≤ `bound`
//! (checked — a violating input is rejected, never released).
//!
//! - Gaussian, TA: σ = Δ₂/sqrt(2ρ) gives ρ-zCDP (Bun & Steinke 2016, Prop. 1.6).
//! - Gaussian, DCA: σ_total as for TA, each client adds N_ℤ(0, σ_client²) in grid units with
//!   σ_client = σ_total/sqrt(N − T − 1); the sum of the N − T − 1 honest clients' noise makes the
//!   release ρ′-zCDP by Kairouz–Liu–Steinke 2021 Thm 1 (ρ′ = ρ up to their τ term, which
//!   underflows to 0 at our σ in grid units). The sensitivity in grid units is Δ₂·2^f + sqrt(dim)
//!   (encoding rounds each coordinate by at most ½ unit, so two encodings differ by at most one
//!   extra unit per coordinate). The charged cost is that ρ′.
//! - Gaussian, input perturbation: every client adds N(0, σ²) with the TA σ to its own vector, so
//!   each output alone is ρ-zCDP for its record and the sum is too (records are disjoint).
//! - Laplace (TA or input perturbation): the caller passes per-coordinate scales b_k already
//!   calibrated so that Σ_k Δ_k / b_k ≤ ε (Δ_k the coordinate's own sensitivity); the cost is ε.
//!   DCA supports only Gaussian noise (sums of discrete Laplace are not Laplace).
//!
//! The cost is charged to the caller's accountant *before* anything is released; a release that
//! would exceed the budget fails with the accountant's error and releases nothing.
//!
//! Where a DCA round physically runs is a [`DcaTransport`]: [`InProcess`] (`simulate_round_with`,
//! what [`release_sum`] uses) or any other implementation, e.g. dca-service's compute nodes and
//! aggregator over HTTPS ([`release_sum_via`]). The round's configuration, noise and charge are
//! planned here either way, so both transports release the same numbers from the same randomness.

use dp_noise::accountant::{Accountant, RoundCost};
use dp_noise::calibrate::distributed_sigma;
use dp_noise::continuous::{fill_gaussian, fill_laplace};
use dp_noise::discrete::distributed_zcdp_rho;
use dp_noise::rng::RngSource;
pub use fixedpoint_shares::{ClientVectors, DcaRound, DcaTransport, InProcess};
use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};

use crate::error::{Error, Result, check_matrix};
use crate::holders::{ClientRule, Holders};

/// Parameters of the DCA protocol.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcaSettings {
    /// M ≥ 2 compute nodes.
    pub n_nodes: u16,
    /// T: clients that may drop out or collude (the noise is scaled for N − T − 1 honest ones).
    pub max_dropped: usize,
    /// How masks travel (seed-compressed or full vectors).
    pub mode: ShareMode,
}

impl Default for DcaSettings {
    /// M = 10 compute nodes (DCA paper's experiments), T = 0, seed-compressed shares.
    fn default() -> Self {
        DcaSettings {
            n_nodes: 10,
            max_dropped: 0,
            mode: ShareMode::Seed,
        }
    }
}

/// Who adds the noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Aggregation {
    /// A trusted aggregator sees the exact sum and adds continuous noise once.
    Trusted,
    /// DCA secure summation with distributed discrete Gaussian noise.
    Distributed(DcaSettings),
    /// Every client adds the full noise to its own vector; the sum is public.
    InputPerturbation,
}

/// The noise of one release.
#[derive(Clone, Debug, PartialEq)]
pub enum Noise {
    /// ρ-zCDP Gaussian noise for a sum of L2 sensitivity `l2_sensitivity`.
    Gaussian {
        /// Δ₂ of the sum under replace-one.
        l2_sensitivity: f64,
        /// The zCDP budget of this release.
        rho: f64,
    },
    /// ε-DP Laplace noise with per-coordinate scales calibrated by the caller.
    Laplace {
        /// Scale b_k of coordinate k.
        scales: Vec<f64>,
        /// The ε these scales were calibrated for (what the release costs).
        epsilon: f64,
    },
}

/// A released noisy sum.
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    /// Σ_i z_i + noise.
    pub sum: Vec<f64>,
    /// What the release cost (charge it to an accountant).
    pub cost: RoundCost,
    /// Standard deviation of the noise in each coordinate of `sum`.
    pub noise_sd: Vec<f64>,
    /// The clients whose vectors are in `sum` (a DCA round without some dropped clients);
    /// `None` when every client's is.
    pub included: Option<fixedpoint_shares::ClientSet>,
}

/// Gaussian σ for ρ-zCDP at L2 sensitivity Δ: Δ/sqrt(2ρ), nudged up by one part in 10¹² so that
/// rounding never lets the charged ρ exceed the allocated one.
pub fn zcdp_sigma(l2_sensitivity: f64, rho: f64) -> Result<f64> {
    crate::error::check_bounds(&[l2_sensitivity], "Gaussian noise L2 sensitivity Δ₂")?;
    crate::error::check_bounds(&[rho], "Gaussian noise zCDP ρ")?;
    Ok(l2_sensitivity / (2.0 * rho).sqrt() * (1.0 + 1e-12))
}

/// Where a release runs and who pays for it.
#[derive(Debug)]
pub struct ReleaseContext<'a> {
    /// Who adds the noise.
    pub aggregation: Aggregation,
    /// DCA round id (distinct per round).
    pub round: u64,
    /// Randomness for noise, masks and seeds.
    pub rng: RngSource,
    /// Charged before the release.
    pub accountant: &'a mut Accountant,
}

/// Releases Σ_i z_i for the row-major `n × dim` matrix `values` (row i = client i's vector).
pub fn release_sum(
    values: &[f64],
    n: usize,
    dim: usize,
    bound: f64,
    noise: &Noise,
    ctx: ReleaseContext<'_>,
) -> Result<Release> {
    release_sum_via(values, n, dim, bound, noise, ctx, &mut InProcess)
}

/// [`release_sum`] with DCA rounds run by `transport` (other settings do not use it).
pub fn release_sum_via(
    values: &[f64],
    n: usize,
    dim: usize,
    bound: f64,
    noise: &Noise,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<Release> {
    let ReleaseContext {
        aggregation,
        round,
        rng,
        accountant,
    } = ctx;
    if n == 0 {
        return Err(Error::Empty {
            what: "clients of a sum",
        });
    }
    if dim == 0 {
        return Err(Error::Empty {
            what: "dimensions of a sum",
        });
    }
    check_matrix(values, n, dim, "client values")?;
    crate::error::check_bounds(&[bound], "bound")?;
    if let Some(i) = values.iter().position(|v| v.abs() > bound) {
        return Err(Error::BoundExceeded {
            client: i / dim,
            value: values[i],
            bound,
        });
    }
    match (aggregation, noise) {
        (
            Aggregation::Distributed(dca),
            Noise::Gaussian {
                l2_sensitivity,
                rho,
            },
        ) => distributed(
            ClientVectors::Here(values),
            n,
            dim,
            bound,
            dca,
            *l2_sensitivity,
            *rho,
            round,
            rng,
            accountant,
            transport,
        ),
        (Aggregation::Distributed(_), Noise::Laplace { .. }) => Err(Error::Unsupported {
            reason: "DCA supports only Gaussian noise (a sum of Laplace shares is not Laplace)",
        }),
        (Aggregation::Trusted | Aggregation::InputPerturbation, _) => {
            let (per_coordinate, cost, gaussian) = match noise {
                Noise::Gaussian {
                    l2_sensitivity,
                    rho,
                } => {
                    let sigma = zcdp_sigma(*l2_sensitivity, *rho)?;
                    (
                        vec![sigma; dim],
                        RoundCost::gaussian(*l2_sensitivity, sigma)?,
                        true,
                    )
                }
                Noise::Laplace { scales, epsilon } => {
                    if scales.len() != dim {
                        return Err(Error::LengthMismatch {
                            what: "Laplace scales",
                            expected: dim,
                            got: scales.len(),
                        });
                    }
                    crate::error::check_bounds(scales, "Laplace scales")?;
                    (scales.clone(), RoundCost::pure(*epsilon)?, false)
                }
            };
            accountant.charge(cost)?;
            let mut rng = rng.try_rng()?;
            let mut sum = vec![0.0; dim];
            for row in values.chunks_exact(dim) {
                sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            }
            let copies = if aggregation == Aggregation::Trusted {
                1
            } else {
                n
            };
            let mut draw = vec![0.0; 1];
            for _ in 0..copies {
                for (s, scale) in sum.iter_mut().zip(&per_coordinate) {
                    if gaussian {
                        fill_gaussian(&mut rng, *scale, &mut draw)?;
                    } else {
                        fill_laplace(&mut rng, *scale, &mut draw)?;
                    }
                    *s += draw[0];
                }
            }
            let sd_factor = if gaussian {
                1.0
            } else {
                std::f64::consts::SQRT_2
            } * (copies as f64).sqrt();
            let noise_sd = per_coordinate.iter().map(|s| s * sd_factor).collect();
            Ok(Release {
                sum,
                cost,
                noise_sd,
                included: None,
            })
        }
    }
}

/// Releases Σ over clients of their vectors under `rule`, wherever the rows are: held here,
/// the vectors are computed in this process and released as [`release_sum_via`] does; held by
/// remote parties (DCA only), `transport` publishes `published_rule` (the rule in the form the
/// parties read) with the round and the parties compute their own vectors.
pub fn release_held(
    holders: &Holders<'_>,
    rule: &dyn ClientRule,
    published_rule: &str,
    noise: &Noise,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<Release> {
    holders.validate()?;
    let (n, dim) = (holders.clients(), rule.dim());
    let bound = holders.client_bound(rule);
    if let Some(values) = holders.client_vectors(rule)? {
        return release_sum_via(&values, n, dim, bound, noise, ctx, transport);
    }
    crate::error::check_bounds(&[bound], "client bound")?;
    match (ctx.aggregation, noise) {
        (
            Aggregation::Distributed(dca),
            Noise::Gaussian {
                l2_sensitivity,
                rho,
            },
        ) => distributed(
            ClientVectors::AtClients(published_rule),
            n,
            dim,
            bound,
            dca,
            *l2_sensitivity,
            *rho,
            ctx.round,
            ctx.rng,
            ctx.accountant,
            transport,
        ),
        _ => Err(Error::Unsupported {
            reason: "rows held by remote parties are released only by DCA with Gaussian noise",
        }),
    }
}

#[allow(clippy::too_many_arguments)]
fn distributed(
    values: ClientVectors<'_>,
    n: usize,
    dim: usize,
    bound: f64,
    dca: DcaSettings,
    l2_sensitivity: f64,
    rho: f64,
    round: u64,
    rng: RngSource,
    accountant: &mut Accountant,
    transport: &mut dyn DcaTransport,
) -> Result<Release> {
    let mut sigma_total = zcdp_sigma(l2_sensitivity, rho)?;
    // Fails early, with the noise library's message, when N − T − 1 < 1.
    distributed_sigma(sigma_total, n, dca.max_dropped)?;
    let honest = n - dca.max_dropped - 1;
    // The grid-unit sensitivity (rounding) and KLS's τ can push ρ′ a hair above ρ: raise σ until
    // it is not (one or two passes; each pass may lower the precision f a little).
    let mut attempt = 0;
    let (config, rho_charged) = loop {
        let config = RoundConfig::new(&RoundParams {
            round: RoundId(round),
            n_clients: n,
            n_nodes: dca.n_nodes,
            max_dropped: dca.max_dropped,
            dim,
            bound,
            mode: dca.mode,
            noise_sigma_total: Some(sigma_total),
            frac_bits: None,
        })?;
        let spec = config.noise().ok_or(Error::Unsupported {
            reason: "DCA round configured without noise",
        })?;
        let rho_charged = distributed_zcdp_rho(
            l2_sensitivity * config.codec().scale() + (dim as f64).sqrt(),
            spec.sigma_client_units,
            honest,
            dim,
        )?;
        attempt += 1;
        if rho_charged <= rho || attempt == 4 {
            break (config, rho_charged);
        }
        sigma_total *= (rho_charged / rho).sqrt() * (1.0 + 1e-12);
    };
    accountant.charge(RoundCost::zcdp(rho_charged)?)?;
    let release = transport.run_round(&DcaRound {
        config: &config,
        values,
        dropped: &[],
        l2_sensitivity,
        rng,
    })?;
    Ok(Release {
        noise_sd: vec![release.noise_sigma_released; dim],
        included: (release.n_included < release.n_clients).then_some(release.clients),
        sum: release.sum,
        cost: RoundCost::zcdp(rho_charged)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> (Vec<f64>, usize, usize) {
        let (n, dim) = (40, 3);
        (
            (0..n * dim)
                .map(|i| ((i * 7 % 13) as f64 - 6.0) / 6.0)
                .collect(),
            n,
            dim,
        )
    }

    fn exact(values: &[f64], dim: usize) -> Vec<f64> {
        let mut s = vec![0.0; dim];
        for row in values.chunks_exact(dim) {
            s.iter_mut().zip(row).for_each(|(a, v)| *a += v);
        }
        s
    }

    fn acc() -> Accountant {
        Accountant::new(dp_noise::PrivacyLoss {
            epsilon: 1e9,
            delta: 1e-5,
        })
        .unwrap()
    }

    fn ctx(aggregation: Aggregation, seed: u64, accountant: &mut Accountant) -> ReleaseContext<'_> {
        ReleaseContext {
            aggregation,
            round: 1,
            rng: RngSource::InsecureFixedSeed(seed),
            accountant,
        }
    }

    #[test]
    fn zcdp_sigma_by_hand() {
        // Δ = 3, ρ = 0.5: σ = 3 / sqrt(1) = 3.
        assert!((zcdp_sigma(3.0, 0.5).unwrap() - 3.0).abs() < 1e-9);
        // Δ = 2, ρ = 0.02: σ = 2 / sqrt(0.04) = 10.
        assert!((zcdp_sigma(2.0, 0.02).unwrap() - 10.0).abs() < 1e-9);
        assert!(zcdp_sigma(0.0, 1.0).is_err() && zcdp_sigma(1.0, f64::NAN).is_err());
    }

    #[test]
    fn every_setting_releases_near_the_exact_sum_and_charges_rho() {
        let (v, n, dim) = data();
        let truth = exact(&v, dim);
        let noise = Noise::Gaussian {
            l2_sensitivity: 1.0,
            rho: 1e6,
        };
        for agg in [
            Aggregation::Trusted,
            Aggregation::InputPerturbation,
            Aggregation::Distributed(DcaSettings {
                n_nodes: 3,
                ..DcaSettings::default()
            }),
        ] {
            let mut acc = acc();
            let r = release_sum(&v, n, dim, 1.0, &noise, ctx(agg, 3, &mut acc)).unwrap();
            // σ = 1/sqrt(2e6) ≈ 7.1e-4 per draw; input perturbation sums 40 draws (sd 4.5e-3);
            // 0.05 is more than 10 sd in every case.
            for (a, b) in r.sum.iter().zip(&truth) {
                assert!((a - b).abs() < 0.05, "{agg:?}: {a} vs {b}");
            }
            match r.cost {
                RoundCost::Zcdp { rho } => {
                    // DCA: ρ′ = (Δ·2^f + √dim)²/(2 (N−1) σ_c²) with σ_c² = σ²/(N−1): ρ(1 + O(2^-f)).
                    assert!(
                        rho <= 1e6 && (rho / 1e6 - 1.0).abs() < 1e-6,
                        "{agg:?}: ρ = {rho}"
                    );
                    assert_eq!(acc.rho_spent(), rho);
                }
                RoundCost::Gaussian { mu } => {
                    // Trusted aggregator / input perturbation: a continuous Gaussian of the
                    // planned ρ, charged as μ = Δ/σ with μ²/2 = ρ.
                    let rho = 0.5 * mu * mu;
                    assert!((rho / 1e6 - 1.0).abs() < 1e-9, "{agg:?}: μ²/2 = {rho}");
                    assert_eq!(acc.rho_spent(), rho);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn refuses_values_beyond_the_bound_and_laplace_over_dca() {
        let (v, n, dim) = data();
        let noise = Noise::Gaussian {
            l2_sensitivity: 1.0,
            rho: 1.0,
        };
        let mut a = acc();
        let err = release_sum(
            &v,
            n,
            dim,
            0.5,
            &noise,
            ctx(Aggregation::Trusted, 1, &mut a),
        )
        .unwrap_err();
        assert!(err.to_string().contains("exceeds the bound"), "{err}");
        let lap = Noise::Laplace {
            scales: vec![1.0; dim],
            epsilon: 1.0,
        };
        let dca = Aggregation::Distributed(DcaSettings::default());
        assert!(release_sum(&v, n, dim, 1.0, &lap, ctx(dca, 1, &mut a)).is_err());
        // N − T − 1 < 1.
        let tiny = Aggregation::Distributed(DcaSettings {
            n_nodes: 2,
            max_dropped: 0,
            mode: ShareMode::Seed,
        });
        assert!(release_sum(&v[..dim], 1, dim, 1.0, &noise, ctx(tiny, 1, &mut a)).is_err());
        assert!(
            release_sum(
                &v,
                n,
                dim + 1,
                1.0,
                &noise,
                ctx(Aggregation::Trusted, 1, &mut a)
            )
            .is_err()
        );
        // Nothing was charged by the refused releases.
        assert_eq!(a.rounds(), 0);
        // A release beyond the budget is refused before anything is released.
        let mut small = Accountant::new(dp_noise::PrivacyLoss {
            epsilon: 0.1,
            delta: 1e-5,
        })
        .unwrap();
        assert!(
            release_sum(
                &v,
                n,
                dim,
                1.0,
                &noise,
                ctx(Aggregation::Trusted, 1, &mut small)
            )
            .is_err()
        );
        assert_eq!(small.rounds(), 0);
    }

    #[test]
    fn laplace_cost_and_noise_sd() {
        let (v, n, dim) = data();
        let lap = Noise::Laplace {
            scales: vec![2.0; dim],
            epsilon: 0.7,
        };
        let mut a = acc();
        let r = release_sum(&v, n, dim, 1.0, &lap, ctx(Aggregation::Trusted, 1, &mut a)).unwrap();
        assert!((a.spent().epsilon - 0.7).abs() < 1e-12);
        assert_eq!(
            r.cost,
            RoundCost::Approx(dp_noise::PrivacyLoss {
                epsilon: 0.7,
                delta: 0.0
            })
        );
        // Laplace(b) has sd b·√2.
        assert!((r.noise_sd[0] - 2.0 * std::f64::consts::SQRT_2).abs() < 1e-12);
    }
}
