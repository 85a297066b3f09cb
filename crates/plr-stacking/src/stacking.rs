//! Privacy-preserving stacking: PST-S (sample partitions, stacking paper Alg. 2) and PST-F
//! (feature partitions with importance, Alg. 3). PST-H (Alg. 4) builds on the same pieces in
//! `transfer`.
//!
//! Guarantee (ε-DP for the training data set, replace-one neighbours). The rows are split at
//! random — independently of their values — into D^l (low level) and D^h (high level).
//! * PST-S: D^l is cut into K disjoint parts S_k; PLR at ε on each S_k, PLR at ε on D^h.
//!   A record lies in exactly one of S_1..S_K, D^h, so only one ε-DP release sees it: parallel
//!   composition (McSherry 2009, Thm 4) gives ε overall.
//! * PST-F: the K low-level models see every row of D^l but disjoint feature groups, with rows
//!   of group k clipped to ‖x_(k)‖ ≤ q_k and a shared ε′ (see `calibration`): jointly ε-DP for
//!   D^l (Lemma 8). The high level is PLR at ε on D^h. D^l and D^h are disjoint: ε overall.
//!
//! The high level's inputs m_k = (2σ(x_(k)ᵀw_k) − 1)/√K lie in (−1/√K, 1/√K), so ‖m‖ < 1 as
//! PLR requires; the map uses only the released low-level models (post-processing) and public
//! constants. (The affine map 2σ − 1 centres the inputs and uses the whole interval. With an
//! intercept the shift alone would be subsumed, but σ/√K would use half the interval: the
//! same fit needs weights twice as large, against the same noise b and regulariser. Kept;
//! not measured against σ/√K.)
//!
//! With [`StackingConfig::intercept`] (on in [`StackingConfig::new`]) every level's PLR gets
//! an intercept: each solver row is (φ(x_(k)), q_k/√2) with ‖φ(x_(k))‖ ≤ q_k/√2, so the norm
//! bound ‖row‖ ≤ q_k that PLR's and PST-F's calibrations rest on still holds (see
//! `plr::fit_perturbed`).
//!
//! With [`StackingConfig::ranges`] (public, one per column of the data) each low-level model
//! maps its own columns, in its own order, by their ranges before the norm clipping, exactly
//! as PLR does: φ is a per-record map of public constants followed by the same projection, so
//! the norm bound and every calibration above are unchanged. The model keeps its ranges, so
//! [`StackedModel::predict_proba`] takes rows in the data's units. The high level reads the
//! meta features, which are already in (−1/√K, 1/√K): it has no ranges.

use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use faer::Mat;

use crate::calibration::{Calibration, check_epsilon, check_lambda};
use crate::data::{Dataset, FeatureRange, check_finite, check_ranges};
use crate::error::{Error, Result};
use crate::model::LogisticModel;
use crate::partition::{FeatureGroups, contiguous_blocks, permutation};
use crate::plr::{InputSpec, fit_perturbed, privacy_loss};

/// Random stream of low-level model k is `rng.derive(k)`; these are the other streams.
pub const STREAM_HIGH_LEVEL: u64 = 1 << 32;
/// Stream of the D^l / D^h split (and of the PST-S parts).
pub const STREAM_SPLIT: u64 = (1 << 32) + 1;

/// Parameters of PST-S and PST-F.
#[derive(Debug, Clone, PartialEq)]
pub struct StackingConfig {
    /// Privacy budget ε > 0 for the training data set (∞ = non-private).
    pub epsilon: f64,
    /// Regularisation λ_k > 0 of every low-level model.
    pub lambda: f64,
    /// Regularisation λ > 0 of the high-level model.
    ///
    /// The paper uses the low level's λ. The high level's ε′ = ε − log(1 + 1/(2n_hλ) + …) then
    /// keeps little of a small ε when λ is small (0.19 of ε = 0.5 with n_h = 1500, λ = 1e-3),
    /// while its K weights on inputs of norm < 1 need little data: λ_high = 0.1 on 20% of the
    /// rows beat PLR at ε = 0.5, 1, 2 where the paper's setting lost at ε = 0.5
    /// (docs/src/results/stacking.md, `stacking --vs-plr`).
    pub lambda_high: f64,
    /// Share of rows in D^h, strictly between 0 and 1 (the paper uses 0.5).
    pub high_fraction: f64,
    /// An intercept in every low-level model and in the high-level model (the paper's models
    /// have none).
    pub intercept: bool,
    /// Public ranges, one per column of the data (codebooks, physical limits — never the
    /// private data): every low-level model clamps each of its columns into the column's range
    /// and maps it onto [−1, 1] before the norm clipping, as
    /// [`PlrConfig::ranges`](crate::PlrConfig::ranges) does. `None`: the features are used as
    /// given.
    pub ranges: Option<Vec<FeatureRange>>,
}

