//! PLR or stacking? A differentially private comparison on held-out rows, so that the library
//! can recommend PLR (and hand back a PLR model) when stacking does worse on the data at hand.
//!
//! Stacking is not better than PLR everywhere: on centralised data each PST-S part sees n/(2K)
//! rows, and at small ε a high level with few rows and a small λ keeps little of its budget
//! (ε′ = ε − log(1 + 1/(2nλ) + 1/(16n²λ²)), docs/src/results/stacking.md has the numbers).
//! Which one wins depends on n, d, ε and the data, so it is measured, privately.
//!
//! Guarantee (ε-DP for the data set, replace-one neighbours). The rows are split at random —
//! independently of their values — into three disjoint parts: T_p (PLR), T_s (the stacked
//! model) and V (validation). PLR is ε_p-DP for T_p, the stacked fit ε_s-DP for T_s (its own
//! guarantee), and the released comparison is
//! (correct_s − correct_p on V) + discrete Laplace noise of scale 2/ε_v (exact, on the integers,
//! Canonne, Kamath & Steinke 2020): one record of V moves the count difference by at most 2 (its
//! term lies in {−1, 0, 1}), so that is ε_v-DP for V, and everything evaluated on
//! V from the two models is post-processing for T_p and T_s. A record lies in exactly one part:
//! parallel composition gives max(ε_p, ε_s, ε_v) overall. Both models are released (each is
//! trained on its own part only), with the recommendation.

use dp_noise::PrivacyLoss;
use dp_noise::discrete::DiscreteLaplace;
use dp_noise::rng::RngSource;

use crate::calibration::check_epsilon;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::partition::permutation;
use crate::plr::{PlrConfig, PlrFit, fit_plr};
use crate::stacking::StackedFit;

/// Stream of the three-way row split; PLR's noise is `rng.derive(STREAM_PLR)`, the stacked
/// fit's randomness `rng.derive(STREAM_STACKED)`, the comparison's `rng.derive(STREAM_VALIDATION)`.
pub const STREAM_SELECTION_SPLIT: u64 = (1 << 33) + 1;
/// Stream handed to PLR.
pub const STREAM_PLR: u64 = (1 << 33) + 2;
/// Stream handed to the stacked fit.
pub const STREAM_STACKED: u64 = (1 << 33) + 3;
/// Stream of the comparison's Laplace noise.
pub const STREAM_VALIDATION: u64 = (1 << 33) + 4;

/// Settings of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionConfig {
    /// PLR's settings (its ε is its guarantee for T_p).
    pub plr: PlrConfig,
    /// Share of the rows in V, strictly between 0 and 1; the rest is halved between T_p and T_s.
    pub validation_fraction: f64,
    /// ε_v of the noisy comparison on V.
    pub validation_epsilon: f64,
}

/// Which model the comparison recommends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recommendation {
    /// PLR did at least as well on V (after noise).
    Plr,
    /// The stacked model did better on V (after noise).
    Stacked,
}

/// Both candidates, the noisy comparison and what it all cost.
#[derive(Debug, Clone)]
pub struct Selection {
    /// What the noisy comparison recommends.
    pub recommendation: Recommendation,
    /// (correct_s − correct_p) on V plus Laplace noise: the released statistic.
    pub noisy_margin: f64,
    /// Scale b = 2/ε_v of that noise.
    pub noise_scale: f64,
    /// Rows in V.
    pub validation_rows: usize,
    /// PLR trained on T_p.
    pub plr: PlrFit,
    /// The stacked model trained on T_s.
    pub stacked: StackedFit,
    /// max(ε_p, ε_s, ε_v), δ = 0: the guarantee for the whole data set.
    pub privacy: PrivacyLoss,
}

/// Row indices of (T_p, T_s, V): V gets round(n·validation_fraction) rows, T_p and T_s halve the
/// rest (T_p the larger half). Independent of the data's values.
pub(crate) fn three_way_split(
    n: usize,
    validation_fraction: f64,
    rng: &RngSource,
) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    if !(validation_fraction > 0.0 && validation_fraction < 1.0) {
        return Err(Error::InvalidParameter {
            name: "validation_fraction",
            value: validation_fraction,
            requirement: "strictly between 0 and 1",
        });
    }
    let n_v = (n as f64 * validation_fraction).round() as usize;
    let n_train = n.saturating_sub(n_v);
    if n_v == 0 || n_train < 2 {
        return Err(Error::PartitionTooSmall {
            rows: n,
            high_rows: n_v,
            min_low_rows: 2,
        });
    }
    let order = permutation(n, &mut rng.derive(STREAM_SELECTION_SPLIT).try_rng()?);
    let (v, train) = order.split_at(n_v);
    let (tp, ts) = train.split_at(n_train.div_ceil(2));
    Ok((tp.to_vec(), ts.to_vec(), v.to_vec()))
}

