//! The linear regression a statistician fits on real data: an intercept, the data's own units,
//! a ridge that adapts to the release, intervals that carry the noise, and a DP R² against the
//! constant predictor — from one Gaussian release of the statistics of the [`Design`].
//!
//! **Estimator.** Each record is mapped onto the design z = (1, x̃), ỹ ([`crate::design`]) and
//! one round releases Σzzᵀ, Σzỹ and Σỹ² with Gaussian noise (TA, DCA or input perturbation).
//! With an intercept, the released Σx̃ and Σỹ give the DP means m = Σx̃/n, m_y = Σỹ/n (n is
//! public under replace-one), and the slopes solve the centred normal equations
//! (C + r I + σ̂²λ₀ I) b = c with C = Σx̃x̃ᵀ − n m mᵀ and c = Σx̃ỹ − n m m_y; the intercept is
//! m_y − bᵀm, never shrunk or clipped. This is the same as centring x̃ and ỹ by their DP means.
//!
//! **Adaptive ridge.** The noise E of the released Gram has spectral norm about 2σ_e√d (σ_e the
//! noise sd of one entry), so directions of C with eigenvalue below that are the noise's. The
//! ridge r = max(0, 2σ_e√d − λ_min(C̃)) lifts the released centred Gram's smallest eigenvalue to
//! that level and no further: zero on well-conditioned data, where a fixed ridge only biases,
//! and about the noise's edge on collinear data (the role of AdaSSP's DP λ_min estimate, Wang
//! 2018, here read off the release itself, so it costs no budget).
//!
//! **Intervals.** The posterior of θ = (a, b) given the released statistics is approximated by
//! σ̂²A (sampling: σ̂²M⁻¹ for b, M = C̃ + rI + σ̂²λ₀I) plus A R Aᵀ, the first-order effect of the
//! release's noise (sd σ_c in the cross products, σ_G in the Gram) on the solution of the
//! normal equations of (1, x̃) — including the noise of the DP means, which enters through the
//! intercept's row (`release_noise_covariance`); σ̂² = RSS′/(n − p) from the release (below).
//! They are for the population least-squares coefficients of the records as clipped to the
//! public ranges — the raw data's wherever the ranges hold them, as a codebook's do — and cover
//! them at 0.84–0.97 (90% intervals) wherever the fit keeps its slopes, in the calibration
//! study of `examples/regression_calibration.rs` (docs/src/results/regression-calibration.md);
//! a fit that is the constant gives no slope intervals and says why in its warnings.
//!
//! **DP R².** From the released statistics alone (post-processing): RSS′ = TSS − (bᵀc̃ −
//! σ_c² tr(M⁻¹)) against TSS = Σỹ² − n m_y² (the constant predictor m_y), as an adjusted R²,
//! 1 − [RSS′/(n − p)] / [TSS/(n − 1)]: σ_c² tr(M⁻¹) is the part of the explained sum of
//! squares bᵀc̃ the release's noise contributes on average — without it the in-sample R² of
//! noisy statistics is above the constant's even when x says nothing about y — and bᵀc is at
//! most a ridge fit's explained sum 2bᵀc − bᵀCb, so the estimate errs towards the residual.
//! A fit whose R² is not above twice its noise sd (first order, from the blocks' noise) is not
//! shown to beat the constant: it is the constant, and says so in [`Regression::warnings`].

use dp_noise::PrivacyLoss;
use dp_noise::accountant::{Accountant, GaussianComposition};
use dp_noise::rng::RngSource;
use faer::{Mat, Side};
use projection::holders::{Grouping, Holders};
use projection::release::{
    Aggregation, DcaTransport, InProcess, Noise, Release, ReleaseContext, release_held,
};

use crate::block_shares::{BlockNoise, apply};
use crate::contribution::Contribution;
use crate::design::Design;
use crate::error::{Error, Result, check_xy};
use crate::narrowing::{Narrowing, adaptive_spreads, narrowed};
use crate::noise_warning::noise_dominance_warning;
use crate::sensitivity::rho_from_budget;
use crate::stats::{SuffStats, packed_index};

