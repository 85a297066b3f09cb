//! Sufficient-statistics perturbation (SSP): every client projects its record into the public
//! bounds, forms its statistics vector `[x_j x_k (j ≤ k), x_j y, (y²)]`, and the noisy sum of
//! those vectors is released by a trusted aggregator, through DCA, or by input perturbation
//! ([`projection::release`]). Calibration and the sensitivity proofs are in [`crate::sensitivity`].

use projection::clip::clip;
use projection::holders::{ClientRule, Grouping, Holders};
use projection::release::{DcaTransport, InProcess, Noise, ReleaseContext, release_held};

use crate::error::{Error, Result, check_xy};
use crate::silo::RecordSum;
use crate::sensitivity::{laplace_scales, stats_entry_bound, stats_l2_sensitivity};
use crate::stats::SuffStats;

/// The noise mechanism of the statistics release.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mechanism {
    /// Gaussian noise, ρ-zCDP, reported as (ε, δ) (DCA paper).
    Gaussian,
    /// Laplace noise, pure ε-DP, with budget split (p₁, p₂, p₃) over Σxxᵀ, Σxy, Σy² (robust LR
    /// paper; the paper's optimum was (0.6, 0.35, 0.05)).
    Laplace {
        /// (p₁, p₂, p₃), positive, summing to one.
        split: [f64; 3],
    },
}

/// The budget of one statistics release in the mechanism's own currency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RoundBudget {
    /// zCDP ρ (Gaussian).
    Rho(f64),
    /// Pure ε (Laplace).
    Epsilon(f64),
}

/// The noise vector description for bounds `bounds_x`, `bound_y`.
pub fn stats_noise(
    bounds_x: &[f64],
    bound_y: f64,
    with_yy: bool,
    mechanism: Mechanism,
    budget: RoundBudget,
) -> Result<Noise> {
    match (mechanism, budget) {
        (Mechanism::Gaussian, RoundBudget::Rho(rho)) => Ok(Noise::Gaussian {
            l2_sensitivity: stats_l2_sensitivity(bounds_x, bound_y, with_yy)?,
            rho,
        }),
        (Mechanism::Laplace { split }, RoundBudget::Epsilon(epsilon)) => Ok(Noise::Laplace {
            scales: laplace_scales(bounds_x, bound_y, epsilon, split, with_yy)?,
            epsilon,
        }),
        (mechanism, budget) => Err(Error::MechanismBudgetMismatch { mechanism, budget }),
    }
}

/// Projects every record into `[-bounds_x[j], bounds_x[j]]` × `[-bound_y, bound_y]` and releases
/// the noisy sum of the clients' statistics vectors. `x` is row-major `n × d` (raw data).
#[allow(clippy::too_many_arguments)]
pub fn release_stats(
    x: &[f64],
    y: &[f64],
    n: usize,
    bounds_x: &[f64],
    bound_y: f64,
    with_yy: bool,
    mechanism: Mechanism,
    budget: RoundBudget,
    ctx: ReleaseContext<'_>,
) -> Result<SuffStats> {
    release_stats_via(
        x,
        y,
        n,
        bounds_x,
        bound_y,
        with_yy,
        mechanism,
        budget,
        ctx,
        &mut InProcess,
    )
}

/// [`release_stats`] with a DCA round run by `transport`.
#[allow(clippy::too_many_arguments)]
pub fn release_stats_via(
    x: &[f64],
    y: &[f64],
    n: usize,
    bounds_x: &[f64],
    bound_y: f64,
    with_yy: bool,
    mechanism: Mechanism,
    budget: RoundBudget,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<SuffStats> {
    let d = bounds_x.len();
    check_xy(x, y, n, d)?;
    let holders = Holders::Here {
        x,
        y,
        d,
        grouping: Grouping::OneRowEach,
    };
    let rule = StatisticsRule {
        bounds_x,
        bound_y,
        with_yy,
    };
    release_stats_held(&holders, &rule, "", mechanism, budget, ctx, transport)
}

/// What each record contributes to the statistics round: the record projected into
/// `[-bounds_x[j], bounds_x[j]]` × `[-bound_y, bound_y]`, then its statistics vector.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StatisticsRule<'a> {
    /// Projection bounds of x.
    pub bounds_x: &'a [f64],
    /// Projection bound of y.
    pub bound_y: f64,
    /// Σy² released too.
    pub with_yy: bool,
}

impl ClientRule for StatisticsRule<'_> {
    fn dim(&self) -> usize {
        SuffStats::flat_len(self.bounds_x.len(), self.with_yy)
    }

    fn record_bound(&self) -> f64 {
        // Infinite (so refused by the release) for bounds the release's own checks refuse.
        stats_entry_bound(self.bounds_x, self.bound_y, self.with_yy).unwrap_or(f64::INFINITY)
    }

    /// Many rows of one holder in one streaming pass ([`RecordSum`]: a blocked Gram of
    /// `[x; y]`), measured 3.8× numpy's `XᵀX` at 10⁶ × 100 (docs/src/results/silo-statistics.md);
    /// its bits do not depend on threads or chunking, so a participant and the in-process
    /// pipeline with the same grouping agree exactly on the same kind of CPU.
    fn add_rows(&self, x: &[f64], y: &[f64], d: usize, sum: &mut [f64]) -> projection::Result<()> {
        let contribution = || -> Result<Vec<f64>> {
            let mut rows = RecordSum::new(d, self.with_yy, Some((self.bounds_x, self.bound_y)))?;
            rows.push_rows(x, y)?;
            Ok(rows.finish()?.0)
        };
        let flat = contribution().map_err(|e| projection::Error::Contribution(e.to_string()))?;
        if flat.len() != sum.len() {
            return Err(projection::Error::LengthMismatch {
                what: "client statistics",
                expected: sum.len(),
                got: flat.len(),
            });
        }
        sum.iter_mut().zip(&flat).for_each(|(s, v)| *s += v);
        Ok(())
    }

    fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> projection::Result<()> {
        let clipped: Vec<f64> = x_row
            .iter()
            .zip(self.bounds_x)
            .map(|(v, b)| clip(*v, *b))
            .collect();
        SuffStats::record_into(&clipped, clip(y, self.bound_y), self.with_yy, out).map_err(|_| {
            projection::Error::LengthMismatch {
                what: "record (projection bounds)",
                expected: self.bounds_x.len(),
                got: x_row.len(),
            }
        })
    }
}

/// The statistics round over any [`Holders`]: rows here, or rows kept by remote parties that
/// compute their [`StatisticsRule`] vectors from `published_rule`.
pub fn release_stats_held(
    holders: &Holders<'_>,
    rule: &StatisticsRule<'_>,
    published_rule: &str,
    mechanism: Mechanism,
    budget: RoundBudget,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<SuffStats> {
    let d = rule.bounds_x.len();
    let noise = stats_noise(rule.bounds_x, rule.bound_y, rule.with_yy, mechanism, budget)?;
    stats_entry_bound(rule.bounds_x, rule.bound_y, rule.with_yy)?;
    let released = release_held(holders, rule, published_rule, &noise, ctx, transport)?;
    let n = holders.records_in(released.included.as_ref());
    SuffStats::from_flat(&released.sum, d, n, rule.with_yy)
}