impl StackingConfig {
    /// The paper's setting — one λ for both levels, D^l and D^h halves — with intercepts.
    pub fn new(epsilon: f64, lambda: f64) -> Self {
        StackingConfig {
            epsilon,
            lambda,
            lambda_high: lambda,
            high_fraction: 0.5,
            intercept: true,
            ranges: None,
        }
    }

    /// How the low level reads the data's columns (before a group picks its own).
    fn low_input(&self) -> InputSpec<'_> {
        InputSpec {
            intercept: self.intercept,
            ranges: self.ranges.as_deref(),
        }
    }

    /// How the high level reads the meta features: no ranges (they are in (−1/√K, 1/√K)).
    fn high_input(&self) -> InputSpec<'static> {
        InputSpec {
            intercept: self.intercept,
            ranges: None,
        }
    }

    /// Checks every parameter, the ranges against the data's `n_features` columns included;
    /// called before anything is drawn.
    fn validate(&self, n_features: usize) -> Result<()> {
        check_epsilon(self.epsilon)?;
        check_lambda(self.lambda)?;
        check_lambda(self.lambda_high)?;
        if !(self.high_fraction > 0.0 && self.high_fraction < 1.0) {
            return Err(Error::InvalidParameter {
                name: "high_fraction",
                value: self.high_fraction,
                requirement: "strictly between 0 and 1",
            });
        }
        if let Some(r) = &self.ranges {
            check_ranges(r, n_features)?;
        }
        Ok(())
    }
}

/// One low-level model and the features it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LowLevelModel {
    /// Indices of the input features this model reads, in order.
    pub features: Vec<usize>,
    /// The model on those features.
    pub model: LogisticModel,
}

/// A two-level stacked logistic model: K low-level models and a high-level model on their
/// centred, rescaled outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct StackedModel {
    n_features: usize,
    low: Vec<LowLevelModel>,
    high: LogisticModel,
}

impl StackedModel {
    /// Assembles a stacked model (e.g. from exported parts); checks every index and size.
    pub fn new(n_features: usize, low: Vec<LowLevelModel>, high: LogisticModel) -> Result<Self> {
        if low.is_empty() {
            return Err(Error::Empty {
                what: "low-level models".into(),
            });
        }
        if high.n_features() != low.len() {
            return Err(Error::DimensionMismatch {
                what: "high-level weights (one per low-level model)".into(),
                expected: low.len(),
                got: high.n_features(),
            });
        }
        for m in &low {
            if m.features.len() != m.model.n_features() {
                return Err(Error::DimensionMismatch {
                    what: "low-level feature list vs weights".into(),
                    expected: m.model.n_features(),
                    got: m.features.len(),
                });
            }
            if let Some(&j) = m.features.iter().find(|&&j| j >= n_features) {
                return Err(Error::BadFeatureIndex {
                    index: j,
                    reason: "out of range",
                });
            }
        }
        Ok(StackedModel {
            n_features,
            low,
            high,
        })
    }

    /// Number of input features.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// The low-level models.
    pub fn low_level(&self) -> &[LowLevelModel] {
        &self.low
    }

    /// The high-level model (input: one centred, rescaled output per low-level model).
    pub fn high_level(&self) -> &LogisticModel {
        &self.high
    }

