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
//!   of group k scaled to ‖x_(k)‖ ≤ q_k and a shared ε′ (see `calibration`): jointly ε-DP for
//!   D^l (Lemma 8). The high level is PLR at ε on D^h. D^l and D^h are disjoint: ε overall.
//! The high level's inputs m_k = (2σ(x_(k)ᵀw_k) − 1)/√K lie in (−1/√K, 1/√K), so ‖m‖ < 1 as
//! PLR requires; the map uses only the released low-level models (post-processing) and public
//! constants. (The affine shift by ½ centres the inputs, since the model has no intercept.)

use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use faer::Mat;
use rand_chacha::ChaCha20Rng;

use crate::calibration::{Calibration, check_epsilon, check_lambda};
use crate::data::{Dataset, check_finite};
use crate::error::{Error, Result};
use crate::model::LogisticModel;
use crate::partition::{FeatureGroups, contiguous_blocks, permutation};
use crate::plr::{fit_perturbed, privacy_loss};

/// Random stream of low-level model k is `rng.derive(k)`; these are the other streams.
pub const STREAM_HIGH_LEVEL: u64 = 1 << 32;
/// Stream of the D^l / D^h split (and of the PST-S parts).
pub const STREAM_SPLIT: u64 = (1 << 32) + 1;

/// Parameters of PST-S and PST-F.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StackingConfig {
    /// Privacy budget ε > 0 for the training data set (∞ = non-private).
    pub epsilon: f64,
    /// Regularisation λ_k > 0 of every low-level model.
    pub lambda: f64,
    /// Regularisation λ > 0 of the high-level model.
    pub lambda_high: f64,
    /// Share of rows in D^h, strictly between 0 and 1 (the paper uses 0.5).
    pub high_fraction: f64,
}

impl StackingConfig {
    /// The paper's setting: one λ for both levels, D^l and D^h halves.
    pub fn new(epsilon: f64, lambda: f64) -> Self {
        StackingConfig {
            epsilon,
            lambda,
            lambda_high: lambda,
            high_fraction: 0.5,
        }
    }

    fn validate(&self) -> Result<()> {
        check_epsilon(self.epsilon)?;
        check_lambda(self.lambda)?;
        check_lambda(self.lambda_high)?;
        if !(self.high_fraction > 0.0 && self.high_fraction < 1.0) {
            return Err(Error::InvalidParameter {
                name: "high_fraction",
                reason: format!("{} is not strictly between 0 and 1", self.high_fraction),
            });
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
        if x.is_empty() || x.len() % d != 0 {
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
    config.validate()?;
    if n_parts == 0 {
        return Err(Error::InvalidParameter {
            name: "n_parts",
            reason: "PST-S needs at least one part".into(),
        });
    }
    let (low_rows, high_rows) = split_rows(data.n_rows(), config.high_fraction, n_parts, rng)?;
    let all_features: Vec<usize> = (0..data.n_features()).collect();
    let anchor = vec![0.0; data.n_features()];
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

/// PST-F (Alg. 3): low-level PLR on each feature group of D^l with rows of group k scaled to
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
    config.validate()?;
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

/// The K low-level fits of Alg. 3 steps 4–13; group k's noise from `rng.derive(k)`.
pub(crate) fn fit_groups(
    data: &Dataset,
    groups: &FeatureGroups,
    calibration: &Calibration,
    lambda: f64,
    anchors: Option<&[Vec<f64>]>,
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
                zero = vec![0.0; features.len()];
                &zero
            }
        };
        let model = fit_perturbed(
            data,
            Some(features),
            noise,
            lambda,
            anchor,
            &rng.derive(k as u64),
        )?;
        low.push(LowLevelModel {
            features: features.clone(),
            model,
        });
    }
    Ok(low)
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
        &vec![0.0; k],
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
    if n_high == 0 || n < n_high + min_low.max(1) {
        return Err(Error::Empty {
            what: format!(
                "a partition: {n} rows cannot give D^h {n_high} > 0 rows and D^l at least {} \
                 (one per part)",
                min_low.max(1)
            ),
        });
    }
    let mut generator: ChaCha20Rng = rng
        .derive(STREAM_SPLIT)
        .try_rng()
        .map_err(|e| Error::Noise(e.to_string()))?;
    let order = permutation(n, &mut generator);
    let (high, low) = order.split_at(n_high);
    Ok((low.to_vec(), high.to_vec()))
}
