//! Public feature ranges: each x_j clamped into [lo_j, hi_j] and mapped onto [−1, 1] before its
//! gradient is computed and clipped. The map is fixed and per record, so the DP-SGD guarantee is
//! the same with or without it.
//!
//! The type and its map are those of `plr_stacking::FeatureRange` (the same numbers, so a model
//! fitted by either reads raw rows alike), copied rather than imported: plr-stacking would bring
//! its linear algebra into this crate for two lines.

use crate::{Error, Result};

/// The public range [lo, hi] of one feature, known without looking at the data (a codebook,
/// the instrument's scale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureRange {
    /// Lower end, finite.
    pub lo: f64,
    /// Upper end, finite and > `lo`.
    pub hi: f64,
}

impl FeatureRange {
    /// clamp(x, lo, hi) mapped onto [−1, 1]: (clamp(x) − (lo + hi)/2) / ((hi − lo)/2).
    pub fn map(&self, x: f64) -> f64 {
        let centre = 0.5 * (self.lo + self.hi);
        let half_width = 0.5 * (self.hi - self.lo);
        (x.clamp(self.lo, self.hi) - centre) / half_width
    }
}

/// Checks one range per feature, each with finite ends and lo < hi; a bad range is named by its
/// 0-based column.
pub(crate) fn check_ranges(ranges: &[FeatureRange], dim: usize) -> Result<()> {
    if ranges.len() != dim {
        return Err(Error::LengthMismatch {
            what: "public feature ranges (one per feature)",
            expected: dim,
            actual: ranges.len(),
        });
    }
    for (column, &FeatureRange { lo, hi }) in ranges.iter().enumerate() {
        let requirement = if !(lo.is_finite() && hi.is_finite()) {
            "both ends must be finite"
        } else if lo >= hi {
            "lo must be below hi"
        } else {
            continue;
        };
        return Err(Error::BadRange {
            column,
            lo,
            hi,
            requirement,
        });
    }
    Ok(())
}

