//! DCA paper Alg. 2 end to end, in any of the three settings:
//!
//! 1. every client clips its record to the public assumed bounds (c_j, c_y);
//! 2. DP marginal std round (share `std_share` of the budget) → σ̂_j, σ̂_y;
//! 3. threshold search on auxiliary data (free) → B_j = ω_x σ̂_j, B_y = ω_y σ̂_y;
//! 4. statistics round with the projected data and the rest of the budget → posterior.
//!
//! Without projection, step 4 runs at the assumed bounds with the whole budget; with public
//! standard deviations ([`StdSource::Public`]) step 2 is skipped and step 4 gets the whole budget.
//!
//! **Budget split and accounting.** Gaussian: the total (ε, δ) is turned into the largest zCDP ρ
//! with ρ + 2 sqrt(ρ ln(1/δ)) ≤ ε; the std round gets `std_share`·ρ and the statistics round the
//! rest; zCDP composes by adding ρ and dp-noise's accountant converts the sum back to (ε, δ). This
//! is the one accounting that also covers DCA's sum of discrete Gaussians (KLS 2021), so TA and
//! DDP use the same calibration and differ only in who adds the noise (the pipeline's accountant
//! is therefore a [`GaussianComposition::Zcdp`] one). Laplace: the std round gets
//! `std_share`·ε and the statistics round (1 − `std_share`)·ε; basic composition. The default
//! share is 0.1: with d + 1 released squares the std round only has to land the right order of
//! magnitude (the threshold grid spans a factor 20), while the statistics carry the model.
//! [`Fit::spent`] is what the accountant actually charged.
//!
//! **Where the DCA rounds run.** [`fit`] runs them in this process; [`fit_via`] hands both rounds
//! to a [`DcaTransport`] (e.g. dca-service's compute nodes and aggregator over HTTPS) and does
//! everything else — budget split, threshold search, posterior — exactly as [`fit`], so with the
//! same fixed seed both release the same statistics bit for bit.

use dp_noise::PrivacyLoss;
use dp_noise::accountant::{Accountant, GaussianComposition};
use dp_noise::rng::RngSource;
use projection::holders::{Grouping, Holders};
use projection::marginal_std::{
    SquaresRule, StdBudget, StdEstimate, StdMode, StdRound, dp_marginal_std_held,
};
use projection::release::{Aggregation, DcaTransport, InProcess, ReleaseContext};
use projection::search::{SearchConfig, ThresholdChoice};
use rand_core::RngCore;

use crate::clipping::{ClippedShare, release_clipped_share_held};
use crate::contribution::Contribution;
use crate::error::{Error, Result, check_xy};
use crate::fit_noise::released_stats_noise;
use crate::posterior::{Posterior, Prior, noise_ridge, posterior, posterior_ridged};
use crate::sensitivity::rho_from_budget;
use crate::ssp::{Mechanism, RoundBudget, StatisticsRule, release_stats_held};
use crate::stats::SuffStats;
use crate::threshold::{ErrorMeasure, SearchTarget, search_thresholds_for};

/// Where the standard deviations that scale the thresholds come from.
#[derive(Clone, Debug, PartialEq)]
pub enum StdSource {
    /// The DP marginal-std round of Alg. 2 step 2 (costs `std_share` of the budget).
    DpRound,
    /// Values that are public by construction, e.g. after the robust LR protocol's preprocessing
    /// (unit-norm rows have pooled second moment exactly 1/d; a standardised y has σ = 1). No
    /// privacy is spent on them; they must not be computed from the private data.
    Public {
        /// σ of each x dimension.
        x: Vec<f64>,
        /// σ of y.
        y: f64,
    },
}