    /// The high-level inputs m_k = (2σ(z_k) − 1)/√K for row-major rows `x`, row-major n × K.
    pub fn meta_features(&self, x: &[f64]) -> Result<Vec<f64>> {
        let d = self.n_features;
        if x.is_empty() || !x.len().is_multiple_of(d) {
            return Err(Error::DimensionMismatch {
                what: "rows length (a positive multiple of the number of features)".into(),
                expected: d,
                got: x.len(),
            });
        }
        check_finite(x, "rows")?;
        let k = self.low.len();
        let scale = 1.0 / (k as f64).sqrt();
        let mut out = Vec::with_capacity(x.len() / d * k);
        let mut buffer = Vec::new();
        for row in x.chunks_exact(d) {
            for m in &self.low {
                buffer.clear();
                buffer.extend(m.features.iter().map(|&j| row[j]));
                // 2σ(z) − 1 = tanh(z/2)
                out.push((0.5 * m.model.margin_of_row(&mut buffer)).tanh() * scale);
            }
        }
        Ok(out)
    }

    /// Predicted probabilities p(y = 1 | x) for row-major rows `x`.
    pub fn predict_proba(&self, x: &[f64]) -> Result<Vec<f64>> {
        self.high.predict_proba(&self.meta_features(x)?)
    }
}

/// A fitted stacked model and what it cost.
#[derive(Debug, Clone)]
pub struct StackedFit {
    /// The model.
    pub model: StackedModel,
    /// The guarantee for the training data set: (ε, 0), by parallel composition.
    pub privacy: PrivacyLoss,
    /// Calibrations of the low level: one per part (PST-S) or one joint (PST-F).
    pub low_calibration: Vec<Calibration>,
    /// Calibration of the high-level PLR.
    pub high_calibration: Calibration,
}

/// PST-S (Alg. 2): D^l cut into `n_parts` random disjoint parts, PLR on each, PLR on D^h over
/// the low-level outputs. Randomness: split from `rng.derive(STREAM_SPLIT)`, part k's noise
/// from `rng.derive(k)`, the high level's from `rng.derive(STREAM_HIGH_LEVEL)`.
pub fn fit_pst_s(
    data: &Dataset,
    n_parts: usize,
    config: &StackingConfig,
    rng: &RngSource,
) -> Result<StackedFit> {
    config.validate(data.n_features())?;
    if n_parts == 0 {
        return Err(Error::InvalidParameter {
            name: "n_parts",
            value: 0.0,
            requirement: "≥ 1 (PST-S needs at least one part)",
        });
    }
    let (low_rows, high_rows) = split_rows(data.n_rows(), config.high_fraction, n_parts, rng)?;
    let all_features: Vec<usize> = (0..data.n_features()).collect();
    let anchor = vec![0.0; data.n_features() + usize::from(config.intercept)];
    let mut low = Vec::with_capacity(n_parts);
    let mut low_calibration = Vec::with_capacity(n_parts);
    for (k, part) in contiguous_blocks(&low_rows, n_parts).iter().enumerate() {
        let part = data.subset(part);
        let calibration = Calibration::plr(config.epsilon, part.n_rows(), config.lambda)?;
        let model = fit_perturbed(
            &part,
            None,
            calibration.groups[0],
            config.lambda,
            &anchor,
            config.low_input(),
            &rng.derive(k as u64),
        )?;
        low.push(LowLevelModel {
            features: all_features.clone(),
            model,
        });
        low_calibration.push(calibration);
    }
    finish(data, &high_rows, low, low_calibration, config, rng)
}

/// PST-F (Alg. 3): low-level PLR on each feature group of D^l with rows of group k clipped to
/// ‖x_(k)‖ ≤ q_k and the joint calibration, then PLR on D^h over their outputs. The importances
/// inside `groups` must come from side information, never from the private data. Randomness:
/// split from `rng.derive(STREAM_SPLIT)`, group k's noise from `rng.derive(k)`, the high
/// level's from `rng.derive(STREAM_HIGH_LEVEL)`.
pub fn fit_pst_f(
    data: &Dataset,
    groups: &FeatureGroups,
    config: &StackingConfig,
    rng: &RngSource,
) -> Result<StackedFit> {
    fit_feature_stack(data, groups, None, config, rng)
}

