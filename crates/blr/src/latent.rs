//! The latent Σxxᵀ of the noise-aware posterior ([`crate::noise_aware`]): its prior and draws of
//! it given its released value.
//!
//! **Data-model prior** ([`LatentPrior::DataModel`], the default; Bernstein & Sheldon 2019 model
//! the latent statistics through a prior on the data's moments). The records are exchangeable
//! with per-record second-moment matrix M = E[x xᵀ], and M itself is uncertain: a
//! Wishart-like prior with mean M₀ = diag(m) and ν degrees of freedom, so that
//! Var(M_jk) = (m_j m_k + [j = k] m_j²)/ν (correlations a priori 0, each entry known to about
//! 1/√ν of its scale). Σxxᵀ = Σ_i x_i x_iᵀ is a sum of n such records, so by the central limit
//! theorem, with Gaussian fourth moments (Isserlis: Var(x_j x_k) = m_j m_k + [j = k] m_j²),
//!
//!   E[(Σxxᵀ)_jk] = n [j = k] m_j,   Var[(Σxxᵀ)_jk] = (n + n²/ν)(m_j m_k + [j = k] m_j²).
//!
//! We keep these means and variances and drop the correlations between entries (a diagonal
//! approximation of the prior's covariance): every packed entry gets an independent Gaussian
//! prior. With Gaussian noise on the released entry its posterior is Gaussian (conjugate); we
//! draw it truncated to the entry's box (the public bounds, exact by entry-wise rejection).
//! Laplace noise is handled exactly by importance sampling: the proposal uses the Gaussian of the
//! Laplace's variance and each draw's log weight is corrected by log Laplace − log Gaussian of its
//! residual. Without `second_moments`, m_j = B_j²/3: the second moment of a coordinate spread
//! uniformly over its public bounds [−B_j, B_j].
//!
//! **Hyperparameters from the release** (`dof: None`, the default): how well the second moments
//! are known is itself unknown, so ν and a common scale κ of the second moments (m_j → κ m_j,
//! with κ m_j ≤ B_j² when bounds are given: a clipped coordinate's second moment cannot exceed
//! B_j²) get a uniform prior on a grid (κ = 2^(i/4) in [1/64, 4], ν = 10^(k/4) in [d + 1, 10⁶])
//! and their posterior given the released Σxxᵀ — the marginal likelihood
//! Π_e N(z_e; E(A_e), Var(A_e) + noise variance), Laplace noise by its variance. Each draw first
//! picks (κ, ν) from that posterior, then Σxxᵀ given them: a hierarchical model integrated by
//! sampling, post-processing of the release at no privacy cost. Where the release says little
//! about the second moments (small n·ε) the draws spread over the grid; records whose moments
//! match the prior's and whose inputs are uncorrelated concentrate them on large ν.
//! Only down to ν ≈ n²m²/σ² (σ the noise sd of an off-diagonal entry): above it the release
//! cannot tell ν from ∞, and the mass the grid keeps on ν < n widens the latent off-diagonals by
//! up to (1 + n/ν) in variance. That is the honest cost of not knowing the inputs' correlations,
//! and it makes the intervals conservative on uncorrelated inputs at moderate noise (book,
//! docs/src/results/blr-calibration.md); ruling it out would need prior knowledge (a fixed `dof`).
//! Simulation-based calibration (`examples/blr_calibration.rs --x-from-prior`, data drawn from
//! this prior through [`data_model_grid`] and [`entry_prior`], or as Gaussian or clipped records
//! with Wishart second moments; 500 replications per cell): the 90% intervals cover 0.891–0.910
//! in all 24 cells (with the adaptive draws of [`crate::noise_aware::AdaptiveDraws`]), so the fixed designs' misses are this prior's conditional coverage at
//! particular (κ, ν) — over at large ν, under at small ν where the data are informative — not
//! a defect of the draws, the weights or the approximations.
//!
//! **Coupled (inverse-Wishart) prior** ([`LatentPrior::Wishart`], an option, for data whose
//! second moments are coupled, where the default prior takes the entries as independent): the records'
//! second-moment matrix M ~ IW centred on κ·diag(m), ν₀ fixed or (default) uniform on a grid
//! d + 2, 10^(k/4) … 10⁶, and Σxxᵀ | M ≈ N(nM, nC(M)) with the full covariance of the packed
//! entries (Isserlis). The draws come from a Markov chain over (ν₀, κ, M, Σxxᵀ) given the
//! released Σxxᵀ (`crates/blr/src/wishart_prior.rs`: exact Gaussian Σxxᵀ | M, an inverse-Wishart
//! proposal for (ν₀, M) | Σxxᵀ, ridge and scale moves for the directions where that Gibbs
//! pair crawls); the importance weights by p(z_b | Σxxᵀ) of [`crate::noise_aware`] apply on top
//! as before. Laplace noise enters the chain as the Gaussian of its variance and each kept draw
//! is corrected by log Laplace − log Gaussian of its residual. No box truncation of the entries:
//! the bounds enter through κ·m_j ≤ B_j² and M_jj ≤ B_j².
//! Measured in docs/src/results/blr-calibration.md (200 replications per cell): on
//! independent inputs no better than the diagonal data-model prior (90% intervals cover
//! 0.904–0.934, 3 of 8 cells in 88–92%, against 4 of 8), on correlated ones better
//! (0.851–0.913, 7 of 8, against 4 of 8); hence an option, not the default.
//!
//! **Flat prior** ([`LatentPrior::Flat`]): uniform on the box the bounds allow; the posterior of
//! each entry is the public noise truncated to the box. At small n·ε this prior is far too vague
//! (its mass sits on Gram matrices no data set of that size produces), and the intervals
//! under-cover; kept for comparison (the calibration example's "before").
//!
//! All priors then mirror the entries and floor negative eigenvalues at 0 (the approximation
//! of [`crate::noise_aware`]). As the noise vanishes both give Σxxᵀ = its released value.