/// Settings of the projection steps 2–3.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectionConfig {
    /// DP std round or public standard deviations.
    pub std_source: StdSource,
    /// Fraction of the budget spent on the std round, in (0, 1).
    pub std_share: f64,
    /// One pooled σ for all x (robust LR paper; the default) or one per dimension (DCA paper).
    ///
    /// Pooled is the default because it was measured better where budgets are tight: diabetes,
    /// DCA protocol (columns scaled to a common public range), 3 seeds × 10 splits, median test
    /// MAE of TA-proj pooled vs per-dimension 24.6 vs 40.0 (ε = 0.5), 9.0 vs 14.0 (1),
    /// 2.4 vs 4.6 (2), but 2.26 vs 1.68 at ε = 5, where the d + 1 separate estimates are precise
    /// enough for the per-column scales to pay off. After scaling every column to the same public
    /// range, one σ loses little; docs/src/results/distributed-blr.md has the numbers and
    /// the command. Those were measured before the fit's noise ridge (89bd8ff); after it, on the
    /// same protocol and seeds, per-dimension is ahead at ε ≤ 2 (TA-proj 1.89 vs 2.05 at ε = 0.5,
    /// 1.65 vs 1.96 at 1, 1.54 vs 1.72 at 2, 1.41 vs 1.39 at 5): the default is kept until that
    /// is measured beyond one data set.
    pub std_mode: StdMode,
    /// Replacement for a non-positive σ² estimate (0.5 in the DCA paper).
    pub std_floor: f64,
    /// Grids, repeats and aggregation of the search; its seed is ignored (drawn from the fit's
    /// randomness so a fixed-seed fit is reproducible).
    pub search: SearchConfig,
    /// What the search minimises.
    pub measure: ErrorMeasure,
    /// Fraction of the budget spent on releasing the shares of records the projection clipped
    /// ([`Fit::clipped`]), in [0, 1); 0 (the default) does not release them. The intervals of
    /// every posterior are for the regression of the clipped records, so an analyst who reads
    /// them as the raw data's needs these shares; std share + this share < 1.
    pub clipped_share_budget: f64,
}

impl Default for ProjectionConfig {
    fn default() -> Self {
        ProjectionConfig {
            std_source: StdSource::DpRound,
            std_share: 0.1,
            std_mode: StdMode::PooledX,
            std_floor: 0.5,
            search: SearchConfig::dca(0),
            measure: ErrorMeasure::Mae,
            clipped_share_budget: 0.0,
        }
    }
}

/// A private fit's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct FitConfig {
    /// Trusted aggregator, DCA, or input perturbation.
    pub aggregation: Aggregation,
    /// Gaussian (ε, δ) or Laplace ε-DP.
    pub mechanism: Mechanism,
    /// Total privacy budget of the fit (δ is ignored by Laplace).
    pub budget: PrivacyLoss,
    /// Public assumed bounds c_j of the x dimensions.
    pub assumed_x: Vec<f64>,
    /// Public assumed bound c_y of y.
    pub assumed_y: f64,
    /// Projection (Alg. 2) or none.
    pub projection: Option<ProjectionConfig>,
    /// Fixed precisions of the model.
    pub prior: Prior,
    /// Release Σy² too (for the Gamma-prior variant).
    pub with_yy: bool,
}

/// The result of a private fit.
#[derive(Clone, Debug)]
pub struct Fit {
    /// Posterior of the coefficients from the released statistics, ridged by [`Fit::ridge`].
    pub posterior: Posterior,
    /// The ridge added to the released nxx: [`noise_ridge`] of the release's planned noise
    /// (public), so that directions the noise can hide are shrunk, not blown up.
    pub ridge: f64,
    /// The released (noisy) statistics.
    pub stats: SuffStats,
    /// Bounds used in the statistics round.
    pub bounds_x: Vec<f64>,
    /// Bound of y used in the statistics round.
    pub bound_y: f64,
    /// The DP std estimates (with projection and [`StdSource::DpRound`]).
    pub std: Option<StdEstimate>,
    /// The chosen multipliers (with projection).
    pub thresholds: Option<ThresholdChoice>,
    /// The DP shares of records whose y, or some x, the bounds clipped (with projection and a
    /// positive [`ProjectionConfig::clipped_share_budget`]): the posterior describes those
    /// records clipped, so these say how far that is from the raw data.
    pub clipped: Option<ClippedShare>,
    /// The privacy the accountant charged.
    pub spent: PrivacyLoss,
}

/// The non-private posterior (baseline NP).
pub fn fit_non_private(
    x: &[f64],
    y: &[f64],
    n: usize,
    d: usize,
    prior: Prior,
) -> Result<Posterior> {
    posterior(&SuffStats::compute(x, y, n, d)?, prior)
}

/// Runs Alg. 2 (or plain SSP without projection) on raw data `x` (row-major `n × d`), `y`.
pub fn fit(
    x: &[f64],
    y: &[f64],
    n: usize,
    d: usize,
    config: &FitConfig,
    rng: RngSource,
) -> Result<Fit> {
    fit_via(x, y, n, d, config, rng, &mut InProcess)
}