/// PST-F with low-level regularisers ½‖w − anchor_k‖² (anchors `None` = 0); shared by PST-H.
pub(crate) fn fit_feature_stack(
    data: &Dataset,
    groups: &FeatureGroups,
    anchors: Option<&[Vec<f64>]>,
    config: &StackingConfig,
    rng: &RngSource,
) -> Result<StackedFit> {
    config.validate(data.n_features())?;
    check_group_features(data, groups)?;
    let (low_rows, high_rows) = split_rows(data.n_rows(), config.high_fraction, 1, rng)?;
    let low_data = data.subset(&low_rows);
    let low_calibration =
        low_level_calibration(config.epsilon, low_data.n_rows(), groups, config.lambda)?;
    let low = fit_groups(
        &low_data,
        groups,
        &low_calibration,
        config.lambda,
        anchors,
        config.low_input(),
        rng,
    )?;
    finish(data, &high_rows, low, vec![low_calibration], config, rng)
}

/// The joint calibration of K low-level models on n rows with one λ.
pub(crate) fn low_level_calibration(
    epsilon: f64,
    n: usize,
    groups: &FeatureGroups,
    lambda: f64,
) -> Result<Calibration> {
    Calibration::feature_groups(epsilon, n, groups.importance(), &vec![lambda; groups.len()])
}

/// The K low-level fits of Alg. 3 steps 4–13 (anchors in solver coordinates: the weights, then
/// the intercept's w_c with an intercept); `input.ranges` are the data's (checked), group k
/// reads those of its columns; group k's noise from `rng.derive(k)`.
#[allow(clippy::too_many_arguments)] // crate-internal; the fit's parts, not a public API
pub(crate) fn fit_groups(
    data: &Dataset,
    groups: &FeatureGroups,
    calibration: &Calibration,
    lambda: f64,
    anchors: Option<&[Vec<f64>]>,
    input: InputSpec<'_>,
    rng: &RngSource,
) -> Result<Vec<LowLevelModel>> {
    if let Some(a) = anchors
        && a.len() != groups.len()
    {
        return Err(Error::DimensionMismatch {
            what: "number of source models (one per group)".into(),
            expected: groups.len(),
            got: a.len(),
        });
    }
    let mut low = Vec::with_capacity(groups.len());
    for (k, (features, &noise)) in groups.groups().iter().zip(&calibration.groups).enumerate() {
        let zero;
        let anchor = match anchors {
            Some(a) => &a[k],
            None => {
                zero = vec![0.0; features.len() + usize::from(input.intercept)];
                &zero
            }
        };
        let ranges = group_ranges(input.ranges, features);
        let model = fit_perturbed(
            data,
            Some(features),
            noise,
            lambda,
            anchor,
            InputSpec {
                intercept: input.intercept,
                ranges: ranges.as_deref(),
            },
            &rng.derive(k as u64),
        )?;
        low.push(LowLevelModel {
            features: features.clone(),
            model,
        });
    }
    Ok(low)
}

/// The ranges of `features`, in their order, from the data's (checked) ranges.
pub(crate) fn group_ranges(
    ranges: Option<&[FeatureRange]>,
    features: &[usize],
) -> Option<Vec<FeatureRange>> {
    ranges.map(|r| features.iter().map(|&j| r[j]).collect())
}

/// Fits the high level on D^h and assembles the result.
fn finish(
    data: &Dataset,
    high_rows: &[usize],
    low: Vec<LowLevelModel>,
    low_calibration: Vec<Calibration>,
    config: &StackingConfig,
    rng: &RngSource,
) -> Result<StackedFit> {
    let k = low.len();
    // Placeholder high level (zero weights) only to evaluate the low level on D^h.
    let probe = StackedModel::new(
        data.n_features(),
        low,
        LogisticModel::new(vec![0.0; k], 1.0)?,
    )?;
    let high_data = data.subset(high_rows);
    let mut rows = Vec::with_capacity(high_data.n_rows() * data.n_features());
    for i in 0..high_data.n_rows() {
        rows.extend((0..data.n_features()).map(|j| high_data.x[(i, j)]));
    }
    let meta = probe.meta_features(&rows)?;
    let meta = Dataset {
        x: Mat::from_fn(high_data.n_rows(), k, |i, j| meta[i * k + j]),
        y: high_data.y.clone(),
    };
    let high_calibration = Calibration::plr(config.epsilon, meta.n_rows(), config.lambda_high)?;
    let high = fit_perturbed(
        &meta,
        None,
        high_calibration.groups[0],
        config.lambda_high,
        &vec![0.0; k + usize::from(config.intercept)],
        config.high_input(),
        &rng.derive(STREAM_HIGH_LEVEL),
    )?;
    Ok(StackedFit {
        model: StackedModel::new(data.n_features(), probe.low, high)?,
        privacy: privacy_loss(config.epsilon),
        low_calibration,
        high_calibration,
    })
}

