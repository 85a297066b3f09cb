//! The threshold search of Alg. 2 step 3 with this crate's learner: on auxiliary data scaled like
//! the DP σ estimates, clip at B_j = ω_x σ_j and B_y = ω_y σ_y, add the noise the real release
//! would add for those bounds (same mechanism, budget and aggregation), fit the posterior, predict
//! the unprojected auxiliary targets and score. Only synthetic data are touched: no privacy cost.
//!
//! Noise uses common random numbers: one standard draw z per repeat, scaled by each grid point's
//! noise scale, which keeps the error surface smooth. DCA's sum of per-client discrete Gaussians
//! is modelled by a continuous Gaussian of the same total variance σ²·N/(N − T − 1) (input
//! perturbation: N·σ²); at our grid resolutions the difference is far below the search noise.

use projection::Aggregation;
use projection::auxiliary::{AuxData, AuxSpec};
use projection::clip::clip;
use projection::release::Noise;
use projection::search::{SearchConfig, ThresholdChoice, ThresholdObjective, search_thresholds};
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, Exp1, StandardNormal};

use crate::error::{Error, Result};
use crate::metrics::{SpearmanTruth, mae, rmse, spearman};
use crate::posterior::{MeanWorkspace, Prior, noise_ridge};
use crate::ssp::{Mechanism, RoundBudget, stats_noise};
use crate::stats::{SuffStats, packed_gram, packed_len};

/// What the search minimises on auxiliary data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorMeasure {
    /// Mean absolute error (DCA paper).
    Mae,
    /// Root mean squared error.
    Rmse,
    /// Minus Spearman's ρ (robust LR paper).
    Spearman,
}

impl ErrorMeasure {
    /// The error (lower is better) of `predicted` against `truth`.
    pub fn error(self, truth: &[f64], predicted: &[f64]) -> Result<f64> {
        match self {
            ErrorMeasure::Mae => mae(truth, predicted),
            ErrorMeasure::Rmse => rmse(truth, predicted),
            ErrorMeasure::Spearman => Ok(-spearman(truth, predicted)?),
        }
    }
}

/// Everything about the real release the search must imitate.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchTarget {
    /// σ̂ of each x dimension (from the DP std round).
    pub sigma_x: Vec<f64>,
    /// σ̂ of y.
    pub sigma_y: f64,
    /// Number of records of the real data.
    pub n: usize,
    /// Mechanism of the statistics release.
    pub mechanism: Mechanism,
    /// Its budget.
    pub budget: RoundBudget,
    /// Who adds the noise (sets the total noise variance).
    pub aggregation: Aggregation,
    /// Model precisions used in the fit and to generate the auxiliary data.
    pub prior: Prior,
    /// What to minimise.
    pub measure: ErrorMeasure,
}

impl SearchTarget {
    /// Auxiliary data of the target's size and scales, drawn from the model's own prior.
    pub(crate) fn aux_spec(&self) -> AuxSpec {
        AuxSpec {
            n: self.n,
            x_scales: self.sigma_x.clone(),
            y_scale: self.sigma_y,
            lambda: self.prior.lambda,
            lambda0: self.prior.lambda0,
        }
    }

    pub(crate) fn variance_factor(&self) -> Result<f64> {
        let n = self.n as f64;
        Ok(match self.aggregation {
            Aggregation::Trusted => 1.0,
            Aggregation::InputPerturbation => n,
            Aggregation::Distributed(dca) => {
                let honest = self
                    .n
                    .checked_sub(dca.max_dropped + 1)
                    .filter(|h| *h >= 1)
                    .ok_or(Error::TooFewHonestClients {
                        n: self.n,
                        max_dropped: dca.max_dropped,
                    })?;
                n / honest as f64
            }
        })
    }
}

struct Objective<'a> {
    target: &'a SearchTarget,
    sd_factor: f64,
}

