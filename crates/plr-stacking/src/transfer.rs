//! PST-H: privacy-preserving stacking with hypothesis transfer (stacking paper Alg. 4, eq. 5).
//!
//! Source domain: K low-level models on the feature groups of the source data, calibrated
//! jointly as the low level of PST-F (rows of group k clipped to ‖x_(k)‖ ≤ q_k, shared ε′), so the
//! set {w_src,k} is ε_src-DP for the source data (Lemma 8). Alg. 4 step 3 read literally —
//! K separate PLR fits at ε_src on the same records — would only be K·ε_src-DP by sequential
//! composition; the joint calibration delivers the ε_src that Corollary 6 states.
//!
//! Target domain: PST-F with low-level regularisers λ_tgt·½‖w − w_src,k‖². The anchors are DP
//! releases of the source, fixed with respect to the target data, and g_k stays 1-strongly
//! convex, so the target release is ε_tgt-DP for the target data. The two data sets are
//! different people; each gets its own guarantee.
//!
//! Public ranges ([`TransferConfig::ranges`], one per column) map the columns of every source
//! and target low-level model as in PST-F; the source and the target share them, so a source
//! model's weights are read on the scale of the target's mapped columns.

use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;

use crate::calibration::{check_epsilon, check_lambda};
use crate::data::{Dataset, FeatureRange, check_ranges};
use crate::error::{Error, Result};
use crate::model::LogisticModel;
use crate::partition::FeatureGroups;
use crate::plr::{InputSpec, privacy_loss};
use crate::stacking::{
    StackedFit, StackingConfig, check_group_features, fit_feature_stack, fit_groups, group_ranges,
    low_level_calibration,
};

/// Stream of the source-domain fits (group k: `rng.derive(STREAM_SOURCE).derive(k)`).
pub const STREAM_SOURCE: u64 = (1 << 32) + 2;
/// Stream of the target-domain PST-F (its own streams derive from this one).
pub const STREAM_TARGET: u64 = (1 << 32) + 3;

/// Parameters of PST-H.
#[derive(Debug, Clone, PartialEq)]
pub struct TransferConfig {
    /// Budget ε_src > 0 for the source data (∞ = non-private).
    pub epsilon_source: f64,
    /// Budget ε_tgt > 0 for the target data (∞ = non-private).
    pub epsilon_target: f64,
    /// λ > 0 of the source models.
    pub lambda_source: f64,
    /// λ > 0 of the target low-level models: the strength of the pull towards the source model.
    pub lambda_target: f64,
    /// λ > 0 of the target high-level model.
    pub lambda_high: f64,
    /// Share of target rows used for the high level, strictly between 0 and 1.
    pub high_fraction: f64,
    /// An intercept in the source models and in both target levels.
    pub intercept: bool,
    /// Public ranges, one per column, for the source and the target low-level models (see
    /// [`StackingConfig::ranges`]). `None`: the features are used as given.
    pub ranges: Option<Vec<FeatureRange>>,
}

/// Source models, the target's stacked model, and a guarantee per data set.
#[derive(Debug, Clone)]
pub struct TransferFit {
    /// w_src,k, one per feature group (inputs clipped to ‖x_(k)‖ ≤ q_k).
    pub source_models: Vec<LogisticModel>,
    /// The target's PST-F fit (its `privacy` is the target guarantee).
    pub target: StackedFit,
    /// The guarantee for the source data: (ε_src, 0).
    pub source_privacy: PrivacyLoss,
    /// The guarantee for the target data: (ε_tgt, 0).
    pub target_privacy: PrivacyLoss,
}

/// Source half of PST-H: the jointly calibrated low-level models on the source data, with an
/// intercept each when `intercept`.
pub fn fit_source_models(
    source: &Dataset,
    groups: &FeatureGroups,
    epsilon_source: f64,
    lambda_source: f64,
    intercept: bool,
    rng: &RngSource,
) -> Result<Vec<LogisticModel>> {
    fit_source_models_with_ranges(
        source,
        groups,
        epsilon_source,
        lambda_source,
        intercept,
        None,
        rng,
    )
}

