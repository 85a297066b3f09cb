//! How one release of a design's statistics shares its budget among the three blocks
//! Σzzᵀ (the Gram, with n and Σx̃), Σzỹ (the cross products, with Σỹ) and Σỹ².
//!
//! One Gaussian release with the same noise on every entry gives each block noise in proportion
//! to the *whole* vector's sensitivity, which the Gram's d² entries dominate: the cross products,
//! which carry the signal the slopes are read from, and Σỹ², which the R² and σ̂ need, then get
//! far more noise than their own sensitivities call for. Weighting the blocks before the sum
//! (entries of block B times w_B = √s_B / Δ_B, s_B its share) and dividing after the release
//! spends zCDP ρ·s_B on block B: the vector's L2 sensitivity becomes
//! √(Σ_B w_B² Δ_B²) = √(Σ s_B) = 1, and block B's noise sd is σ/w_B = Δ_B/√(2ρ s_B) — the noise
//! of a separate release of that block at budget ρ s_B, as AdaSSP (Wang 2018) spends a third on
//! each, but in one round. The DCA machinery is unchanged: the weights are part of every
//! record's vector.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::stats::packed_len;

/// Shares of the statistics round's budget: positive, summing to 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockShares {
    /// Σzzᵀ.
    pub gram: f64,
    /// Σzỹ.
    pub cross: f64,
    /// Σỹ².
    pub yy: f64,
}

impl Default for BlockShares {
    /// Measured on the real-data suite (docs/src/results/real-data.md).
    fn default() -> Self {
        BlockShares {
            gram: 0.45,
            cross: 0.45,
            yy: 0.1,
        }
    }
}

/// The noise sd of one entry of each block after the weights are divided out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockNoise {
    /// Σzzᵀ's entries.
    pub gram: f64,
    /// Σzỹ's entries.
    pub cross: f64,
    /// Σỹ².
    pub yy: f64,
}

impl BlockNoise {
    /// No noise (exact statistics: a NON-PRIVATE fit).
    pub const NONE: BlockNoise = BlockNoise {
        gram: 0.0,
        cross: 0.0,
        yy: 0.0,
    };
}

impl BlockShares {
    /// Checks the shares.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for a share not in (0, 1) or shares not summing to 1.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("gram share", self.gram),
            ("cross share", self.cross),
            ("yy share", self.yy),
        ] {
            if !(v > 0.0 && v < 1.0) {
                return Err(Error::OutOfRange {
                    name,
                    value: v,
                    requirement: "in (0, 1)",
                });
            }
        }
        let sum = self.gram + self.cross + self.yy;
        if (sum - 1.0).abs() > 1e-9 {
            return Err(Error::OutOfRange {
                name: "sum of the block shares",
                value: sum,
                requirement: "1",
            });
        }
        Ok(())
    }

    /// The weights w_B = √s_B / Δ_B of (Gram, cross, yy) for blocks of sensitivities
    /// `sensitivities` ([`block_sensitivities`]; module docs).
    pub fn weights(&self, sensitivities: [f64; 3]) -> [f64; 3] {
        let s = sensitivities;
        [
            self.gram.sqrt() / s[0],
            self.cross.sqrt() / s[1],
            self.yy.sqrt() / s[2],
        ]
    }

    /// Each block's noise sd when the weighted vector was released with noise sd `joint`.
    pub fn noise(&self, sensitivities: [f64; 3], joint: f64) -> BlockNoise {
        let w = self.weights(sensitivities);
        BlockNoise {
            gram: joint / w[0],
            cross: joint / w[1],
            yy: joint / w[2],
        }
    }
}

