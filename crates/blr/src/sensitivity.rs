//! Sensitivities and noise calibration of the statistics release. Neighbouring data sets differ by
//! replacing one record (bounded DP; n is public), the convention of both papers' proofs and of
//! the marginal-std round.
//!
//! **Gaussian (DCA paper suppl. eq. 15–18, general per-dimension form).** After projection
//! |x_j| ≤ c_j and |y| ≤ c_y. Replacing record (x, y) by (x′, y′) changes the released vector by
//! (x_j x_k − x′_j x′_k)_{j≤k}, (x_j y − x′_j y′)_j [, y² − y′²]. Each coordinate is bounded on
//! its own: x_j² − x′_j² ∈ [−c_j², c_j²]; x_j x_k − x′_j x′_k ∈ [−2c_j c_k, 2c_j c_k] (j < k);
//! x_j y − x′_j y′ ∈ [−2c_j c_y, 2c_j c_y]; y² − y′² ∈ [−c_y², c_y²]. Summing the squared maxima,
//!     Δ₂² ≤ Σ_j c_j⁴ + Σ_{j<k} (2c_j c_k)² + Σ_j (2c_j c_y)² [+ c_y⁴],
//! which is eq. 18 (plus the Σy² term when the Gamma-prior variant needs it). The bound is not
//! attained jointly (the diagonal maximum needs x′_j = 0, the off-diagonal one x′_j = ∓c_j), so it
//! is conservative; the tests compare it with a brute-force maximum. (Under add/remove-one the
//! factors 2 would disappear; we never mix the two conventions.)
//!
//! **Laplace (robust LR paper Methods 4.3, Suppl. Alg. 1 and Thm 6).** Per coordinate the bound
//! used is 2c_j c_k for every entry of Σxxᵀ (diagonal included, as in the paper), 2c_j c_y for Σxy
//! and c_y² for Σy². Block b with L1 sensitivity Δ_b and budget p_b ε gets scale Δ_b/(p_b ε):
//!     b_xx = Σ_{j≤k} 2c_j c_k / (p₁ε), b_xy = Σ_j 2c_j c_y / (p₂ε), b_yy = c_y² / (p₃ε),
//! which for equal bounds B_x are the paper's d(d+1)B_x²/(p₁ε), 2dB_xB_y/(p₂ε), B_y²/(p₃ε). The
//! three blocks compose to ε. Without Σy² (fixed-precision model) the split (p₁, p₂) is rescaled
//! to sum to one so no budget is wasted.

use dp_noise::PrivacyLoss;

use crate::error::{Error, Result};

fn check_bounds(bounds_x: &[f64], bound_y: f64) -> Result<()> {
    if bounds_x.is_empty() {
        return Err(Error::Empty { what: "x bounds" });
    }
    projection::error::check_bounds(bounds_x, "x bounds")?;
    projection::error::check_bounds(&[bound_y], "y bound")?;
    Ok(())
}

/// Δ₂ of the statistics vector `[xx (packed), xy, (yy)]` under replace-one (eq. 18).
pub fn stats_l2_sensitivity(bounds_x: &[f64], bound_y: f64, with_yy: bool) -> Result<f64> {
    check_bounds(bounds_x, bound_y)?;
    let mut sq = 0.0;
    for (j, cj) in bounds_x.iter().enumerate() {
        sq += cj.powi(4);
        for ck in &bounds_x[j + 1..] {
            sq += (2.0 * cj * ck).powi(2);
        }
        sq += (2.0 * cj * bound_y).powi(2);
    }
    if with_yy {
        sq += bound_y.powi(4);
    }
    Ok(sq.sqrt())
}

/// Largest |entry| of one record's statistics vector: what the DCA codec must hold.
pub fn stats_entry_bound(bounds_x: &[f64], bound_y: f64, with_yy: bool) -> Result<f64> {
    check_bounds(bounds_x, bound_y)?;
    let max_x = bounds_x.iter().fold(0.0f64, |m, c| m.max(*c));
    let yy = if with_yy { bound_y * bound_y } else { 0.0 };
    Ok((max_x * max_x).max(max_x * bound_y).max(yy))
}