use dp_noise::continuous::fill_gaussian;
use dp_noise::rng::SecretRng;
use rand_core::RngCore;

use crate::error::{Error, Result};
use crate::noise_aware::EntryNoise;
use crate::stats::{packed_index, packed_len};
use crate::wishart_prior::WishartChain;

/// The prior of the latent Σxxᵀ (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatentPrior<'a> {
    /// Records with second moments E(x_j²) = m_j (uncorrelated a priori), known to within ν
    /// records' worth of evidence.
    DataModel {
        /// m_j > 0, one per input; `None` = B_j²/3 from the bounds (which are then required).
        second_moments: Option<&'a [f64]>,
        /// ν > 0 (finite): larger = the second moments are known more precisely, and used as
        /// given; `None` = ν and a common scale of the second moments integrated over their
        /// posterior given the released Σxxᵀ (module docs).
        dof: Option<f64>,
    },
    /// Uniform on the box of the bounds (or on all of the symmetric matrices without them).
    Flat,
    /// Records' second-moment matrix M ~ inverse-Wishart centred on κ·diag(m), and Σxxᵀ | M
    /// by the central limit theorem with the full covariance of its packed entries; drawn by a
    /// Markov chain over (M, Σxxᵀ) (module docs). The chain keeps every 10th of its sweeps, so
    /// a fit costs about `draws` × 10 sweeps after 200 of burn-in.
    Wishart {
        /// m_j > 0, one per input; `None` = B_j²/3 from the bounds (which are then required).
        second_moments: Option<&'a [f64]>,
        /// ν₀ > d + 1 (finite), the prior's degrees of freedom: larger = M known more
        /// precisely around κ·diag(m); `None` = ν₀ uniform on the grid d + 2, 10^(k/4) up to
        /// 10⁶ and integrated over its posterior given the release.
        dof: Option<f64>,
    },
}