/// A regression's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct RegressionConfig {
    /// The public ranges and the intercept.
    pub design: Design,
    /// Trusted aggregator, DCA, or input perturbation.
    pub aggregation: Aggregation,
    /// Total (ε, δ) of the fit: one Gaussian round, charged in zCDP.
    pub budget: PrivacyLoss,
    /// Prior precision λ₀ of each slope on the design's unit scale (1: a slope of order one
    /// across a column's public range is plausible).
    pub prior_precision: f64,
    /// A ranges round before the statistics round ([`crate::narrowing`]; the default), or
    /// `None`: one round on the public ranges as given.
    pub narrowing: Option<Narrowing>,
}

impl RegressionConfig {
    /// DCA over the default settings, prior precision 1.
    pub fn new(design: Design, budget: PrivacyLoss) -> Self {
        RegressionConfig {
            design,
            aggregation: Aggregation::Distributed(Default::default()),
            budget,
            prior_precision: 1.0,
            narrowing: Some(Narrowing::default()),
        }
    }
}

/// A fitted regression, in the data's units unless a field says otherwise.
#[derive(Clone, Debug)]
pub struct Regression {
    /// The public ranges the fit was made with (what [`Regression::predict`] applies).
    pub design: Design,
    /// The intercept (with [`Design::intercept`]; otherwise the value fixed by the ranges'
    /// centres).
    pub intercept: f64,
    /// One slope per column of x.
    pub coefficients: Vec<f64>,
    /// Covariance of (intercept, slopes), `(d + 1) × (d + 1)`.
    pub covariance: Mat<f64>,
    /// The residual sd σ̂.
    pub residual_sd: f64,
    /// The DP adjusted R² from the released statistics (module docs); `None` when their total
    /// sum of squares is not positive (noise swamped it) or there are no more records than
    /// coefficients.
    pub r_squared: Option<f64>,
    /// The sd of the release's noise in [`Regression::r_squared`] (first order); slopes are kept
    /// only when the R² is above twice it.
    pub r_squared_sd: f64,
    /// The constant predictor the R² is measured against: the DP mean of y (with an intercept),
    /// else the centre of y's range.
    pub constant: f64,
    /// The ridge r added to the released centred Gram, on the design's unit scale.
    pub ridge: f64,
    /// Noise sd of one released entry of each block, on the design's unit scale.
    pub noise: BlockNoise,
    /// The released statistics of the design (unit scale; `stats.n` records).
    pub stats: SuffStats,
    /// What the accountant charged.
    pub spent: PrivacyLoss,
    /// What a reader must know: noise that dominates, a fit no better than the constant.
    pub warnings: Vec<String>,
}

/// Fits on rows held in this process, one record per DCA client (row-major `x`, `n × d`).
///
/// # Errors
/// Shapes, the design's ranges, the budget, or the release refused.
pub fn fit_regression(
    x: &[f64],
    y: &[f64],
    config: &RegressionConfig,
    rng: RngSource,
) -> Result<Regression> {
    let d = config.design.columns();
    check_xy(x, y, y.len(), d)?;
    let holders = Holders::Here {
        x,
        y,
        d,
        grouping: Grouping::OneRowEach,
    };
    fit_regression_held(&holders, config, rng, &mut InProcess)
}