/// `row` mapped by `ranges` into `out` (all of length d).
pub(crate) fn map_row(ranges: &[FeatureRange], row: &[f64], out: &mut [f64]) {
    for ((o, &x), range) in out.iter_mut().zip(row).zip(ranges) {
        *o = range.map(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ClientSampling, Model, Optimizer, Privacy, PrivacyLoss, Records, RngSource, Trainer,
        TrainerConfig,
    };

    /// [0, 10] has centre 5 and half-width 5: 2.5 ↦ −0.5, 12.5 clamps to 10 ↦ 1, −3 clamps to
    /// 0 ↦ −1.
    #[test]
    fn map_clamps_and_scales_onto_unit_interval() {
        let range = FeatureRange { lo: 0.0, hi: 10.0 };
        assert_eq!(range.map(2.5), -0.5);
        assert_eq!(range.map(12.5), 1.0);
        assert_eq!(range.map(-3.0), -1.0);
        assert_eq!(range.map(5.0), 0.0);
    }

    fn ranges() -> Vec<FeatureRange> {
        vec![
            FeatureRange { lo: 0.0, hi: 10.0 },
            FeatureRange { lo: -2.0, hi: 2.0 },
        ]
    }

    /// Two records, θ = 0 (so σ(0) = ½ and a record's gradient is −y·½·(x̃, 1)):
    /// x = (2.5, 3), y = +1 ↦ x̃ = (−0.5, 1) (3 clamps to 2), gradient (0.25, −0.5, −0.5);
    /// x = (12.5, −1), y = 0 (read −1) ↦ x̃ = (1, −0.5), gradient (0.5, −0.25, 0.5).
    fn records() -> Records {
        Records::new(vec![2.5, 3.0, 12.5, -1.0], 2, vec![1.0, 0.0]).unwrap()
    }

    fn config(privacy: Privacy, clip_norm: f64) -> TrainerConfig {
        TrainerConfig {
            model: Model::logistic(0.0),
            sampling: ClientSampling::FixedSize { batch: 2 },
            clip_norm,
            privacy,
            optimizer: Optimizer::Sgd { learning_rate: 1.0 },
            n_nodes: 2,
            max_dropped: 0,
        }
    }

    fn assert_close(got: &[f64], want: &[f64], tolerance: f64) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < tolerance, "{got:?} vs {want:?}");
        }
    }

    /// Non-private: the release is the sum of the mapped records' gradients,
    /// (0.75, −0.75, 0); SGD with rate 1 over the batch of 2 gives θ = (−0.375, 0.375, 0).
    /// A raw row outside the ranges predicts as its clamped row: (12.5, −5) and (10, −2) both
    /// map to (1, −1), σ(−0.375 − 0.375) = σ(−0.75); (2.5, 3) maps to (−0.5, 1),
    /// σ(0.1875 + 0.375) = σ(0.5625).
    #[test]
    fn mapped_records_give_the_hand_computed_gradient_and_prediction() {
        let mut trainer = Trainer::new(
            config(Privacy::NonPrivate, 1.0),
            2,
            2,
            RngSource::InsecureFixedSeed(3),
        )
        .unwrap()
        .with_feature_ranges(ranges())
        .unwrap();
        let report = trainer.step(&records(), &[]).unwrap();
        assert_close(&report.released_sum, &[0.75, -0.75, 0.0], 1e-9);
        assert_close(trainer.params(), &[-0.375, 0.375, 0.0], 1e-9);
        let sigmoid = |t: f64| 1.0 / (1.0 + (-t).exp());
        let p = trainer
            .predict(&[12.5, -5.0, 10.0, -2.0, 2.5, 3.0])
            .unwrap();
        assert_eq!(p[0], p[1]);
        assert_close(&p, &[sigmoid(-0.75), sigmoid(-0.75), sigmoid(0.5625)], 1e-9);
        assert!(trainer.predict(&[f64::INFINITY, 0.0]).is_err());
        assert!(trainer.predict(&[1.0, 2.0, 3.0]).is_err());
    }

    /// Private, C = 0.5: the clipping sees the mapped gradients, each of norm
    /// √(0.0625 + 0.25 + 0.25) = 0.75, scaled by 2/3 to (1/6, −1/3, −1/3) and (1/3, −1/6, 1/3):
    /// sum (0.5, −0.5, 0). Unmapped, the gradients (−1.25, −1.5, −0.5) and (6.25, −0.5, 0.5)
    /// would clip to a sum ≈ (0.19, −0.41, −0.08). With z = 1e-4 the noise's σ_total is 5e-5
    /// per coordinate, so 1e-3 is 20σ.
    #[test]
    fn clipping_sees_the_mapped_gradient() {
        let private = Privacy::Private {
            budget: PrivacyLoss::new(1e9, 1e-5).unwrap(),
            noise_multiplier: 1e-4,
        };
        let mut trainer = Trainer::new(config(private, 0.5), 2, 2, RngSource::InsecureFixedSeed(5))
            .unwrap()
            .with_feature_ranges(ranges())
            .unwrap();
        let report = trainer.step(&records(), &[]).unwrap();
        assert_close(&report.released_sum, &[0.5, -0.5, 0.0], 1e-3);
    }

    /// Bad ranges are refused naming the 0-based column; wrong counts, another model or a
    /// trainer that has stepped are refused too.
    #[test]
    fn bad_ranges_are_refused_by_column() {
        let trainer = || {
            Trainer::new(
                config(Privacy::NonPrivate, 1.0),
                2,
                2,
                RngSource::InsecureFixedSeed(3),
            )
            .unwrap()
        };
        let bad = |lo: f64, hi: f64| {
            let mut r = ranges();
            r[1] = FeatureRange { lo, hi };
            trainer().with_feature_ranges(r).unwrap_err()
        };
        for (lo, hi, requirement) in [
            (1.0, 1.0, "lo must be below hi"),
            (2.0, 1.0, "lo must be below hi"),
            (f64::NAN, 1.0, "both ends must be finite"),
            (0.0, f64::INFINITY, "both ends must be finite"),
        ] {
            let e = bad(lo, hi);
            assert!(
                matches!(e, crate::Error::BadRange { column: 1, requirement: r, .. } if r == requirement),
                "{e}"
            );
            assert!(e.to_string().starts_with("range of column 1:"), "{e}");
        }
        assert!(matches!(
            trainer().with_feature_ranges(ranges()[..1].to_vec()),
            Err(crate::Error::LengthMismatch {
                expected: 2,
                actual: 1,
                ..
            })
        ));
        let mut vi = config(Privacy::NonPrivate, 1.0);
        vi.model = Model::LinearRegressionVi {
            noise_precision: 1.0,
            prior_precision: 1.0,
        };
        let vi = Trainer::new(vi, 2, 2, RngSource::InsecureFixedSeed(3)).unwrap();
        assert!(vi.with_feature_ranges(ranges()).is_err());
        let mut stepped = trainer();
        stepped.step(&records(), &[]).unwrap();
        assert!(stepped.with_feature_ranges(ranges()).is_err());
    }
}