/// Groups must index into the data's features.
pub(crate) fn check_group_features(data: &Dataset, groups: &FeatureGroups) -> Result<()> {
    if groups.n_features() != data.n_features() {
        return Err(Error::DimensionMismatch {
            what: "features of the data vs of the feature groups".into(),
            expected: groups.n_features(),
            got: data.n_features(),
        });
    }
    Ok(())
}

/// Random split of 0..n into D^l and D^h (⌊n·high_fraction⌉ rows), both non-empty and D^l
/// with at least `min_low` rows. Independent of the data's values.
pub(crate) fn split_rows(
    n: usize,
    high_fraction: f64,
    min_low: usize,
    rng: &RngSource,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let n_high = (n as f64 * high_fraction).round() as usize;
    // `min_low` is a caller's part count: the sum must not wrap (usize::MAX parts).
    let needed = n_high.checked_add(min_low.max(1));
    if n_high == 0 || needed.is_none_or(|needed| n < needed) {
        return Err(Error::PartitionTooSmall {
            rows: n,
            high_rows: n_high,
            min_low_rows: min_low.max(1),
        });
    }
    let mut generator = rng.derive(STREAM_SPLIT).try_rng()?;
    let order = permutation(n, &mut generator);
    let (high, low) = order.split_at(n_high);
    Ok((low.to_vec(), high.to_vec()))
}