/// Fits over any [`Holders`] (rows here, grouped into data holders, or kept by remote parties
/// that follow [`Contribution::DesignMoments`] and [`Contribution::DesignStatistics`]). With
/// [`RegressionConfig::narrowing`] the ranges round is round 1 of `transport` and the statistics
/// round round 2; without it the statistics round is round 1.
///
/// # Errors
/// As [`fit_regression`].
pub fn fit_regression_held(
    holders: &Holders<'_>,
    config: &RegressionConfig,
    rng: RngSource,
    transport: &mut dyn DcaTransport,
) -> Result<Regression> {
    let public = &config.design;
    public.validate()?;
    if let Holders::Here { d, .. } = holders
        && *d != public.columns()
    {
        return Err(Error::LengthMismatch {
            what: "public ranges of x (one per column)",
            expected: *d,
            got: public.columns(),
        });
    }
    crate::error::check_positive("prior precision λ₀", config.prior_precision)?;
    if let Some(narrowing) = &config.narrowing {
        narrowing.validate()?;
    }
    config.budget.validate()?;
    holders.validate()?;
    let rho = rho_from_budget(config.budget)?;
    let mut accountant = Accountant::with_composition(config.budget, GaussianComposition::Zcdp)?;
    let mut round = |contribution: Contribution, rho: f64, step: u64| -> Result<Release> {
        let noise = Noise::Gaussian {
            l2_sensitivity: contribution.l2_sensitivity()?,
            rho,
        };
        let ctx = ReleaseContext {
            aggregation: config.aggregation,
            round: step,
            rng: rng.derive(step),
            accountant: &mut accountant,
        };
        let published = contribution.to_json();
        Ok(contribution
            .with_rule(|rule| release_held(holders, rule, &published, &noise, ctx, transport))?)
    };
    let (design, rho, step) = match &config.narrowing {
        None => (public.clone(), rho, 1),
        Some(narrowing) => {
            let moments = Contribution::DesignMoments {
                design: public.clone(),
            };
            let released = round(moments, narrowing.share * rho, 1)?;
            let n = holders.records_in(released.included.as_ref());
            let rho = (1.0 - narrowing.share) * rho;
            let spreads = match narrowing.spreads {
                Some(k) => k,
                None => {
                    // The statistics round's noise on one cross product, per record.
                    let joint = projection::release::zcdp_sigma(public.l2_sensitivity()?, rho)?;
                    let cross = public.block_noise(joint);
                    adaptive_spreads(cross.cross / n.max(1) as f64)
                }
            };
            let noise_sd = released.noise_sd.iter().copied().fold(0.0, f64::max);
            (
                narrowed(public, &released.sum, n, spreads, noise_sd)?,
                rho,
                2,
            )
        }
    };
    let statistics = Contribution::DesignStatistics {
        design: design.clone(),
    };
    let released = round(statistics, rho, step)?;
    let n = holders.records_in(released.included.as_ref());
    let mut flat = released.sum;
    apply(&mut flat, design.width(), design.weights(), true);
    let stats = SuffStats::from_flat(&flat, design.width(), n, true)?;
    let joint = released.noise_sd.iter().copied().fold(0.0, f64::max);
    let noise = design.block_noise(joint);
    let mut fit = regression_from_stats(&design, &stats, noise, config.prior_precision)?;
    fit.spent = accountant.spent();
    if let Some(w) = noise_dominance_warning(&stats, noise.gram, n, config.budget.epsilon) {
        fit.warnings.insert(0, w);
    }
    Ok(fit)
}

