//! Sufficient-statistics perturbation (SSP): every client projects its record into the public
//! bounds, forms its statistics vector `[x_j x_k (j ≤ k), x_j y, (y²)]`, and the noisy sum of
//! those vectors is released by a trusted aggregator, through DCA, or by input perturbation
//! ([`projection::release`]). Calibration and the sensitivity proofs are in [`crate::sensitivity`].

use projection::clip::clip;
use projection::release::{DcaTransport, InProcess, Noise, ReleaseContext, release_sum_via};

use crate::error::{Error, Result, check_xy};
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
    let noise = stats_noise(bounds_x, bound_y, with_yy, mechanism, budget)?;
    let bound = stats_entry_bound(bounds_x, bound_y, with_yy)?;
    let dim = SuffStats::flat_len(d, with_yy);
    let mut values = vec![0.0; n * dim];
    let mut clipped = vec![0.0; d];
    for ((row, &t), out) in x.chunks_exact(d).zip(y).zip(values.chunks_exact_mut(dim)) {
        clipped
            .iter_mut()
            .zip(row)
            .zip(bounds_x)
            .for_each(|((c, v), b)| *c = clip(*v, *b));
        SuffStats::record_into(&clipped, clip(t, bound_y), with_yy, out)?;
    }
    let released = release_sum_via(&values, n, dim, bound, &noise, ctx, transport)?;
    SuffStats::from_flat(&released.sum, d, n, with_yy)
}
