//! How much of the data the projection clipped, released with differential privacy.
//!
//! Every posterior of this crate — naive, noise-aware, Gamma-prior — is the posterior of the
//! regression **of the clipped records**: the statistics round releases Σ clip(x) clip(x)ᵀ and
//! Σ clip(x) clip(y), so its intervals cover the coefficients of clipped y on clipped x, which
//! differ from the unclipped regression's whenever the bounds bite (clipping y at ω_y·σ_y
//! shrinks every coefficient towards 0). The analyst cannot see how often the bounds bit
//! without looking at the data; [`dp_clipped_share`] releases it at a small, separate cost, to
//! be reported next to the intervals. [`ClippedCountsRule`] is the same two counts as a DCA
//! round's rule (every data holder counts its own records), which the pipeline runs when
//! [`crate::ProjectionConfig::clipped_share_budget`] is positive ([`release_clipped_share_held`]).
//!
//! Guarantee of [`dp_clipped_share`] (ε-DP, replace-one neighbours, trusted aggregator): the two counts — records with
//! |y| > B_y, records with some |x_j| > B_j — each change by at most 1 when one record is
//! replaced, so the pair has L1 sensitivity 2, and Laplace noise of scale 2/ε on each count is
//! ε-DP (Dwork et al. 2006). The noise is the exact discrete Laplace on the integers
//! (P(k) ∝ e^(−|k|/b), Canonne, Kamath & Steinke 2020), whose integer sums leave no low-order
//! floating-point bits to attack; it is ε-DP for integer counts at the same scale. The shares are the noisy counts over the public n, clamped to [0, 1]
//! (post-processing). It composes with the fit's own budget (basic composition: add the ε).
//!
//! Guarantee of the pipeline's round (ρ-zCDP, replace-one neighbours, any aggregation): the
//! record's two indicators each change by at most 1, so the pair's L2 sensitivity is √2 and
//! Gaussian noise of sd √2/√(2ρ) = 1/√ρ on each count is ρ-zCDP (Bun & Steinke 2016, Prop. 1.6);
//! through DCA that total noise is split over the clients like every other round's. Laplace
//! fits release the counts with Laplace noise of scale 2/ε (L1 sensitivity 2).

use dp_noise::PrivacyLoss;
use dp_noise::accountant::RoundCost;
use dp_noise::discrete::DiscreteLaplace;
use dp_noise::rng::RngSource;
use projection::holders::{ClientRule, Holders};
use projection::release::{DcaTransport, Noise, ReleaseContext, release_held};

use crate::error::{Error, Result, check_xy};
use crate::ssp::{Mechanism, RoundBudget};

/// The released shares of clipped records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClippedShare {
    /// Share of records whose y exceeded its bound (noisy, clamped to [0, 1]).
    pub y: f64,
    /// Share of records with at least one x coordinate beyond its bound (noisy, clamped).
    pub x: f64,
    /// Standard deviation of the noise on each share (the count's noise sd over n), before
    /// the clamp: the ± an analyst should read the shares with.
    pub share_sd: f64,
    /// What the release cost.
    pub cost: RoundCost,
}