/// [`fit_source_models`] with public ranges, one per column of the source data: model k maps
/// the columns of group k by theirs (checked before anything is drawn).
pub fn fit_source_models_with_ranges(
    source: &Dataset,
    groups: &FeatureGroups,
    epsilon_source: f64,
    lambda_source: f64,
    intercept: bool,
    ranges: Option<&[FeatureRange]>,
    rng: &RngSource,
) -> Result<Vec<LogisticModel>> {
    check_epsilon(epsilon_source)?;
    check_lambda(lambda_source)?;
    check_group_features(source, groups)?;
    if let Some(r) = ranges {
        check_ranges(r, source.n_features())?;
    }
    let calibration =
        low_level_calibration(epsilon_source, source.n_rows(), groups, lambda_source)?;
    let low = fit_groups(
        source,
        groups,
        &calibration,
        lambda_source,
        None,
        InputSpec { intercept, ranges },
        &rng.derive(STREAM_SOURCE),
    )?;
    Ok(low.into_iter().map(|m| m.model).collect())
}

/// Target half of PST-H: PST-F on the target data anchored at the given source models (which
/// may come from another party's `fit_source_models`). Source model k must map its inputs by
/// the target's ranges of group k's columns (none when the target has none).
pub fn fit_target_with_source(
    target: &Dataset,
    groups: &FeatureGroups,
    source_models: &[LogisticModel],
    config: &StackingConfig,
    rng: &RngSource,
) -> Result<StackedFit> {
    if source_models.len() != groups.len() {
        return Err(Error::DimensionMismatch {
            what: "number of source models (one per group)".into(),
            expected: groups.len(),
            got: source_models.len(),
        });
    }
    check_group_features(target, groups)?;
    if let Some(r) = &config.ranges {
        check_ranges(r, target.n_features())?;
    }
    for (k, (m, features)) in source_models.iter().zip(groups.groups()).enumerate() {
        if m.ranges() != group_ranges(config.ranges.as_deref(), features).as_deref() {
            return Err(Error::SourceRangesMismatch { group: k });
        }
    }
    // Solver coordinates; a source model without intercept anchors the target's w_c at 0. A
    // source model with one and a target without is refused by the anchor's length.
    let anchors: Vec<Vec<f64>> = source_models
        .iter()
        .map(|m| {
            let mut w = m.solver_weights();
            if config.intercept && m.intercept().is_none() {
                w.push(0.0);
            }
            w
        })
        .collect();
    fit_feature_stack(
        target,
        groups,
        Some(&anchors),
        config,
        &rng.derive(STREAM_TARGET),
    )
}

