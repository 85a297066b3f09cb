//! How much of the data the projection clipped, released with differential privacy.
//!
//! Every posterior of this crate — naive, noise-aware, Gamma-prior — is the posterior of the
//! regression **of the clipped records**: the statistics round releases Σ clip(x) clip(x)ᵀ and
//! Σ clip(x) clip(y), so its intervals cover the coefficients of clipped y on clipped x, which
//! differ from the unclipped regression's whenever the bounds bite (clipping y at ω_y·σ_y
//! shrinks every coefficient towards 0). The analyst cannot see how often the bounds bit
//! without looking at the data; [`dp_clipped_share`] releases it at a small, separate cost, to
//! be reported next to the intervals.
//!
//! Guarantee (ε-DP, replace-one neighbours, trusted aggregator): the two counts — records with
//! |y| > B_y, records with some |x_j| > B_j — each change by at most 1 when one record is
//! replaced, so the pair has L1 sensitivity 2, and Laplace noise of scale 2/ε on each count is
//! ε-DP (Dwork et al. 2006). The noise is the exact discrete Laplace on the integers
//! (P(k) ∝ e^(−|k|/b), Canonne, Kamath & Steinke 2020), whose integer sums leave no low-order
//! floating-point bits to attack; it is ε-DP for integer counts at the same scale. The shares are the noisy counts over the public n, clamped to [0, 1]
//! (post-processing). It composes with the fit's own budget (basic composition: add the ε).

use dp_noise::PrivacyLoss;
use dp_noise::discrete::DiscreteLaplace;
use dp_noise::rng::RngSource;

use crate::error::{Error, Result, check_xy};

/// The released shares of clipped records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClippedShare {
    /// Share of records whose y exceeded its bound (noisy, clamped to [0, 1]).
    pub y: f64,
    /// Share of records with at least one x coordinate beyond its bound (noisy, clamped).
    pub x: f64,
    /// Scale 2/ε of the discrete Laplace noise on each count.
    pub noise_scale: f64,
    /// What the release cost: (ε, 0).
    pub privacy: PrivacyLoss,
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
    Ok(ClippedShare {
        y: share(count_y, noise[0]),
        x: share(count_x, noise[1]),
        noise_scale,
        privacy: PrivacyLoss {
            epsilon,
            delta: 0.0,
        },
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
        // Two counts of sensitivity 1 each: L1 sensitivity 2, scale 2/0.5 = 4.
        assert_eq!(s.noise_scale, 4.0);
        assert_eq!(
            s.privacy,
            PrivacyLoss {
                epsilon: 0.5,
                delta: 0.0
            }
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
