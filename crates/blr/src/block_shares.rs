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

    /// The weights w_B = √s_B / Δ_B of (Gram, cross, yy) for a design of `width` columns whose
    /// values lie in [−1, 1] (module docs).
    pub fn weights(&self, width: usize, intercept: bool) -> [f64; 3] {
        let s = block_sensitivities(width, intercept);
        [
            self.gram.sqrt() / s[0],
            self.cross.sqrt() / s[1],
            self.yy.sqrt() / s[2],
        ]
    }

    /// Each block's noise sd when the weighted vector was released with noise sd `joint`.
    pub fn noise(&self, width: usize, intercept: bool, joint: f64) -> BlockNoise {
        let w = self.weights(width, intercept);
        BlockNoise {
            gram: joint / w[0],
            cross: joint / w[1],
            yy: joint / w[2],
        }
    }
}

/// Δ₂ of each block (eq. 18 per block, every value in [−1, 1]): a square z_j² ranges over
/// [0, 1] (width 1), a product z_j z_k or z_j ỹ over [−1, 1] (width 2), ỹ² over [0, 1]; with an
/// intercept the constant's own entry is 1 for every record (width 0) and its products are x̃_j
/// and ỹ (width 2).
pub fn block_sensitivities(width: usize, intercept: bool) -> [f64; 3] {
    let p = width as f64;
    let squares = if intercept { p - 1.0 } else { p };
    let pairs = p * (p - 1.0) / 2.0;
    [
        (squares + 4.0 * pairs).sqrt().max(f64::MIN_POSITIVE),
        (4.0 * p).sqrt(),
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
    fn the_blocks_add_up_to_eq_18_less_the_constant_entry() {
        for (width, intercept) in [(1, false), (3, true), (3, false), (17, true)] {
            let s = block_sensitivities(width, intercept);
            let total: f64 = s.iter().map(|v| v * v).sum();
            let eq18 = stats_l2_sensitivity(&vec![1.0; width], 1.0, true)
                .unwrap()
                .powi(2);
            let constant = if intercept { 1.0 } else { 0.0 };
            assert!(
                (total - (eq18 - constant)).abs() < 1e-9,
                "{width}: {total} vs {eq18}"
            );
        }
        // Width 3 with an intercept, by hand: squares 2, pairs 3 × 4, cross 3 × 4, yy 1.
        assert_eq!(
            block_sensitivities(3, true),
            [14f64.sqrt(), 12f64.sqrt(), 1.0]
        );
    }

    #[test]
    fn weighted_blocks_have_sensitivity_one_and_the_noise_of_separate_releases() {
        let shares = BlockShares::default();
        let w = shares.weights(3, true);
        let s = block_sensitivities(3, true);
        let weighted: f64 = (0..3).map(|b| (w[b] * s[b]).powi(2)).sum();
        assert!((weighted - 1.0).abs() < 1e-12);
        // Joint σ = 1/√(2ρ) (Δ = 1): block B gets Δ_B/√(2ρ s_B), a release of B alone at ρ s_B.
        let rho: f64 = 0.02;
        let noise = shares.noise(3, true, 1.0 / (2.0 * rho).sqrt());
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