/// The model from released statistics of `design` (post-processing only, the blocks' weights
/// divided out): `noise` is the noise sd of one entry of each block ([`BlockNoise::NONE`] for
/// exact statistics, a NON-PRIVATE fit).
///
/// # Errors
/// Statistics of another width, non-finite values, or a failed eigendecomposition.
pub fn regression_from_stats(
    design: &Design,
    stats: &SuffStats,
    noise: BlockNoise,
    prior_precision: f64,
) -> Result<Regression> {
    stats.validate()?;
    if stats.d != design.width() {
        return Err(Error::LengthMismatch {
            what: "statistics (design width)",
            expected: design.width(),
            got: stats.d,
        });
    }
    crate::error::check_non_negative("Gram noise sd", noise.gram)?;
    crate::error::check_non_negative("cross-product noise sd", noise.cross)?;
    crate::error::check_non_negative("Σy² noise sd", noise.yy)?;
    let centred = Centred::of(design, stats);
    let d = centred.c.len();
    let n = stats.n as f64;
    let evd = centred
        .gram
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| Error::Eigendecomposition)?;
    let eigenvalues: Vec<f64> = evd.S().column_vector().iter().copied().collect();
    let vectors = evd.U().to_owned();
    let c_eig = transpose_times(&vectors, &centred.c);
    let p = design.width() as f64;
    let tss = centred.yy;
    let variance_floor = 1e-3 * tss.max(0.0) / n + 1e-12;
    let fit_at = |ridge: f64| -> Candidate {
        let solve = |sigma2: f64| -> (Vec<f64>, Vec<f64>) {
            let m: Vec<f64> = eigenvalues
                .iter()
                .map(|s| (s + ridge).max(0.0) + sigma2 * prior_precision)
                .collect();
            let w: Vec<f64> = c_eig.iter().zip(&m).map(|(c, m)| c / m).collect();
            (times(&vectors, &w), m)
        };
        // The explained sum of squares is read as bᵀc̃ = c̃ᵀM⁻¹c̃, less σ_c² tr(M⁻¹), what the
        // release's noise in c̃ adds to it on average — so fitted noise is not counted as
        // signal. bᵀc is at most the explained sum 2bᵀc − bᵀCb of a ridge fit, so this errs
        // towards the residual; the quadratic form in the noisy Gram does not, and was measured
        // to put the residual sum of squares at a seventh of its exact value (ISLR Wage, ε = 1).
        let rss_of = |b: &[f64], m: &[f64]| -> f64 {
            let noise_explained: f64 = m.iter().map(|m| noise.cross.powi(2) / m).sum();
            tss - (dot(b, &centred.c) - noise_explained)
        };
        // σ² ≤ the total variance: a first solve with it, then with the residual variance.
        let (b1, m1) = solve((tss / n).max(variance_floor));
        let sigma2 = (rss_of(&b1, &m1) / (n - p).max(1.0)).max(variance_floor);
        let (b, m) = solve(sigma2);
        let r_squared = (tss > 0.0 && n > p + 1.0)
            .then(|| 1.0 - (rss_of(&b, &m) / (n - p)) / (tss / (n - 1.0)));
        // The release's noise in R² ≈ explained / TSS, to first order: the explained sum
        // c̃ᵀM⁻¹c̃ varies by 2σ_c⁴ tr(M⁻²) + 4σ_c² ‖M⁻¹c‖², TSS = Σỹ² − n m_y² by
        // σ_yy² + 4 m_y² σ_c² (m_y = Σỹ/n, Σỹ an entry of the cross block).
        let explained = tss - rss_of(&b, &m);
        let var_explained = 2.0 * noise.cross.powi(4) * m.iter().map(|m| m.powi(-2)).sum::<f64>()
            + 4.0 * noise.cross.powi(2) * dot(&b, &b);
        let var_tss = noise.yy.powi(2) + 4.0 * (centred.mean_y * noise.cross).powi(2);
        let r_squared_sd =
            (var_explained / tss.powi(2) + explained.powi(2) * var_tss / tss.powi(4)).sqrt();
        Candidate {
            ridge,
            b,
            m,
            sigma2,
            r_squared,
            r_squared_sd,
        }
    };
    let lambda_min = eigenvalues.iter().copied().fold(f64::INFINITY, f64::min);
    let edge = 2.0 * noise.gram * (d as f64).sqrt();
    let base = (edge - lambda_min).max(0.0);
    let ridges = std::iter::once(base).chain(
        (0..6)
            .filter(|_| edge > 0.0)
            .map(|k| base + edge * 4f64.powi(k)),
    );
    let mut best = fit_at(base);
    for ridge in ridges.skip(1) {
        let candidate = fit_at(ridge);
        if candidate.r_squared.unwrap_or(f64::NEG_INFINITY)
            > best.r_squared.unwrap_or(f64::NEG_INFINITY)
        {
            best = candidate;
        }
    }
    let shown = |c: &Candidate| c.r_squared.is_some_and(|r| r > SHOWN_BY * c.r_squared_sd);
    let no_better = !shown(&best) && design.intercept;
    let Candidate {
        ridge,
        mut b,
        m,
        sigma2,
        r_squared,
        r_squared_sd,
    } = best;
    // M⁻¹ on the unit scale, from M's eigenvalues.
    let m_inv = Mat::from_fn(d, d, |i, j| {
        (0..d)
            .map(|k| vectors[(i, k)] * vectors[(j, k)] / m[k])
            .sum::<f64>()
    });
    // (a, b) on the unit scale and their covariance: a = m_y − bᵀm (0 without an intercept).
    let mut theta = vec![0.0; d + 1];
    let mean = &centred.mean_x;
    let cov = if no_better {
        // The constant m_y = Σỹ/n: no slope is estimated (their errors are NaN, set below);
        // its sampling variance and the noise ζ/n of the released Σỹ.
        b.iter_mut().for_each(|v| *v = 0.0);
        theta[0] = centred.mean_y;
        let mut cov = Mat::<f64>::zeros(d + 1, d + 1);
        cov[(0, 0)] = tss.max(0.0) / (n * (n - 1.0).max(1.0)) + noise.cross.powi(2) / (n * n);
        cov
    } else {
        theta[1..].copy_from_slice(&b);
        if design.intercept {
            theta[0] = centred.mean_y - dot(&b, mean);
        }
        let map = solution_map(&m_inv, mean, n, design.intercept);
        let noise_cov = release_noise_covariance(&map, &theta, noise, design.intercept);
        Mat::from_fn(d + 1, d + 1, |i, j| {
            sigma2 * map[(i, j)] + noise_cov[(i, j)]
        })
    };
    let (intercept, coefficients, mut covariance) = to_data_units(design, &theta, &cov);
    if no_better {
        for i in 0..=d {
            for j in 1..=d {
                covariance[(i, j)] = f64::NAN;
                covariance[(j, i)] = f64::NAN;
            }
        }
    }
    let constant = design.y.from_unit(centred.mean_y);
    let mut warnings = Vec::new();
    match r_squared {
        Some(r2) if r2 > SHOWN_BY * r_squared_sd => {}
        Some(r2) if design.intercept => warnings.push(format!(
            "no slope is better than the constant predictor {constant:.4} by more than the \
             release's noise (best DP R² = {r2:.3}, noise sd {r_squared_sd:.3}): the fit is that \
             constant, with every slope 0 and without standard errors or intervals (the \
             slopes' are NaN); more rows, a larger ε or tighter public ranges are needed"
        )),
        Some(r2) => warnings.push(format!(
            "the model is no better than the constant predictor {constant:.4} (DP R² = {r2:.3} \
             from the released statistics): its predictions should not be used; more rows, a \
             larger ε, tighter public ranges or an intercept are needed"
        )),
        None => warnings.push(
            "the released total sum of squares of y is not positive: the noise swamped the \
             statistics, so neither the fit nor its R² can be trusted"
                .to_string(),
        ),
    }
    Ok(Regression {
        design: design.clone(),
        intercept,
        coefficients,
        covariance,
        residual_sd: sigma2.sqrt() * design.y.half_width(),
        r_squared,
        r_squared_sd,
        constant,
        ridge,
        noise,
        stats: stats.clone(),
        spent: PrivacyLoss {
            epsilon: 0.0,
            delta: 0.0,
        },
        warnings,
    })
}