impl Default for LatentPrior<'_> {
    fn default() -> Self {
        LatentPrior::DataModel {
            second_moments: None,
            dof: None,
        }
    }
}

/// How each packed entry of the latent Σxxᵀ is drawn given its released value.
#[derive(Clone, Debug)]
pub(crate) struct LatentSampler {
    noise: EntryNoise,
    /// The interval [lo, hi] each entry must lie in.
    boxes: Vec<(f64, f64)>,
    /// The data-model prior's hyperparameter settings with their posterior probabilities given
    /// the released Σxxᵀ (one setting when ν is fixed); `None` = flat prior.
    settings: Option<Vec<Setting>>,
    released: Vec<f64>,
    n: usize,
    /// The coupled prior's chain (`settings` is then `None`).
    chain: Option<WishartChain>,
}

/// One (second moments, ν) of the data-model prior.
#[derive(Clone, Debug)]
struct Setting {
    /// Posterior probability given the released Σxxᵀ (uniform prior over the grid).
    probability: f64,
    moments: Vec<f64>,
    dof: f64,
}

/// Tries per entry before falling back to clamping (only reached when the released entry lies
/// so far outside its box that the proposal has almost no mass there).
const TRUNCATION_TRIES: usize = 1000;

impl LatentSampler {
    /// The sampler for `released` packed Σxxᵀ of `n` records in `d` dimensions.
    pub(crate) fn new(
        released: &[f64],
        n: usize,
        d: usize,
        noise: EntryNoise,
        bounds_x: Option<&[f64]>,
        prior: LatentPrior<'_>,
    ) -> Result<Self> {
        let boxes = entry_boxes(n, d, bounds_x)?;
        let mut chain = None;
        let settings = match prior {
            LatentPrior::Flat => None,
            LatentPrior::Wishart {
                second_moments,
                dof,
            } => {
                let moments = second_moments_or_default(d, second_moments, bounds_x)?;
                chain = Some(WishartChain::new(
                    released, n, d, noise, moments, dof, bounds_x,
                )?);
                None
            }
            LatentPrior::DataModel {
                second_moments,
                dof,
            } => {
                let moments = second_moments_or_default(d, second_moments, bounds_x)?;
                Some(match dof {
                    Some(dof) if dof.is_finite() && dof > 0.0 => vec![Setting {
                        probability: 1.0,
                        moments,
                        dof,
                    }],
                    Some(bad) => {
                        return Err(Error::OutOfRange {
                            name: "dof (degrees of freedom of the second-moment prior)",
                            value: bad,
                            requirement: "finite and > 0",
                        });
                    }
                    None => hyperparameter_posterior(released, n, &moments, bounds_x, noise),
                })
            }
        };
        Ok(LatentSampler {
            noise,
            boxes,
            settings,
            released: released.to_vec(),
            n,
            chain,
        })
    }

    /// One draw of the packed latent Σxxᵀ into `latent`; returns the draw's log importance
    /// weight correction (0 except for Laplace noise under the data-model prior).
    pub(crate) fn draw(&mut self, rng: &mut SecretRng, latent: &mut [f64]) -> Result<f64> {
        if let Some(chain) = self.chain.as_mut() {
            return chain.draw(rng, latent);
        }
        let Some(settings) = self.settings.as_ref() else {
            self.draw_flat(rng, latent)?;
            return Ok(0.0);
        };
        // The setting by inversion of its cumulative probability (a hierarchical draw:
        // hyperparameters from their posterior, then Σxxᵀ given them).
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut index = settings.len() - 1;
        let mut cumulative = 0.0;
        for (i, setting) in settings.iter().enumerate() {
            cumulative += setting.probability;
            if u < cumulative {
                index = i;
                break;
            }
        }
        // Recomputed per draw (as cheap as the draw itself) rather than cached per setting,
        // which for large d could hold hundreds of settings × d² values.
        let setting = &settings[index];
        let proposal = gaussian_posteriors(
            &self.released,
            self.n,
            &setting.moments,
            setting.dof,
            self.noise,
        );
        self.draw_gaussian(&proposal, rng, latent)
    }