/// PST-H (Alg. 4): source models at ε_src, then PST-F on the target at ε_tgt anchored at them.
pub fn fit_pst_h(
    source: &Dataset,
    target: &Dataset,
    groups: &FeatureGroups,
    config: &TransferConfig,
    rng: &RngSource,
) -> Result<TransferFit> {
    if source.n_features() != target.n_features() {
        return Err(Error::DimensionMismatch {
            what: "features of the target vs the source data".into(),
            expected: source.n_features(),
            got: target.n_features(),
        });
    }
    let target_config = StackingConfig {
        epsilon: config.epsilon_target,
        lambda: config.lambda_target,
        lambda_high: config.lambda_high,
        high_fraction: config.high_fraction,
        intercept: config.intercept,
        ranges: config.ranges.clone(),
    };
    let source_models = fit_source_models_with_ranges(
        source,
        groups,
        config.epsilon_source,
        config.lambda_source,
        config.intercept,
        config.ranges.as_deref(),
        rng,
    )?;
    let target_fit = fit_target_with_source(target, groups, &source_models, &target_config, rng)?;
    Ok(TransferFit {
        source_models,
        target: target_fit,
        source_privacy: privacy_loss(config.epsilon_source),
        target_privacy: privacy_loss(config.epsilon_target),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::synthetic_dataset;

    fn groups() -> FeatureGroups {
        FeatureGroups::new(vec![vec![0, 1], vec![2, 3, 4]], vec![0.6, 0.4], 5).unwrap()
    }

    #[test]
    fn strong_transfer_pulls_target_models_to_the_source() {
        let source = synthetic_dataset(400, 5, 1.0, 1);
        let target = synthetic_dataset(60, 5, 1.0, 2);
        let config = TransferConfig {
            epsilon_source: 1.0,
            epsilon_target: f64::INFINITY,
            lambda_source: 0.01,
            lambda_target: 1e6,
            lambda_high: 0.01,
            high_fraction: 0.5,
            intercept: true,
            ranges: None,
        };
        let fit = fit_pst_h(
            &source,
            &target,
            &groups(),
            &config,
            &RngSource::InsecureFixedSeed(3),
        )
        .unwrap();
        for (low, src) in fit.target.model.low_level().iter().zip(&fit.source_models) {
            for (a, b) in low.model.weights().iter().zip(src.weights()) {
                assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
            }
            assert_eq!(low.model.input_radius(), src.input_radius());
            let (a, b) = (low.model.intercept().unwrap(), src.intercept().unwrap());
            assert!(
                (a - b).abs() < 1e-4 * (1.0 + b.abs()),
                "intercept {a} vs {b}"
            );
        }
        assert_eq!(fit.source_privacy.epsilon, 1.0);
        assert_eq!(fit.target_privacy.epsilon, f64::INFINITY);
    }

    #[test]
    fn source_models_are_the_jointly_calibrated_low_level() {
        // The source half is the PST-F low level on all source rows: same weights as
        // fit_groups with the joint calibration and the documented stream.
        let source = synthetic_dataset(200, 5, 1.0, 1);
        let rng = RngSource::InsecureFixedSeed(4);
        let models = fit_source_models(&source, &groups(), 0.5, 0.01, true, &rng).unwrap();
        let calibration = low_level_calibration(0.5, 200, &groups(), 0.01).unwrap();
        // joint ε′ = ε − Σ_k log(1 + q_k²/(2nλ) + q_k⁴/(16n²λ²)), not ε per group
        assert!(calibration.epsilon_prime < 0.5);
        let direct = fit_groups(
            &source,
            &groups(),
            &calibration,
            0.01,
            None,
            InputSpec {
                intercept: true,
                ranges: None,
            },
            &rng.derive(STREAM_SOURCE),
        )
        .unwrap();
        for (m, g) in models.iter().zip(&direct) {
            assert_eq!(m, &g.model);
        }
    }

    #[test]
    fn mismatched_domains_are_refused() {
        let source = synthetic_dataset(100, 5, 1.0, 1);
        let target = synthetic_dataset(40, 4, 1.0, 2);
        let config = TransferConfig {
            epsilon_source: 1.0,
            epsilon_target: 1.0,
            lambda_source: 0.01,
            lambda_target: 0.1,
            lambda_high: 0.01,
            high_fraction: 0.5,
            intercept: true,
            ranges: None,
        };
        let rng = RngSource::InsecureFixedSeed(0);
        assert!(matches!(
            fit_pst_h(&source, &target, &groups(), &config, &rng),
            Err(Error::DimensionMismatch { .. })
        ));
        let target = synthetic_dataset(40, 5, 1.0, 2);
        let wrong = vec![LogisticModel::new(vec![0.0; 2], 0.6).unwrap()];
        assert!(
            fit_target_with_source(
                &target,
                &groups(),
                &wrong,
                &StackingConfig::new(1.0, 0.1),
                &rng
            )
            .is_err()
        );
        let wrong_width = vec![
            LogisticModel::new(vec![0.0; 3], 0.6).unwrap(),
            LogisticModel::new(vec![0.0; 3], 0.4).unwrap(),
        ];
        assert!(matches!(
            fit_target_with_source(
                &target,
                &groups(),
                &wrong_width,
                &StackingConfig::new(1.0, 0.1),
                &rng
            ),
            Err(Error::DimensionMismatch { .. })
        ));
    }
}