/// Correct predictions (p ≥ ½ for label +1, p < ½ for −1) of the stacked model minus PLR's.
fn count_margin(plr: &[f64], stacked: &[f64], labels: &[f64]) -> f64 {
    let right = |p: f64, y: f64| f64::from(u8::from((p >= 0.5) == (y > 0.0)));
    plr.iter()
        .zip(stacked)
        .zip(labels)
        .map(|((p, s), y)| right(*s, *y) - right(*p, *y))
        .sum()
}

/// The count difference plus discrete Laplace noise of scale 2/ε_v, and that scale.
fn release_margin(margin: f64, epsilon_v: f64, rng: &RngSource) -> Result<(f64, f64)> {
    let scale = 2.0 / epsilon_v;
    let noise = DiscreteLaplace::new(scale)?.sample(&mut rng.try_rng()?);
    Ok((margin + noise as f64, scale))
}

/// Fits PLR on T_p and the stacked model (`fit_stacked`, e.g. a closure around
/// [`crate::fit_pst_f`]) on T_s, compares them on V with Laplace noise, and recommends the one
/// that did better (PLR on a tie). See the module docs for the guarantee.
pub fn select_plr_or_stacking<F>(
    data: &Dataset,
    config: &SelectionConfig,
    fit_stacked: F,
    rng: &RngSource,
) -> Result<Selection>
where
    F: FnOnce(&Dataset, &RngSource) -> Result<StackedFit>,
{
    check_epsilon(config.validation_epsilon)?;
    if config.validation_epsilon.is_infinite() {
        return Err(Error::InvalidParameter {
            name: "validation_epsilon",
            value: config.validation_epsilon,
            requirement: "finite: the comparison is released",
        });
    }
    let (tp, ts, v) = three_way_split(data.n_rows(), config.validation_fraction, rng)?;
    let plr = fit_plr(&data.subset(&tp), &config.plr, &rng.derive(STREAM_PLR))?;
    let stacked = fit_stacked(&data.subset(&ts), &rng.derive(STREAM_STACKED))?;
    let validation = data.subset(&v);
    let d = data.n_features();
    let mut rows = Vec::with_capacity(v.len() * d);
    for i in 0..v.len() {
        rows.extend((0..d).map(|j| validation.x[(i, j)]));
    }
    let margin = count_margin(
        &plr.model.predict_proba(&rows)?,
        &stacked.model.predict_proba(&rows)?,
        validation.labels(),
    );
    let (noisy_margin, noise_scale) = release_margin(
        margin,
        config.validation_epsilon,
        &rng.derive(STREAM_VALIDATION),
    )?;
    let epsilon = config
        .plr
        .epsilon
        .max(stacked.privacy.epsilon)
        .max(config.validation_epsilon);
    Ok(Selection {
        recommendation: if noisy_margin > 0.0 {
            Recommendation::Stacked
        } else {
            Recommendation::Plr
        },
        noisy_margin,
        noise_scale,
        validation_rows: v.len(),
        plr,
        stacked,
        privacy: PrivacyLoss {
            epsilon,
            delta: 0.0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::FeatureGroups;
    use crate::stacking::{StackingConfig, fit_pst_f};

    #[test]
    fn the_three_parts_are_disjoint_and_cover_the_rows() {
        let rng = RngSource::InsecureFixedSeed(5);
        let (tp, ts, v) = three_way_split(101, 0.2, &rng).unwrap();
        // round(101 · 0.2) = 20 in V; 81 left, T_p takes ⌈81/2⌉ = 41, T_s 40.
        assert_eq!((tp.len(), ts.len(), v.len()), (41, 40, 20));
        let mut all: Vec<usize> = tp.iter().chain(&ts).chain(&v).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..101).collect::<Vec<_>>());
        assert!(three_way_split(101, 0.0, &rng).is_err());
        assert!(three_way_split(101, 1.0, &rng).is_err());
        assert!(three_way_split(2, 0.5, &rng).is_err());
    }

    #[test]
    fn the_margin_counts_correct_predictions() {
        // Row 1: both right; row 2: only stacked right; row 3: only PLR right; row 4: stacked
        // right (p = ½ counts as +1).
        let labels = [1.0, -1.0, 1.0, 1.0];
        let plr = [0.9, 0.7, 0.6, 0.2];
        let stacked = [0.8, 0.1, 0.4, 0.5];
        assert_eq!(count_margin(&plr, &stacked, &labels), 1.0);
    }

    /// The released margin's noise is discrete Laplace of scale 2/ε_v: at ε_v = 0.5 (b = 4,
    /// p = e^(−1/4)) E|K| = 2p/(1 − p²) = 3.958 by hand and sd|K| ≈ 4.02, so the mean of 4000
    /// draws is within 0.4 (6.3 s.e.) of 3.958; scale 2 or 8 would give 1.92 or 7.98.
    #[test]
    fn the_margin_noise_has_scale_two_over_epsilon_v() {
        let mut total = 0.0;
        for seed in 0..4000 {
            let (noisy, scale) =
                release_margin(10.0, 0.5, &RngSource::InsecureFixedSeed(seed)).unwrap();
            assert_eq!(scale, 4.0);
            assert_eq!(noisy.fract(), 0.0);
            total += (noisy - 10.0).abs();
        }
        let mean = total / 4000.0;
        assert!((mean - 3.958).abs() < 0.4, "{mean}");
    }

    /// One feature that decides the label; PLR sees it, the stacked model's only group is
    /// given importance on it too, so the guarantee and the bookkeeping can be checked.
    fn separable(n: usize) -> Dataset {
        let x: Vec<f64> = (0..n)
            .map(|i| if i % 2 == 0 { 0.9 } else { -0.9 })
            .collect();
        let y: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { 0.0 }).collect();
        Dataset::from_rows(&x, 1, &y).unwrap()
    }

    #[test]
    fn privacy_is_the_largest_part_budget_and_the_noise_scale_is_two_over_epsilon_v() {
        let data = separable(400);
        let config = SelectionConfig {
            plr: PlrConfig::new(0.7, 0.1),
            validation_fraction: 0.25,
            validation_epsilon: 0.4,
        };
        let groups = FeatureGroups::uniform(vec![vec![0]], 1).unwrap();
        let s = select_plr_or_stacking(
            &data,
            &config,
            |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(1.3, 0.1), rng),
            &RngSource::InsecureFixedSeed(9),
        )
        .unwrap();
        // Parallel composition over disjoint parts: max(0.7, 1.3, 0.4) = 1.3; b = 2/0.4 = 5.
        assert_eq!(s.privacy.epsilon, 1.3);
        assert_eq!(s.privacy.delta, 0.0);
        assert_eq!(s.noise_scale, 5.0);
        assert_eq!(s.validation_rows, 100);
        assert_eq!(s.plr.privacy.epsilon, 0.7);
        let bad = SelectionConfig {
            validation_epsilon: f64::INFINITY,
            ..config
        };
        assert!(
            select_plr_or_stacking(
                &data,
                &bad,
                |part, rng| fit_pst_f(part, &groups, &StackingConfig::new(1.0, 0.1), rng),
                &RngSource::InsecureFixedSeed(9),
            )
            .is_err()
        );
    }

    /// A stacked "model" that is always wrong loses to PLR on separable data: with 200
    /// validation rows the true margin is about −200 and the noise scale 2/ε_v = 2, so the
    /// recommendation is PLR unless the Laplace draw exceeds ~100 scales (probability e^−100).
    #[test]
    fn a_worse_stacked_model_is_not_recommended() {
        let data = separable(800);
        let config = SelectionConfig {
            plr: PlrConfig::new(5.0, 0.01),
            validation_fraction: 0.25,
            validation_epsilon: 1.0,
        };
        let groups = FeatureGroups::uniform(vec![vec![0]], 1).unwrap();
        let s = select_plr_or_stacking(
            &data,
            &config,
            |part, rng| {
                let mut fit = fit_pst_f(part, &groups, &StackingConfig::new(5.0, 0.01), rng)?;
                // Flip the stacked model: its high-level weight negated.
                let low = fit.model.low_level().to_vec();
                let w: Vec<f64> = fit
                    .model
                    .high_level()
                    .weights()
                    .iter()
                    .map(|w| -w.abs() - 1.0)
                    .collect();
                let sign = fit.model.low_level()[0].model.weights()[0].signum();
                let high = crate::model::LogisticModel::new(
                    w.iter().map(|w| w * sign).collect(),
                    fit.model.high_level().input_radius(),
                )?;
                fit.model = crate::stacking::StackedModel::new(1, low, high)?;
                Ok(fit)
            },
            &RngSource::InsecureFixedSeed(3),
        )
        .unwrap();
        assert_eq!(s.recommendation, Recommendation::Plr, "{}", s.noisy_margin);
        assert!(s.noisy_margin < -100.0, "{}", s.noisy_margin);
    }
}