impl Regression {
    /// Predictions for raw rows (row-major, one value per column of x, in the data's units):
    /// each value is clipped to its public range as in the fit, and each prediction to y's.
    ///
    /// # Errors
    /// Rows of the wrong width or non-finite values.
    pub fn predict(&self, x: &[f64]) -> Result<Vec<f64>> {
        predict_rows(&self.design, self.intercept, &self.coefficients, x)
    }

    /// Standard errors of (intercept, slopes); NaN for slopes not estimated (a fit that is the
    /// constant predictor).
    pub fn std_errors(&self) -> Vec<f64> {
        (0..self.covariance.nrows())
            .map(|i| {
                let v = self.covariance[(i, i)];
                if v.is_nan() { v } else { v.max(0.0).sqrt() }
            })
            .collect()
    }

    /// Normal intervals of (intercept, slopes) at `level` in (0, 1), e.g. 0.95.
    ///
    /// # Errors
    /// `level` outside (0, 1).
    pub fn confint(&self, level: f64) -> Result<Vec<(f64, f64)>> {
        if !(level > 0.0 && level < 1.0) {
            return Err(Error::OutOfRange {
                name: "interval level",
                value: level,
                requirement: "in (0, 1)",
            });
        }
        let z = crate::noise_aware::standard_normal_quantile(0.5 + level / 2.0);
        let estimates = std::iter::once(self.intercept).chain(self.coefficients.iter().copied());
        Ok(estimates
            .zip(self.std_errors())
            .map(|(e, s)| (e - z * s, e + z * s))
            .collect())
    }