/// [`fit`] with its DCA rounds (the std round is round 1, the statistics round 2) run by
/// `transport`; trusted-aggregator and input-perturbation fits do not use it.
pub fn fit_via(
    x: &[f64],
    y: &[f64],
    n: usize,
    d: usize,
    config: &FitConfig,
    rng: RngSource,
    transport: &mut dyn DcaTransport,
) -> Result<Fit> {
    check_xy(x, y, n, d)?;
    let holders = Holders::Here {
        x,
        y,
        d,
        grouping: Grouping::OneRowEach,
    };
    fit_held(&holders, config, rng, transport)
}

/// [`fit`] where a DCA client is a data holder with any number of rows: client i holds rows
/// `starts[i]..starts[i + 1]` and contributes the sum over them. The guarantee is per record
/// (replace-one record), as in [`fit`]; only the fixed-point grid widens with the largest group.
pub fn fit_grouped(
    x: &[f64],
    y: &[f64],
    d: usize,
    starts: &[usize],
    config: &FitConfig,
    rng: RngSource,
    transport: &mut dyn DcaTransport,
) -> Result<Fit> {
    check_xy(x, y, y.len(), d)?;
    let holders = Holders::Here {
        x,
        y,
        d,
        grouping: Grouping::Starts(starts),
    };
    fit_held(&holders, config, rng, transport)
}

/// Alg. 2 over any [`Holders`]. With rows held by remote parties (DCA only), each round hands
/// `transport` the round's [`Contribution`] as JSON and the parties compute their vectors from
/// it; everything else — budget split, threshold search, posterior — is the same code as for
/// rows held here, so with the same randomness both release the same numbers.
pub fn fit_held(
    holders: &Holders<'_>,
    config: &FitConfig,
    rng: RngSource,
    transport: &mut dyn DcaTransport,
) -> Result<Fit> {
    let d = config.assumed_x.len();
    if let Holders::Here { d: held, .. } = holders
        && *held != d
    {
        return Err(Error::LengthMismatch {
            what: "assumed x bounds (one per column)",
            expected: *held,
            got: d,
        });
    }
    holders.validate()?;
    let n = holders.records();
    config.prior.validate()?;
    config.budget.validate()?;
    // The plan above is written in zCDP (see the module docs), so the accountant composes in
    // zCDP too; exact μ-GDP would charge TA rounds less than planned and leave budget unused.
    let mut accountant = Accountant::with_composition(config.budget, GaussianComposition::Zcdp)?;
    let Budgets {
        std: std_budget,
        stats: stats_budget,
        clipped: clipped_budget,
    } = split_budget(config)?;
    let (bounds_x, bound_y, std, thresholds) = match &config.projection {
        None => (config.assumed_x.clone(), config.assumed_y, None, None),
        Some(p) => {
            let (sigma_x, sigma_y, std) = match (&p.std_source, std_budget) {
                (StdSource::Public { x: sx, y: sy }, _) => {
                    if sx.len() != d {
                        return Err(Error::LengthMismatch {
                            what: "public x stds (one per column)",
                            expected: d,
                            got: sx.len(),
                        });
                    }
                    projection::error::check_bounds(sx, "public x stds")?;
                    projection::error::check_bounds(&[*sy], "public y std")?;
                    (sx.clone(), *sy, None)
                }
                (StdSource::DpRound, Some(budget)) => {
                    let settings = StdRound {
                        assumed_x: &config.assumed_x,
                        assumed_y: config.assumed_y,
                        mode: p.std_mode,
                        floor: p.std_floor,
                        budget,
                    };
                    let ctx = ReleaseContext {
                        aggregation: config.aggregation,
                        round: 1,
                        rng: rng.derive(1),
                        accountant: &mut accountant,
                    };
                    let published = Contribution::squares(&SquaresRule {
                        assumed_x: &config.assumed_x,
                        assumed_y: config.assumed_y,
                        mode: p.std_mode,
                    })
                    .to_json();
                    let std = dp_marginal_std_held(holders, &published, &settings, ctx, transport)?;
                    (std.x.clone(), std.y, Some(std))
                }
                (StdSource::DpRound, None) => {
                    return Err(Error::MissingStdBudget);
                }
            };
            let target = SearchTarget {
                sigma_x: sigma_x.clone(),
                sigma_y,
                n,
                mechanism: config.mechanism,
                budget: stats_budget,
                aggregation: config.aggregation,
                prior: config.prior,
                measure: p.measure,
            };
            let search = SearchConfig {
                seed: rng.derive(3).try_rng()?.next_u64(),
                ..p.search.clone()
            };
            let choice = search_thresholds_for(&target, &search)?;
            let bx = sigma_x.iter().map(|s| choice.omega_x * s).collect();
            let by = choice.omega_y * sigma_y;
            (bx, by, std, Some(choice))
        }
    };
    let ctx = ReleaseContext {
        aggregation: config.aggregation,
        round: 2,
        rng: rng.derive(2),
        accountant: &mut accountant,
    };
    let rule = StatisticsRule {
        bounds_x: &bounds_x,
        bound_y,
        with_yy: config.with_yy,
    };
    let published = Contribution::statistics(&rule).to_json();
    let stats = release_stats_held(
        holders,
        &rule,
        &published,
        config.mechanism,
        stats_budget,
        ctx,
        transport,
    )?;
    let clipped = match clipped_budget {
        None => None,
        Some(budget) => {
            // Round r draws from rng.derive(r) (3 is the threshold search's), the stream a
            // job's participant derives from the round's number.
            let ctx = ReleaseContext {
                aggregation: config.aggregation,
                round: 4,
                rng: rng.derive(4),
                accountant: &mut accountant,
            };
            let published = Contribution::ClippedCounts {
                bounds_x: bounds_x.clone(),
                bound_y,
            }
            .to_json();
            Some(release_clipped_share_held(
                holders,
                &bounds_x,
                bound_y,
                &published,
                config.mechanism,
                budget,
                ctx,
                transport,
            )?)
        }
    };
    let noise = released_stats_noise(config, &bounds_x, bound_y, n)?;
    let ridge = noise_ridge(noise.xx.sd(), d);
    Ok(Fit {
        posterior: posterior_ridged(&stats, config.prior, ridge)?,
        ridge,
        stats,
        bounds_x,
        bound_y,
        std,
        thresholds,
        clipped,
        spent: accountant.spent(),
    })
}