    /// z − η with η the noise truncated so that z − η is inside each entry's box.
    fn draw_flat(&self, rng: &mut SecretRng, latent: &mut [f64]) -> Result<()> {
        let mut one = [0.0];
        for ((a, &z), &(lo, hi)) in latent.iter_mut().zip(&self.released).zip(&self.boxes) {
            *a = self.truncated(
                lo,
                hi,
                rng,
                &mut one,
                |noise| z - noise,
                |rng, out| self.noise.fill(rng, out),
            )?;
        }
        Ok(())
    }

    fn draw_gaussian(
        &self,
        proposal: &[(f64, f64)],
        rng: &mut SecretRng,
        latent: &mut [f64],
    ) -> Result<f64> {
        let mut one = [0.0];
        let mut log_correction = 0.0;
        for (((a, &z), &(lo, hi)), &(mean, sd)) in latent
            .iter_mut()
            .zip(&self.released)
            .zip(&self.boxes)
            .zip(proposal)
        {
            *a = self.truncated(lo, hi, rng, &mut one, |g| mean + sd * g, standard_normal)?;
            if let EntryNoise::Laplace { scale } = self.noise
                && scale > 0.0
            {
                // log Laplace(r; b) − log N(r; 0, 2b²) up to constants shared by every draw.
                let r = z - *a;
                log_correction += -r.abs() / scale + r * r / (4.0 * scale * scale);
            }
        }
        Ok(log_correction)
    }

    /// `place(v)` for v from `fill`, redrawn until it lies in [lo, hi] (clamped after
    /// [`TRUNCATION_TRIES`]).
    fn truncated(
        &self,
        lo: f64,
        hi: f64,
        rng: &mut SecretRng,
        one: &mut [f64; 1],
        place: impl Fn(f64) -> f64,
        fill: impl Fn(&mut SecretRng, &mut [f64]) -> Result<()>,
    ) -> Result<f64> {
        for _ in 0..TRUNCATION_TRIES {
            fill(rng, one)?;
            let value = place(one[0]);
            if (lo..=hi).contains(&value) {
                return Ok(value);
            }
        }
        Ok(place(one[0]).clamp(lo, hi))
    }
}

fn standard_normal(rng: &mut SecretRng, out: &mut [f64]) -> Result<()> {
    Ok(fill_gaussian(rng, 1.0, out)?)
}

/// The caller's second moments, checked, or B_j²/3 from the bounds.
fn second_moments_or_default(
    d: usize,
    given: Option<&[f64]>,
    bounds_x: Option<&[f64]>,
) -> Result<Vec<f64>> {
    let (values, name): (Vec<f64>, _) = match (given, bounds_x) {
        (Some(m), _) => (m.to_vec(), "second_moments"),
        (None, Some(b)) => (b.iter().map(|b| b * b / 3.0).collect(), "bounds_x"),
        (None, None) => {
            return Err(Error::Empty {
                what: "second moments of the data model (give them, or bounds_x to derive them)",
            });
        }
    };
    check_per_dimension(&values, d, "second_moments (one per input dimension)", name)?;
    Ok(values)
}

/// Prior mean and variance of packed entry (j, k) (j ≤ k) of Σxxᵀ over `n` records under the
/// data-model prior with second moments `m` (already scaled by κ) and ν = `dof` (module docs):
/// the Gaussian every entry gets, independently of the others, before truncation to its box.
/// Public so that a simulation-based calibration can draw from exactly this prior.
pub fn entry_prior(j: usize, k: usize, n: f64, m: &[f64], dof: f64) -> (f64, f64) {
    let diagonal = j == k;
    let mean = if diagonal { n * m[j] } else { 0.0 };
    let fourth = m[j] * m[k] + if diagonal { m[j] * m[j] } else { 0.0 };
    (mean, (n + n * n / dof) * fourth)
}