#[cfg(test)]
mod ranges_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::auc;
    use crate::plr::{PlrConfig, fit_plr};
    use crate::test_support::{synthetic, synthetic_dataset};

    /// D^l exactly as the stacking fits draw it, restricted to `columns`.
    fn low_half(x: &[f64], y: &[f64], d: usize, columns: &[usize], rng: &RngSource) -> Dataset {
        let (low, _) = split_rows(y.len(), 0.5, 1, rng).unwrap();
        let rows: Vec<f64> = low
            .iter()
            .flat_map(|&i| columns.iter().map(move |&j| x[i * d + j]))
            .collect();
        let labels: Vec<f64> = low.iter().map(|&i| y[i]).collect();
        Dataset::from_rows(&rows, columns.len(), &labels).unwrap()
    }

    #[test]
    fn one_group_of_importance_one_is_plr_on_that_group() {
        // Remark 1: with one group of importance 1, the low level of Alg. 3 is Alg. 1 on that
        // group (same ε′, Δ, scaling, noise stream) — identical weights, bit for bit.
        let d = 6;
        let (x, y) = synthetic(120, d, 1.0, 21);
        let data = Dataset::from_rows(&x, d, &y).unwrap();
        let rng = RngSource::InsecureFixedSeed(77);
        // With and without intercept: the same holds for the rows (φ(x), 1/√2).
        for (epsilon, intercept) in [(0.05, false), (1.0, false), (0.05, true), (1.0, true)] {
            // ε = 0.05 takes the Δ branch (n = 60, λ = 0.01: ε′ = 0.05 − 0.6 < 0).
            let config = StackingConfig {
                intercept,
                ..StackingConfig::new(epsilon, 0.01)
            };
            let plr = PlrConfig {
                intercept,
                ..PlrConfig::new(epsilon, 0.01)
            };
            let all: Vec<usize> = (0..d).collect();
            let single = FeatureGroups::new(vec![all.clone()], vec![1.0], d).unwrap();
            let stacked = fit_pst_f(&data, &single, &config, &rng).unwrap();
            let reference =
                fit_plr(&low_half(&x, &y, d, &all, &rng), &plr, &rng.derive(0)).unwrap();
            assert_eq!(stacked.model.low_level()[0].model, reference.model);
            assert_eq!(
                stacked.low_calibration[0].groups,
                reference.calibration.groups
            );

            // Only the first of two groups has non-zero importance.
            let first = vec![4, 1, 2];
            let pair =
                FeatureGroups::new(vec![first.clone(), vec![0, 3, 5]], vec![1.0, 0.0], d).unwrap();
            let stacked = fit_pst_f(&data, &pair, &config, &rng).unwrap();
            let reference =
                fit_plr(&low_half(&x, &y, d, &first, &rng), &plr, &rng.derive(0)).unwrap();
            assert_eq!(stacked.model.low_level()[0].model, reference.model);
        }
    }

    #[test]
    fn stacking_learns_and_reports_its_guarantee() {
        let d = 10;
        // one draw (one generating w), split into train and test
        let (x, y) = synthetic(1800, d, 1.0, 4);
        let (train_x, test_x) = x.split_at(1200 * d);
        let (train_y, test_y) = y.split_at(1200);
        let train = Dataset::from_rows(train_x, d, train_y).unwrap();
        let rng = RngSource::InsecureFixedSeed(5);
        let config = StackingConfig::new(f64::INFINITY, 1e-3);
        let groups = FeatureGroups::sorted_blocks(
            &(0..d).map(|j| 1.0 / (1 + j) as f64).collect::<Vec<_>>(),
            2,
        )
        .unwrap();
        let f = fit_pst_f(&train, &groups, &config, &rng).unwrap();
        let s = fit_pst_s(&train, 3, &config, &rng).unwrap();
        for fit in [&f, &s] {
            let p = fit.model.predict_proba(test_x).unwrap();
            assert!(p.iter().all(|&v| (0.0..=1.0).contains(&v)));
            let a = auc(&p, test_y).unwrap();
            // Measured: PST-F 0.800 (0.811 under the map x·q/max(1, ‖x‖), which keeps
            // the magnitude of rows with q < ‖x_(k)‖ < 1 that clipping reduces to a direction).
            assert!(a > 0.78, "non-private stacking AUC {a}");
        }
        let private = fit_pst_f(&train, &groups, &StackingConfig::new(1.0, 1e-3), &rng).unwrap();
        assert_eq!(private.privacy.epsilon, 1.0);
        assert_eq!(private.privacy.delta, 0.0);
        // meta features are inside the unit ball
        let m = private.model.meta_features(test_x).unwrap();
        assert!(
            m.chunks(2)
                .all(|r| r.iter().map(|v| v * v).sum::<f64>() < 1.0)
        );
        assert_eq!(s.low_calibration.len(), 3);
    }

    #[test]
    fn bad_partitions_and_parameters_are_refused() {
        let d = 4;
        let data = synthetic_dataset(10, d, 1.0, 8);
        let rng = RngSource::InsecureFixedSeed(1);
        let config = StackingConfig::new(1.0, 0.1);
        // 5 rows in D^l cannot make 6 non-empty parts
        assert!(matches!(
            fit_pst_s(&data, 6, &config, &rng),
            Err(Error::PartitionTooSmall {
                rows: 10,
                high_rows: 5,
                min_low_rows: 6
            })
        ));
        assert!(fit_pst_s(&data, 0, &config, &rng).is_err());
        let tiny = synthetic_dataset(1, d, 1.0, 8);
        assert!(matches!(
            fit_pst_s(&tiny, 1, &config, &rng),
            Err(Error::PartitionTooSmall { rows: 1, .. })
        ));
        // groups for another width
        let other = FeatureGroups::uniform(vec![vec![0], vec![1]], 3).unwrap();
        assert!(matches!(
            fit_pst_f(&data, &other, &config, &rng),
            Err(Error::DimensionMismatch { .. })
        ));
        let groups = FeatureGroups::uniform(vec![vec![0, 1], vec![2, 3]], d).unwrap();
        for bad in [
            StackingConfig {
                high_fraction: 1.0,
                ..config.clone()
            },
            StackingConfig {
                lambda_high: 0.0,
                ..config.clone()
            },
            StackingConfig {
                epsilon: f64::NAN,
                ..config.clone()
            },
        ] {
            assert!(matches!(
                fit_pst_f(&data, &groups, &bad, &rng),
                Err(Error::InvalidParameter { .. })
            ));
        }
        let model = fit_pst_f(&data, &groups, &config, &rng).unwrap().model;
        assert!(
            model
                .predict_proba(&[0.0, 1.0, f64::INFINITY, 0.0])
                .is_err()
        );
        assert!(model.predict_proba(&[0.0; 5]).is_err());
        // import checks
        let high = LogisticModel::new(vec![1.0], 1.0).unwrap();
        assert!(StackedModel::new(d, model.low_level().to_vec(), high).is_err());
    }
}