/// Per-coordinate Laplace scales of `[xx (packed), xy, (yy)]` for total budget `epsilon` split as
/// `split` = (p₁, p₂, p₃) (robust LR paper).
pub fn laplace_scales(
    bounds_x: &[f64],
    bound_y: f64,
    epsilon: f64,
    split: [f64; 3],
    with_yy: bool,
) -> Result<Vec<f64>> {
    check_bounds(bounds_x, bound_y)?;
    crate::error::check_positive("ε", epsilon)?;
    if split.iter().any(|p| !(p.is_finite() && *p > 0.0))
        || (split.iter().sum::<f64>() - 1.0).abs() > 1e-9
    {
        return Err(Error::BadBudgetSplit { split });
    }
    let (p1, p2, p3) = if with_yy {
        (split[0], split[1], split[2])
    } else {
        let s = split[0] + split[1];
        (split[0] / s, split[1] / s, 0.0)
    };
    let d = bounds_x.len();
    let mut l1_xx = 0.0;
    for (j, cj) in bounds_x.iter().enumerate() {
        for ck in &bounds_x[j..] {
            l1_xx += 2.0 * cj * ck;
        }
    }
    let l1_xy: f64 = bounds_x.iter().map(|c| 2.0 * c * bound_y).sum();
    let mut scales = vec![l1_xx / (p1 * epsilon); crate::stats::packed_len(d)];
    scales.extend(std::iter::repeat_n(l1_xy / (p2 * epsilon), d));
    if with_yy {
        scales.push(bound_y * bound_y / (p3 * epsilon));
    }
    Ok(scales)
}