/// Δ₂ of each block under replace-one record, for design rows z of `width` values in [−1, 1]
/// (the constant 1 first with `intercept`) and ỹ ∈ [−1, 1], where the columns in groups of
/// `group_sizes` are 0/1 indicators of which a record sets at most one per group
/// ([`crate::design`]). Each is the smaller of two bounds, both proved here:
///
/// - **entrywise** (eq. 18 per block): a square z_j² ranges over [0, 1] (width 1), a product
///   z_j z_k or z_j ỹ over [−1, 1] (width 2), ỹ² over [0, 1]; the constant's own entry is 1 for
///   every record (width 0): Δ_G² = (p − c) + 4·p(p − 1)/2, Δ_c² = 4p, with c = 1 with an
///   intercept.
/// - **through ‖z‖²** ≤ B (B = c + the ungrouped columns + the number of groups: a group's
///   indicators add at most 1). The packed Gram vector holds each off-diagonal product once, so
///   ‖vech(zzᵀ) − vech(z′z′ᵀ)‖² = ½(‖zzᵀ − z′z′ᵀ‖_F² + D), D = Σ_j (z_j² − z′_j²)², and
///   ‖zzᵀ − z′z′ᵀ‖_F² = ‖z‖⁴ + ‖z′‖⁴ − 2(zᵀz′)² ≤ 2B². Each term of D is at most 1 and is 0 for
///   the constant; a group has at most two non-zero terms (a level of z, a level of z′), so
///   D ≤ the ungrouped columns + Σ_g min(2, size_g): Δ_G² ≤ B² + D/2. The cross products:
///   ‖zỹ − z′ỹ′‖ ≤ ‖z‖ + ‖z′‖, Δ_c² ≤ 4B.
///
/// Without groups the second is about half the first's Δ_G² (B = p: p² + p/2 against 2p² − p),
/// because products of one record's values cannot all move by 2 at once.
pub fn block_sensitivities(width: usize, intercept: bool, group_sizes: &[usize]) -> [f64; 3] {
    let p = width as f64;
    let columns = width - usize::from(intercept);
    let ungrouped = columns.saturating_sub(group_sizes.iter().sum()) as f64;
    let norm_sq = f64::from(u8::from(intercept)) + ungrouped + group_sizes.len() as f64;
    let squares_change = ungrouped + group_sizes.iter().map(|&g| g.min(2) as f64).sum::<f64>();
    let entrywise_gram = columns as f64 + 2.0 * p * (p - 1.0);
    let gram = entrywise_gram.min(norm_sq * norm_sq + squares_change / 2.0);
    [
        gram.sqrt().max(f64::MIN_POSITIVE),
        (4.0 * p).min(4.0 * norm_sq).sqrt(),
        1.0,
    ]
}