/// The statistics round's share of the budget exactly as [`fit`] spends it, so that a threshold
/// search outside `fit` can imitate the release it will protect.
///
/// # Errors
/// As [`fit`] for an invalid `std_share`, ε or δ.
pub fn stats_round_budget(config: &FitConfig) -> Result<RoundBudget> {
    Ok(split_budget(config)?.stats)
}

/// Each round's share of the budget, as described in the module docs.
struct Budgets {
    std: Option<StdBudget>,
    stats: RoundBudget,
    clipped: Option<RoundBudget>,
}

/// Splits the budget: the std round gets `std_share`, the clipped-share round
/// `clipped_share_budget` (when positive), the statistics round the rest.
fn split_budget(config: &FitConfig) -> Result<Budgets> {
    let share = match &config.projection {
        None => None,
        Some(p) if matches!(p.std_source, StdSource::Public { .. }) => None,
        Some(p) if p.std_share > 0.0 && p.std_share < 1.0 => Some(p.std_share),
        Some(p) => {
            return Err(Error::OutOfRange {
                name: "std_share",
                value: p.std_share,
                requirement: "in (0, 1)",
            });
        }
    };
    let clipped_share = match &config.projection {
        None => None,
        Some(p) if p.clipped_share_budget == 0.0 => None,
        Some(p)
            if p.clipped_share_budget > 0.0
                && p.clipped_share_budget + share.unwrap_or(0.0) < 1.0 =>
        {
            Some(p.clipped_share_budget)
        }
        Some(p) => {
            return Err(Error::OutOfRange {
                name: "clipped_share_budget",
                value: p.clipped_share_budget,
                requirement: "in [0, 1), and below 1 − std_share",
            });
        }
    };
    let stats_share = 1.0 - share.unwrap_or(0.0) - clipped_share.unwrap_or(0.0);
    Ok(match config.mechanism {
        Mechanism::Gaussian => {
            let rho = rho_from_budget(config.budget)?;
            Budgets {
                std: share.map(|s| StdBudget::Gaussian { rho: s * rho }),
                stats: RoundBudget::Rho(stats_share * rho),
                clipped: clipped_share.map(|s| RoundBudget::Rho(s * rho)),
            }
        }
        Mechanism::Laplace { .. } => {
            let eps = config.budget.epsilon;
            if eps.is_nan() || eps <= 0.0 {
                return Err(Error::OutOfRange {
                    name: "ε",
                    value: eps,
                    requirement: "> 0",
                });
            }
            Budgets {
                std: share.map(|s| StdBudget::Laplace { epsilon: s * eps }),
                stats: RoundBudget::Epsilon(stats_share * eps),
                clipped: clipped_share.map(|s| RoundBudget::Epsilon(s * eps)),
            }
        }
    })
}