/// Releases the shares of the n records (row-major `x`, `y`) that the bounds `bounds_x`,
/// `bound_y` clip, with Laplace noise at budget `epsilon` (see the module docs).
pub fn dp_clipped_share(
    x: &[f64],
    y: &[f64],
    n: usize,
    bounds_x: &[f64],
    bound_y: f64,
    epsilon: f64,
    rng: RngSource,
) -> Result<ClippedShare> {
    let d = bounds_x.len();
    check_xy(x, y, n, d)?;
    projection::error::check_bounds(bounds_x, "clipping bounds of x")?;
    projection::error::check_bounds(&[bound_y], "clipping bound of y")?;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::OutOfRange {
            name: "ε of the clipped-share release",
            value: epsilon,
            requirement: "finite and > 0",
        });
    }
    let count_y = y.iter().filter(|v| v.abs() > bound_y).count();
    let count_x = x
        .chunks_exact(d)
        .filter(|row| row.iter().zip(bounds_x).any(|(v, b)| v.abs() > *b))
        .count();
    let noise_scale = 2.0 / epsilon;
    let mut noise = [0i64; 2];
    DiscreteLaplace::new(noise_scale)?.fill(&mut rng.try_rng()?, &mut noise);
    let share = |count: usize, e: i64| ((count as f64 + e as f64) / n as f64).clamp(0.0, 1.0);
    // Discrete Laplace with P(k) ∝ p^|k|, p = e^(−1/b): Var = 2p/(1 − p)².
    let p = (-1.0 / noise_scale).exp();
    Ok(ClippedShare {
        y: share(count_y, noise[0]),
        x: share(count_x, noise[1]),
        share_sd: (2.0 * p).sqrt() / (1.0 - p) / n as f64,
        cost: RoundCost::Approx(PrivacyLoss {
            epsilon,
            delta: 0.0,
        }),
    })
}

/// What a record contributes to the clipped-count round: `[1 if |y| > B_y, 1 if some
/// |x_j| > B_j]`, from its raw values (the records the statistics round's projection changes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClippedCountsRule<'a> {
    /// Projection bounds B_j.
    pub bounds_x: &'a [f64],
    /// Projection bound of y.
    pub bound_y: f64,
}

/// L2 sensitivity of the two counts under replace-one record (each changes by at most 1).
pub const CLIPPED_COUNTS_L2_SENSITIVITY: f64 = std::f64::consts::SQRT_2;

impl ClientRule for ClippedCountsRule<'_> {
    fn dim(&self) -> usize {
        2
    }

    fn record_bound(&self) -> f64 {
        1.0
    }

    fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> projection::Result<()> {
        if x_row.len() != self.bounds_x.len() || out.len() != 2 {
            return Err(projection::Error::LengthMismatch {
                what: "record (clipped-count bounds)",
                expected: self.bounds_x.len(),
                got: x_row.len(),
            });
        }
        let x_clipped = x_row.iter().zip(self.bounds_x).any(|(v, b)| v.abs() > *b);
        out[0] = f64::from(u8::from(y.abs() > self.bound_y));
        out[1] = f64::from(u8::from(x_clipped));
        Ok(())
    }
}