/// The grid of (κ, ν) the default data-model prior integrates over, with a uniform prior on its
/// points (module docs): κ = 2^(i/4) for i = −24, …, 8 while κ·m_j ≤ B_j² for every j (the
/// first κ is kept even above that), ν = 10^(k/4) for k = 0, …, 24 with ν ≥ d + 1. Returned as
/// (κ, ν) pairs in the order the posterior's settings use; public so that a simulation-based
/// calibration can draw the hyperparameters from exactly this prior.
pub fn data_model_grid(moments: &[f64], bounds_x: Option<&[f64]>) -> Vec<(f64, f64)> {
    let d = moments.len();
    // κ·m_j ≤ B_j² for every j (a clipped coordinate's second moment is at most B_j²).
    let top = bounds_x.map_or(f64::INFINITY, |b| {
        b.iter()
            .zip(moments)
            .map(|(b, m)| b * b / m)
            .fold(f64::INFINITY, f64::min)
    });
    let mut grid = Vec::new();
    for i in -24..=8 {
        let kappa = 2f64.powf(i as f64 / 4.0);
        if kappa > top && !grid.is_empty() {
            break;
        }
        for k in 0..=24 {
            let dof = 10f64.powf(k as f64 / 4.0);
            if dof < (d + 1) as f64 {
                continue;
            }
            grid.push((kappa, dof));
        }
    }
    grid
}

/// The posterior of the scale κ (second moments κ·m) and ν given the released entries, on the
/// module docs' grid under a uniform prior over it (log-uniform in κ and ν).
fn hyperparameter_posterior(
    released: &[f64],
    n: usize,
    moments: &[f64],
    bounds_x: Option<&[f64]>,
    noise: EntryNoise,
) -> Vec<Setting> {
    let d = moments.len();
    let nf = n as f64;
    let noise_var = noise.variance();
    let log_likelihood = |scaled: &[f64], dof: f64| -> f64 {
        let mut total = 0.0;
        for j in 0..d {
            for k in j..d {
                let (mean, var) = entry_prior(j, k, nf, scaled, dof);
                let var = var + noise_var;
                let r = released[packed_index(j, k, d)] - mean;
                total -= 0.5 * (var.ln() + r * r / var);
            }
        }
        total
    };
    let mut settings: Vec<Setting> = data_model_grid(moments, bounds_x)
        .into_iter()
        .map(|(kappa, dof)| {
            let scaled: Vec<f64> = moments.iter().map(|m| kappa * m).collect();
            Setting {
                probability: log_likelihood(&scaled, dof),
                moments: scaled,
                dof,
            }
        })
        .collect();
    let top = settings
        .iter()
        .map(|s| s.probability)
        .fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = settings.iter().map(|s| (s.probability - top).exp()).sum();
    for setting in &mut settings {
        setting.probability = (setting.probability - top).exp() / total;
    }
    settings
}

/// Posterior (mean, sd) of each packed entry under its data-model prior and the entry's noise
/// (Laplace described by the Gaussian of its variance; corrected by the draws' weights).
fn gaussian_posteriors(
    released: &[f64],
    n: usize,
    moments: &[f64],
    dof: f64,
    noise: EntryNoise,
) -> Vec<(f64, f64)> {
    let d = moments.len();
    let n = n as f64;
    let noise_var = noise.variance();
    let mut out = vec![(0.0, 0.0); packed_len(d)];
    for j in 0..d {
        for k in j..d {
            let p = packed_index(j, k, d);
            let (prior_mean, prior_var) = entry_prior(j, k, n, moments, dof);
            out[p] = if noise_var > 0.0 {
                let var = 1.0 / (1.0 / prior_var + 1.0 / noise_var);
                (
                    var * (prior_mean / prior_var + released[p] / noise_var),
                    var.sqrt(),
                )
            } else {
                (released[p], 0.0)
            };
        }
    }
    out
}