    /// A table as `lm`'s `summary` prints it, with the privacy spent.
    pub fn summary(&self, names: &[&str]) -> String {
        let se = self.std_errors();
        let ci = self.confint(0.95).unwrap_or_default();
        let mut out = format!(
            "{:<16} {:>14} {:>12} {:>14} {:>14}\n",
            "", "Estimate", "Std. Error", "2.5 %", "97.5 %"
        );
        let estimates = std::iter::once(self.intercept).chain(self.coefficients.iter().copied());
        for (i, e) in estimates.enumerate() {
            let name = match i {
                0 => "(Intercept)".to_string(),
                j => names
                    .get(j - 1)
                    .map_or_else(|| format!("x{j}"), |s| s.to_string()),
            };
            let (lo, hi) = ci.get(i).copied().unwrap_or((f64::NAN, f64::NAN));
            out += &format!(
                "{name:<16} {e:>14.6} {:>12.6} {lo:>14.6} {hi:>14.6}\n",
                se[i]
            );
        }
        let r2 = self
            .r_squared
            .map_or_else(|| "not available".to_string(), |r| format!("{r:.4}"));
        out += &format!(
            "Residual sd: {:.6} on {} records; DP R²: {r2} (against the constant {:.6})\n\
             Privacy spent: ε = {}, δ = {:e}\n",
            self.residual_sd, self.stats.n, self.constant, self.spent.epsilon, self.spent.delta
        );
        for w in &self.warnings {
            out += &format!("Warning: {w}\n");
        }
        out
    }
}

/// Predictions of the model `intercept + Σ coefficients_j x_j` fitted with `design`, for raw
/// rows (row-major, one value per column of x, in the data's units): each value is clipped to
/// its public range as in the fit, and each prediction to y's. What [`Regression::predict`]
/// computes, for a model read back from its published form (a job's result).
///
/// # Errors
/// Rows of the wrong width, non-finite values, or one coefficient per column not given.
pub fn predict_rows(
    design: &Design,
    intercept: f64,
    coefficients: &[f64],
    x: &[f64],
) -> Result<Vec<f64>> {
    let d = design.columns();
    if coefficients.len() != d {
        return Err(Error::LengthMismatch {
            what: "coefficients (one per column of the design)",
            expected: d,
            got: coefficients.len(),
        });
    }
    design.check_rows(x)?;
    let y = &design.y;
    Ok(x.chunks_exact(d)
        .map(|row| {
            let clipped = row
                .iter()
                .zip(&design.x)
                .zip(coefficients)
                .map(|((v, r), b)| b * v.clamp(r.lower, r.upper));
            (intercept + clipped.sum::<f64>()).clamp(y.lower, y.upper)
        })
        .collect())
}