/// The pipeline's clipped-share release: the shares of records whose y, or some x, the bounds
/// clip, over the records in the release, with noise for `budget` (Gaussian ρ-zCDP, or Laplace
/// ε-DP for Laplace fits; see the module docs) from wherever the rows are held.
#[allow(clippy::too_many_arguments)]
pub fn release_clipped_share_held(
    holders: &Holders<'_>,
    bounds_x: &[f64],
    bound_y: f64,
    published_rule: &str,
    mechanism: Mechanism,
    budget: RoundBudget,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<ClippedShare> {
    projection::error::check_bounds(bounds_x, "clipping bounds of x")?;
    projection::error::check_bounds(&[bound_y], "clipping bound of y")?;
    let noise = match (mechanism, budget) {
        (Mechanism::Gaussian, RoundBudget::Rho(rho)) => Noise::Gaussian {
            l2_sensitivity: CLIPPED_COUNTS_L2_SENSITIVITY,
            rho,
        },
        (Mechanism::Laplace { .. }, RoundBudget::Epsilon(epsilon)) => Noise::Laplace {
            scales: vec![2.0 / epsilon; 2],
            epsilon,
        },
        (mechanism, budget) => return Err(Error::MechanismBudgetMismatch { mechanism, budget }),
    };
    let rule = ClippedCountsRule { bounds_x, bound_y };
    let released = release_held(holders, &rule, published_rule, &noise, ctx, transport)?;
    let n = holders.records_in(released.included.as_ref()) as f64;
    let share = |count: f64| (count / n).clamp(0.0, 1.0);
    Ok(ClippedShare {
        y: share(released.sum[0]),
        x: share(released.sum[1]),
        share_sd: released.noise_sd[0] / n,
        cost: released.cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four records, d = 2, bounds (1, 2) and 3: y clipped in rows 1 and 3 (|4|, |−5| > 3); x
    /// clipped in row 0 (|1.5| > 1) and in both coordinates of row 3 (|−1.2| > 1, |−2.5| > 2),
    /// which counts once.
    fn records() -> (Vec<f64>, Vec<f64>) {
        (
            vec![1.5, 0.0, 0.5, 1.0, -1.0, 2.0, -1.2, -2.5],
            vec![1.0, 4.0, -3.0, -5.0],
        )
    }

    #[test]
    fn the_counts_are_exact_when_the_noise_is_negligible() {
        let (x, y) = records();
        // ε = 1e9: noise scale 2e-9, so an integer draw other than 0 has probability
        // ≈ 2e^(−5e8): the shares are exactly 2/4 and 2/4.
        let s = dp_clipped_share(
            &x,
            &y,
            4,
            &[1.0, 2.0],
            3.0,
            1e9,
            RngSource::InsecureFixedSeed(1),
        )
        .unwrap();
        assert_eq!((s.y, s.x), (0.5, 0.5), "{s:?}");
    }

    #[test]
    fn the_noise_is_laplace_two_over_epsilon_and_the_cost_is_epsilon() {
        let (x, y) = records();
        let s = dp_clipped_share(
            &x,
            &y,
            4,
            &[1.0, 2.0],
            3.0,
            0.5,
            RngSource::InsecureFixedSeed(2),
        )
        .unwrap();
        // Two counts of sensitivity 1 each: L1 sensitivity 2, scale b = 2/0.5 = 4; the
        // discrete Laplace's sd at p = e^(−1/4) = 0.778801 is sqrt(2p)/(1 − p) = 5.6422, over
        // n = 4 records 1.41055.
        assert!((s.share_sd - 1.41055).abs() < 1e-4, "{}", s.share_sd);
        assert_eq!(
            s.cost,
            RoundCost::Approx(PrivacyLoss {
                epsilon: 0.5,
                delta: 0.0
            })
        );
        assert!((0.0..=1.0).contains(&s.x) && (0.0..=1.0).contains(&s.y));
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert!(
                dp_clipped_share(
                    &x,
                    &y,
                    4,
                    &[1.0, 2.0],
                    3.0,
                    bad,
                    RngSource::InsecureFixedSeed(2)
                )
                .is_err()
            );
        }
        assert!(
            dp_clipped_share(&x, &y, 4, &[1.0], 3.0, 1.0, RngSource::InsecureFixedSeed(2)).is_err()
        );
    }

    /// The noise on a count is discrete Laplace of scale 2/ε: at ε = 0.5 (b = 4, p = e^(−1/4))
    /// E|K| = 2p/(1 − p²) = 3.958 by hand and sd|K| ≈ 4.02, so the mean of 4000 draws lies within
    /// 0.4 (6.3 s.e.) of 3.958; scale 2 or 8 would give 1.92 or 7.98. 500 of 1000 y values are
    /// clipped, far from the clamp at 0 and 1.
    #[test]
    fn the_count_noise_has_scale_two_over_epsilon() {
        let y: Vec<f64> = (0..1000)
            .map(|i| if i % 2 == 0 { 5.0 } else { 0.0 })
            .collect();
        let x = vec![0.0; 1000];
        let mut total = 0.0;
        for seed in 0..4000 {
            let s = dp_clipped_share(
                &x,
                &y,
                1000,
                &[1.0],
                3.0,
                0.5,
                RngSource::InsecureFixedSeed(seed),
            )
            .unwrap();
            total += (s.y * 1000.0 - 500.0).abs();
        }
        let mean = total / 4000.0;
        assert!((mean - 3.958).abs() < 0.4, "{mean}");
    }
}