/// `values` has one finite, positive entry per input dimension.
fn check_per_dimension(
    values: &[f64],
    d: usize,
    what: &'static str,
    name: &'static str,
) -> Result<()> {
    if values.len() != d {
        return Err(Error::LengthMismatch {
            what,
            expected: d,
            got: values.len(),
        });
    }
    if let Some(&bad) = values.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
        return Err(Error::OutOfRange {
            name,
            value: bad,
            requirement: "finite and > 0",
        });
    }
    Ok(())
}

/// The interval [lo, hi] each packed entry of the latent Σxxᵀ must lie in.
fn entry_boxes(n: usize, d: usize, bounds_x: Option<&[f64]>) -> Result<Vec<(f64, f64)>> {
    let mut boxes = vec![(f64::NEG_INFINITY, f64::INFINITY); packed_len(d)];
    for j in 0..d {
        boxes[packed_index(j, j, d)].0 = 0.0;
    }
    let Some(bounds) = bounds_x else {
        return Ok(boxes);
    };
    check_per_dimension(bounds, d, "bounds_x (one per input dimension)", "bounds_x")?;
    let n = n as f64;
    for j in 0..d {
        for k in j..d {
            let top = n * bounds[j] * bounds[k];
            boxes[packed_index(j, k, d)] = if j == k { (0.0, top) } else { (-top, top) };
        }
    }
    Ok(boxes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid a simulation-based calibration draws from is the one the posterior weighs:
    /// same points, same order, and the documented ranges.
    #[test]
    fn grid_is_the_posteriors_settings() {
        let d = 10;
        let moments = vec![1.0 / 3.0; d];
        let bounds = vec![1.0; d];
        let grid = data_model_grid(&moments, Some(&bounds));
        // κ = 2^(i/4), i = −24..=6 (κ/3 ≤ 1 stops at 2^(6/4) ≈ 2.83); ν = 10^(k/4), k = 5..=24.
        assert_eq!(grid.len(), 31 * 20);
        assert!((grid[0].0 - 1.0 / 64.0).abs() < 1e-12);
        assert!((grid[0].1 - 10f64.powf(1.25)).abs() < 1e-9);
        let (top_kappa, top_dof) = grid[grid.len() - 1];
        assert!((top_kappa - 2f64.powf(1.5)).abs() < 1e-12 && top_kappa * moments[0] <= 1.0);
        assert!((top_dof - 1e6).abs() < 1e-6);
        let released: Vec<f64> = (0..packed_len(d))
            .map(|p| if p % 3 == 0 { 150.0 } else { 5.0 })
            .collect();
        let noise = EntryNoise::Gaussian { sd: 20.0 };
        let settings = hyperparameter_posterior(&released, 500, &moments, Some(&bounds), noise);
        assert_eq!(settings.len(), grid.len());
        for (s, &(kappa, dof)) in settings.iter().zip(&grid) {
            assert_eq!(s.dof, dof);
            assert!((s.moments[0] - kappa * moments[0]).abs() < 1e-15);
        }
        let total: f64 = settings.iter().map(|s| s.probability).sum();
        assert!((total - 1.0).abs() < 1e-9);
    }

    /// Entry prior: mean n·m_j on the diagonal, 0 off it; variance (n + n²/ν)·(Isserlis).
    #[test]
    fn entry_prior_moments() {
        let m = [0.5, 0.2];
        let (mean, var) = entry_prior(0, 0, 100.0, &m, 50.0);
        assert!((mean - 50.0).abs() < 1e-12);
        assert!((var - (100.0 + 200.0) * 0.5).abs() < 1e-9);
        let (mean, var) = entry_prior(0, 1, 100.0, &m, 50.0);
        assert_eq!(mean, 0.0);
        assert!((var - 300.0 * 0.1).abs() < 1e-9);
    }
}