/// The largest zCDP ρ whose standard conversion ε = ρ + 2 sqrt(ρ ln(1/δ)) (Bun & Steinke 2016,
/// Prop. 1.3) stays within `budget`: sqrt(ρ) = sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)), shrunk by one
/// part in 10⁹ against rounding.
pub fn rho_from_budget(budget: PrivacyLoss) -> Result<f64> {
    budget.validate()?;
    crate::error::check_positive("Gaussian noise ε", budget.epsilon)?;
    crate::error::check_positive("Gaussian noise δ", budget.delta)?;
    let l = (1.0 / budget.delta).ln();
    let root = (l + budget.epsilon).sqrt() - l.sqrt();
    Ok(root * root * (1.0 - 1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SuffStats;

    fn record(x: &[f64], y: f64, with_yy: bool) -> Vec<f64> {
        let mut out = vec![0.0; SuffStats::flat_len(x.len(), with_yy)];
        SuffStats::record_into(x, y, with_yy, &mut out).unwrap();
        out
    }

    /// All records with every coordinate in {−c, −c/2, 0, c/2, c} (corners included).
    fn records(bounds: &[f64]) -> Vec<Vec<f64>> {
        let mut out = vec![vec![]];
        for &c in bounds {
            out = out
                .into_iter()
                .flat_map(|r| {
                    [-c, -c / 2.0, 0.0, c / 2.0, c].map(|v| {
                        let mut r = r.clone();
                        r.push(v);
                        r
                    })
                })
                .collect();
        }
        out
    }

    #[test]
    fn eq18_bounds_the_brute_force_maximum() {
        for (bx, by) in [(vec![1.0, 2.0], 3.0), (vec![0.5, 1.0, 1.5], 0.7)] {
            let d = bx.len();
            let mut all = bx.clone();
            all.push(by);
            let recs = records(&all);
            for with_yy in [false, true] {
                let flat: Vec<Vec<f64>> = recs
                    .iter()
                    .map(|r| record(&r[..d], r[d], with_yy))
                    .collect();
                let mut worst = 0.0f64;
                for a in &flat {
                    for b in &flat {
                        worst =
                            worst.max(a.iter().zip(b).map(|(u, v)| (u - v).powi(2)).sum::<f64>());
                    }
                }
                let bound = stats_l2_sensitivity(&bx, by, with_yy).unwrap();
                // Valid: never below the worst case; and not absurdly loose (within a factor 2).
                assert!(
                    worst.sqrt() <= bound + 1e-12 && bound < 2.0 * worst.sqrt(),
                    "{worst} vs {bound}"
                );
                // Each coordinate's own maximum change is exactly the per-coordinate term used.
                let entry = stats_entry_bound(&bx, by, with_yy).unwrap();
                let max_abs = flat.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
                assert!((entry - max_abs).abs() < 1e-12);
            }
        }
        // Hand value: c = (1, 2), c_y = 3: 1 + 16 + (2·1·2)² + (2·1·3)² + (2·2·3)² = 213.
        assert!(
            (stats_l2_sensitivity(&[1.0, 2.0], 3.0, false).unwrap() - 213f64.sqrt()).abs() < 1e-12
        );
        // Equal bounds reduce to the paper's d(2d−1)c⁴ + 4d c² c_y²: d = 2, c = 1, c_y = 1 → 6 + 8.
        assert!(
            (stats_l2_sensitivity(&[1.0, 1.0], 1.0, false).unwrap() - 14f64.sqrt()).abs() < 1e-12
        );
    }

    #[test]
    fn laplace_blocks_bound_the_brute_force_l1_and_match_the_paper() {
        let (bx, by) = (vec![0.5, 0.5], 2.0);
        let recs = records(&[0.5, 0.5, 2.0]);
        let flat: Vec<Vec<f64>> = recs.iter().map(|r| record(&r[..2], r[2], true)).collect();
        let (mut w_xx, mut w_xy, mut w_yy) = (0.0f64, 0.0f64, 0.0f64);
        for a in &flat {
            for b in &flat {
                let diff: Vec<f64> = a.iter().zip(b).map(|(u, v)| (u - v).abs()).collect();
                w_xx = w_xx.max(diff[..3].iter().sum());
                w_xy = w_xy.max(diff[3..5].iter().sum());
                w_yy = w_yy.max(diff[5]);
            }
        }
        let s = laplace_scales(&bx, by, 1.0, [0.6, 0.35, 0.05], true).unwrap();
        // Paper: b_xx = d(d+1)B²/(p₁ε) = 6·0.25/0.6 = 2.5; b_xy = 2dB_xB_y/(p₂ε) = 2·2·0.5·2/0.35
        // = 4/0.35; b_yy = B_y²/(p₃ε) = 4/0.05 = 80.
        assert!((s[0] - 2.5).abs() < 1e-12 && (s[2] - 2.5).abs() < 1e-12);
        assert!((s[3] - 4.0 / 0.35).abs() < 1e-12 && (s[5] - 80.0).abs() < 1e-9);
        // Block L1 sensitivities used (scale·p·ε) cover the brute-force maxima.
        assert!(
            w_xx <= 2.5 * 0.6 + 1e-12 && w_xy <= 4.0 + 1e-12 && w_yy <= 4.0 + 1e-12,
            "{w_xx} {w_xy} {w_yy}"
        );
        // Without Σy², (0.6, 0.35) is rescaled to (0.6/0.95, 0.35/0.95).
        let s = laplace_scales(&bx, by, 1.0, [0.6, 0.35, 0.05], false).unwrap();
        assert_eq!(s.len(), 5);
        assert!((s[0] - 1.5 / (0.6 / 0.95)).abs() < 1e-12);
        assert!(laplace_scales(&bx, by, 1.0, [0.6, 0.6, 0.05], true).is_err());
    }

    #[test]
    fn rho_from_budget_by_hand() {
        // ε = 1, δ = 1e-5: L = ln(1e5) = 11.512925465; sqrt(12.512925465) − sqrt(11.512925465)
        // = 3.5373614 − 3.3930702 = 0.1442912; ρ = 0.0208199.
        let rho = rho_from_budget(PrivacyLoss {
            epsilon: 1.0,
            delta: 1e-5,
        })
        .unwrap();
        assert!((rho - 0.0208199).abs() < 1e-7, "{rho}");
        let l = (1e5f64).ln();
        assert!(rho + 2.0 * (rho * l).sqrt() <= 1.0);
        assert!(
            rho_from_budget(PrivacyLoss {
                epsilon: 1.0,
                delta: 0.0
            })
            .is_err()
        );
    }
}