impl ThresholdObjective for Objective<'_> {
    type Error = Error;

    fn errors(
        &self,
        aux: &AuxData,
        omega_x: f64,
        omega_ys: &[f64],
        rng: &mut ChaCha20Rng,
    ) -> Result<Vec<f64>> {
        let t = self.target;
        let (n, d) = (aux.n, aux.d);
        // Checked once here rather than by `predict` for every ω_y: the check reads all of x.
        projection::error::check_matrix(&aux.x, n, d, "x")?;
        // The auxiliary targets' ranks serve every ω_y.
        let mut spearman_truth = match t.measure {
            ErrorMeasure::Spearman => Some(SpearmanTruth::new(&aux.y)?),
            ErrorMeasure::Mae | ErrorMeasure::Rmse => None,
        };
        let mut predicted = vec![0.0; n];
        let bounds_x: Vec<f64> = t.sigma_x.iter().map(|s| omega_x * s).collect();
        let mut xc = projection::error::try_zeroed(aux.x.len(), "clipped auxiliary inputs")?;
        xc.copy_from_slice(&aux.x);
        for row in xc.chunks_exact_mut(d) {
            row.iter_mut()
                .zip(&bounds_x)
                .for_each(|(v, b)| *v = clip(*v, *b));
        }
        let gram = packed_gram(&xc, n, d);
        let p = packed_len(d);
        let z: Vec<f64> = (0..p + d)
            .map(|_| match t.mechanism {
                Mechanism::Gaussian => StandardNormal.sample(rng),
                Mechanism::Laplace { .. } => {
                    let e: f64 = Exp1.sample(rng);
                    let f: f64 = Exp1.sample(rng);
                    e - f
                }
            })
            .collect();
        // x column by column, for predictions computed a column at a time over all rows (the
        // same sum per row, term by term in the same order, as `predict`'s).
        let mut x_columns = projection::error::try_zeroed(aux.x.len(), "auxiliary columns")?;
        for (i, row) in aux.x.chunks_exact(d).enumerate() {
            for (j, v) in row.iter().enumerate() {
                x_columns[j * n + i] = *v;
            }
        }
        // `Iterator::sum`'s starting value for f64, so that the sums below are its sums.
        let sum_start: f64 = std::iter::empty::<f64>().sum();
        let mut yc = projection::error::try_zeroed(n, "clipped auxiliary targets")?;
        let mut workspace = MeanWorkspace::new(d);
        let mut stats = SuffStats {
            d,
            n,
            xx: gram.clone(),
            xy: vec![0.0; d],
            yy: 0.0,
        };
        let mut mean = vec![0.0; d];
        let mut scales: Vec<f64> = Vec::with_capacity(p + d);
        omega_ys
            .iter()
            .map(|oy| {
                let by = oy * t.sigma_y;
                yc.iter_mut()
                    .zip(&aux.y)
                    .for_each(|(c, v)| *c = clip(*v, by));
                scales.clear();
                match stats_noise(&bounds_x, by, false, t.mechanism, t.budget)? {
                    Noise::Gaussian {
                        l2_sensitivity,
                        rho,
                    } => scales.resize(
                        p + d,
                        projection::zcdp_sigma(l2_sensitivity, rho)? * self.sd_factor,
                    ),
                    Noise::Laplace {
                        scales: laplace, ..
                    } => scales.extend(laplace.iter().map(|s| s * self.sd_factor)),
                }
                stats.xx.copy_from_slice(&gram);
                stats.xy.fill(0.0);
                for (row, c) in xc.chunks_exact(d).zip(&yc) {
                    stats.xy.iter_mut().zip(row).for_each(|(a, v)| *a += v * c);
                }
                stats
                    .xx
                    .iter_mut()
                    .chain(stats.xy.iter_mut())
                    .zip(&z)
                    .zip(&scales)
                    .for_each(|((v, z), s)| *v += z * s);
                // The real fit's ridge for the same noise (Laplace scale b: sd b√2).
                let xx_sd = scales[..p].iter().fold(0.0, |m: f64, s| m.max(*s))
                    * match t.mechanism {
                        Mechanism::Gaussian => 1.0,
                        Mechanism::Laplace { .. } => std::f64::consts::SQRT_2,
                    };
                // `posterior_ridged(..).mean` (to rounding: `MeanWorkspace`), in buffers kept across ω_y.
                workspace.mean_ridged(&stats, t.prior, noise_ridge(xx_sd, d), &mut mean)?;
                // `predict` without its check of x (done above), the same sums.
                projection::error::check_finite(&mean, d, "coefficients")?;
                predicted.fill(sum_start);
                for (column, b) in x_columns.chunks_exact(n).zip(&mean) {
                    predicted
                        .iter_mut()
                        .zip(column)
                        .for_each(|(p, a)| *p += a * b);
                }
                match spearman_truth.as_mut() {
                    Some(truth) => Ok(-truth.rho(&predicted)?),
                    None => t.measure.error(&aux.y, &predicted),
                }
            })
            .collect()
    }
}

/// Chooses (ω_x, ω_y) on auxiliary data for the release described by `target`.
pub fn search_thresholds_for(
    target: &SearchTarget,
    config: &SearchConfig,
) -> Result<ThresholdChoice> {
    let spec = target.aux_spec();
    let objective = Objective {
        target,
        sd_factor: target.variance_factor()?.sqrt(),
    };
    search_thresholds(&spec, config, &objective)
}