/// A fit keeps its slopes only when its DP R² is above this many of its noise sds: an R² the
/// release's noise alone could produce (measured: the main job's diabetes fits at ε ≤ 2, n = 342,
/// had a median DP R² above 0 and a median test R² of −0.64 to −0.04) is not shown to beat the
/// constant.
const SHOWN_BY: f64 = 2.0;

/// One ridge's fit: the slopes, M's eigenvalues, σ̂², the DP R² and its noise sd.
struct Candidate {
    ridge: f64,
    b: Vec<f64>,
    m: Vec<f64>,
    sigma2: f64,
    r_squared: Option<f64>,
    r_squared_sd: f64,
}

/// The released statistics centred by their DP means.
struct Centred {
    gram: Mat<f64>,
    c: Vec<f64>,
    yy: f64,
    mean_x: Vec<f64>,
    mean_y: f64,
}

impl Centred {
    fn of(design: &Design, stats: &SuffStats) -> Self {
        let p = stats.d;
        let g = |j: usize, k: usize| stats.xx[packed_index(j.min(k), j.max(k), p)];
        let n = stats.n as f64;
        if !design.intercept {
            return Centred {
                gram: Mat::from_fn(p, p, g),
                c: stats.xy.clone(),
                yy: stats.yy,
                mean_x: vec![0.0; p],
                mean_y: 0.0,
            };
        }
        let d = p - 1;
        let mean_x: Vec<f64> = (1..p).map(|j| g(0, j) / n).collect();
        let mean_y = stats.xy[0] / n;
        Centred {
            gram: Mat::from_fn(d, d, |j, k| g(j + 1, k + 1) - n * mean_x[j] * mean_x[k]),
            c: (0..d)
                .map(|j| stats.xy[j + 1] - n * mean_x[j] * mean_y)
                .collect(),
            yy: stats.yy - n * mean_y * mean_y,
            mean_x,
            mean_y,
        }
    }
}

/// (a, b) and their covariance on the unit scale → intercept, slopes and covariance in the
/// data's units: y = centre_y + h_y (a + Σ b_j (x_j − c_j)/h_j), (c_j, h_j) column j's map
/// ([`Design::column_map`]).
fn to_data_units(design: &Design, theta: &[f64], cov: &Mat<f64>) -> (f64, Vec<f64>, Mat<f64>) {
    let d = design.columns();
    let hy = design.y.half_width();
    let maps: Vec<(f64, f64)> = (0..d).map(|j| design.column_map(j)).collect();
    // θ_data = t₀ + T θ: row 0 of T = h_y (1, −c₁/h₁, …), row j = h_y/h_j e_j.
    let t = Mat::from_fn(d + 1, d + 1, |i, j| match (i, j) {
        (0, 0) => hy,
        (0, j) => -hy * maps[j - 1].0 / maps[j - 1].1,
        (i, j) if i == j => hy / maps[i - 1].1,
        _ => 0.0,
    });
    let data: Vec<f64> = (0..=d)
        .map(|i| (0..=d).map(|j| t[(i, j)] * theta[j]).sum())
        .collect();
    let cov_data = &t * cov * t.transpose();
    (design.y.centre() + data[0], data[1..].to_vec(), cov_data)
}