/// Multiplies (`divide` = false) or divides the blocks of a flat statistics vector
/// `[Gram (packed), cross, yy]` of `width` columns by `weights`.
pub(crate) fn apply(flat: &mut [f64], width: usize, weights: [f64; 3], divide: bool) {
    let g = packed_len(width);
    let scale = |w: f64| if divide { 1.0 / w } else { w };
    let (gram, rest) = flat.split_at_mut(g.min(flat.len()));
    gram.iter_mut().for_each(|v| *v *= scale(weights[0]));
    let (cross, yy) = rest.split_at_mut(width.min(rest.len()));
    cross.iter_mut().for_each(|v| *v *= scale(weights[1]));
    yy.iter_mut().for_each(|v| *v *= scale(weights[2]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensitivity::stats_l2_sensitivity;

    #[test]
    fn each_block_takes_the_smaller_of_the_two_bounds_by_hand() {
        // One column, no intercept: entrywise Δ_G² = 1; through ‖z‖² (B = 1, D = 1) 1.5.
        // Δ_c² = 4 both ways. This is eq. 18 itself (Gram 1 + cross 4 + yy 1).
        let s = block_sensitivities(1, false, &[]);
        assert_eq!(s, [1.0, 2.0, 1.0]);
        let eq18 = stats_l2_sensitivity(&[1.0], 1.0, true).unwrap().powi(2);
        assert!((s.iter().map(|v| v * v).sum::<f64>() - eq18).abs() < 1e-12);
        // (1, x̃₁, x̃₂): entrywise 2 squares + 3 pairs × 4 = 14; B = 3, D = 2: 9 + 1 = 10.
        assert_eq!(
            block_sensitivities(3, true, &[]),
            [10f64.sqrt(), 12f64.sqrt(), 1.0]
        );
        // ggplot2 `diamonds`: the constant, 6 numeric columns and cut, color and clarity's
        // 4 + 6 + 7 indicators (width 24). Entrywise 23 + 2·24·23 = 1127 and 96; through ‖z‖²
        // B = 1 + 6 + 3 = 10, D = 6 + 3·2 = 12: 100 + 6 = 106 and 40.
        assert_eq!(
            block_sensitivities(24, true, &[4, 6, 7]),
            [106f64.sqrt(), 40f64.sqrt(), 1.0]
        );
        // The same columns without groups: B = 24, D = 23: 576 + 11.5.
        assert_eq!(block_sensitivities(24, true, &[])[0], 587.5f64.sqrt());
    }

    /// Packed Gram and cross products of one record.
    fn blocks(z: &[f64], y: f64) -> (Vec<f64>, Vec<f64>) {
        let mut gram = Vec::new();
        for j in 0..z.len() {
            for k in j..z.len() {
                gram.push(z[j] * z[k]);
            }
        }
        (gram, z.iter().map(|v| v * y).collect())
    }

    fn distance(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(u, v)| (u - v).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    /// Every record of the design: ungrouped values from `levels`, each group one-hot or
    /// empty.
    fn records(
        intercept: bool,
        ungrouped: usize,
        groups: &[usize],
        levels: &[f64],
    ) -> Vec<Vec<f64>> {
        let mut out = vec![if intercept { vec![1.0] } else { vec![] }];
        for _ in 0..ungrouped {
            out = out
                .iter()
                .flat_map(|r| levels.iter().map(move |v| [r.clone(), vec![*v]].concat()))
                .collect();
        }
        for &g in groups {
            out = out
                .iter()
                .flat_map(|r| {
                    (0..=g).map(move |on| {
                        let level: Vec<f64> =
                            (1..=g).map(|l| f64::from(u8::from(l == on))).collect();
                        [r.clone(), level].concat()
                    })
                })
                .collect();
        }
        out
    }

    #[test]
    fn no_two_records_move_a_block_further_than_its_bound() {
        let levels = [-1.0, -0.5, 0.0, 0.5, 1.0];
        for (intercept, ungrouped, groups) in [
            (false, 4, vec![]),
            (true, 3, vec![]),
            (true, 1, vec![3]),
            (true, 0, vec![2, 3]),
            (false, 2, vec![3]),
        ] {
            let all = records(intercept, ungrouped, &groups, &levels);
            let width = all[0].len();
            let bound = block_sensitivities(width, intercept, &groups);
            let mut worst = [0.0f64; 2];
            for a in &all {
                for b in &all {
                    for (ya, yb) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 0.0)] {
                        let (ga, ca) = blocks(a, ya);
                        let (gb, cb) = blocks(b, yb);
                        worst[0] = worst[0].max(distance(&ga, &gb));
                        worst[1] = worst[1].max(distance(&ca, &cb));
                    }
                }
            }
            let case = format!("{intercept} {ungrouped} {groups:?}");
            assert!(
                worst[0] <= bound[0] + 1e-12,
                "{case}: Gram {} > {}",
                worst[0],
                bound[0]
            );
            assert!(
                worst[1] <= bound[1] + 1e-12,
                "{case}: cross {} > {}",
                worst[1],
                bound[1]
            );
            // Both bounds are nearly attained: within 10% of the worst pair.
            assert!(
                worst[0] >= 0.9 * bound[0],
                "{case}: Gram {} ≪ {}",
                worst[0],
                bound[0]
            );
            assert!(
                worst[1] >= 0.9 * bound[1],
                "{case}: cross {} ≪ {}",
                worst[1],
                bound[1]
            );
        }
    }

    #[test]
    fn weighted_blocks_have_sensitivity_one_and_the_noise_of_separate_releases() {
        let shares = BlockShares::default();
        let s = block_sensitivities(3, true, &[]);
        let w = shares.weights(s);
        let weighted: f64 = (0..3).map(|b| (w[b] * s[b]).powi(2)).sum();
        assert!((weighted - 1.0).abs() < 1e-12);
        // Joint σ = 1/√(2ρ) (Δ = 1): block B gets Δ_B/√(2ρ s_B), a release of B alone at ρ s_B.
        let rho: f64 = 0.02;
        let noise = shares.noise(s, 1.0 / (2.0 * rho).sqrt());
        assert!((noise.cross - 12f64.sqrt() / (2.0 * rho * 0.45f64).sqrt()).abs() < 1e-9);
        assert!((noise.yy - 1.0 / (2.0 * rho * 0.1f64).sqrt()).abs() < 1e-9);
        let mut flat = vec![1.0; packed_len(3) + 3 + 1];
        apply(&mut flat, 3, w, false);
        assert_eq!(flat[0], w[0]);
        assert_eq!(flat[6], w[1]);
        assert_eq!(flat[9], w[2]);
        apply(&mut flat, 3, w, true);
        assert!(flat.iter().all(|v| (v - 1.0).abs() < 1e-15));
    }

    #[test]
    fn bad_shares_are_refused() {
        for (g, c, y) in [
            (0.5, 0.5, 0.0),
            (0.5, 0.4, 0.2),
            (f64::NAN, 0.5, 0.5),
            (1.0, 0.0, 0.0),
        ] {
            let shares = BlockShares {
                gram: g,
                cross: c,
                yy: y,
            };
            assert!(shares.validate().is_err(), "{g} {c} {y}");
        }
        assert!(BlockShares::default().validate().is_ok());
    }
}