/// The linear map A from the residuals r of the normal equations of θ = (a, b) (row 0 the
/// constant's, rows 1..=d the columns') to the change of θ, on the unit scale: with the
/// intercept unpenalised and w = M⁻¹m, q = mᵀw,
///
/// ```text
/// A = [ 1/n + q   −wᵀ  ]        (the inverse of [ n  n mᵀ ; n m  M + n m mᵀ ],
///     [   −w      M⁻¹  ]         the normal equations of (1, x̃) with the ridge on b)
/// ```
///
/// so σ̂²A is the sampling covariance of θ (σ̂²M⁻¹ for b, σ̂²(1/n + mᵀM⁻¹m) for a). Without an
/// intercept only the M⁻¹ block is non-zero.
fn solution_map(m_inv: &Mat<f64>, mean: &[f64], n: f64, intercept: bool) -> Mat<f64> {
    let d = m_inv.nrows();
    let mut a = Mat::<f64>::zeros(d + 1, d + 1);
    for i in 0..d {
        for j in 0..d {
            a[(i + 1, j + 1)] = m_inv[(i, j)];
        }
    }
    if intercept {
        let w: Vec<f64> = (0..d)
            .map(|i| (0..d).map(|j| m_inv[(i, j)] * mean[j]).sum())
            .collect();
        a[(0, 0)] = 1.0 / n + dot(mean, &w);
        for i in 0..d {
            a[(0, i + 1)] = -w[i];
            a[(i + 1, 0)] = -w[i];
        }
    }
    a
}

/// The covariance of θ = (a, b) that the release's noise causes, to first order, on the unit
/// scale: A R Aᵀ with A from [`solution_map`] and R the covariance of the residual
/// r = δc − δG θ of the normal equations of z = (1, x̃) under the released noise.
///
/// Why each term: the released Gram G of z has noise of sd σ_G on every entry but the
/// constant's own (n, public), the released cross products Σzỹ noise of sd σ_c, all
/// independent (the Gram's symmetric entries are one release each). Writing ξ_j for the noise
/// of Σx̃_j (the Gram's row 0), E for that of Σx̃x̃ᵀ, ζ of Σỹ and η of Σx̃ỹ,
///
/// ```text
/// r_0 = ζ − ξᵀb                       Var = σ_c² + σ_G²‖b‖²
/// r_j = η_j − a ξ_j − (E b)_j         Var = σ_c² + σ_G²(a² + ‖b‖²),
///                                     Cov(r_j, r_l) = σ_G² b_j b_l (j ≠ l, the shared E_jl),
///                                     Cov(r_0, r_j) = σ_G² a b_j (the shared ξ_j)
/// ```
///
/// Solving the centred equations with the DP means is the same as solving these, so the noise
/// of the means (ξ, ζ) enters through r_0 and through a ξ_j: on data whose mapped intercept a
/// is far from 0 (a target far from its range's centre) the term σ_G² a² is the largest, and
/// intervals with only σ_c² + σ_G²‖b‖² (the centred, mean-known case) were measured to be
/// 1.2–1.5 times too narrow (`examples/regression_calibration.rs`, the skewed design). M, the
/// ridge and σ̂² are held fixed (first order in the noise).
fn release_noise_covariance(
    map: &Mat<f64>,
    theta: &[f64],
    noise: BlockNoise,
    intercept: bool,
) -> Mat<f64> {
    let p = theta.len();
    let (sg2, sc2) = (noise.gram.powi(2), noise.cross.powi(2));
    let a = if intercept { theta[0] } else { 0.0 };
    let b = &theta[1..];
    let b_norm2 = dot(b, b);
    let r = Mat::from_fn(p, p, |i, j| match (i, j) {
        (0, 0) => sc2 + sg2 * b_norm2,
        (0, j) => sg2 * a * b[j - 1],
        (i, 0) => sg2 * a * b[i - 1],
        (i, j) if i == j => sc2 + sg2 * (a * a + b_norm2),
        (i, j) => sg2 * b[i - 1] * b[j - 1],
    });
    map * &r * map.transpose()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn transpose_times(u: &Mat<f64>, v: &[f64]) -> Vec<f64> {
    (0..u.ncols())
        .map(|c| (0..u.nrows()).map(|r| u[(r, c)] * v[r]).sum())
        .collect()
}

fn times(u: &Mat<f64>, w: &[f64]) -> Vec<f64> {
    (0..u.nrows())
        .map(|r| (0..u.ncols()).map(|c| u[(r, c)] * w[c]).sum())
        .collect()
}

#[cfg(test)]
#[path = "regression_tests.rs"]
mod tests;
