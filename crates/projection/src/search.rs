//! Grid searches on auxiliary data: the projection multipliers (ω_x, ω_y) with B = ω·σ (robust LR
//! paper eq. 11–12, DCA paper Sec. 4.2.1 step 3) and the budget split (p₁, p₂, p₃) of the Laplace
//! statistics release (robust LR paper Methods 4.3).
//!
//! The searches only see synthetic data and already-released σ estimates, so they cost no
//! privacy. They are deterministic for a given seed: repeat `r` draws its data from ChaCha20
//! stream `2r` and its noise from stream `2r + 1`, every grid point of a repeat sees the same
//! noise stream (common random numbers, which makes the error surface smooth and the argmin
//! stable), results are combined in a fixed order, and ties go to the first grid point.
//!
//! The model fitted on the auxiliary data is supplied by the caller through [`ThresholdObjective`]
//! or [`SplitObjective`] (the learner lives in a crate that depends on this one).

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

use crate::auxiliary::{AuxData, AuxSpec};
use crate::error::{Error, Result};

/// A grid of positive multipliers ω.
#[derive(Clone, Debug, PartialEq)]
pub struct OmegaGrid {
    values: Vec<f64>,
}

impl OmegaGrid {
    /// 0.1, 0.2, …, 2.0 (robust LR paper eq. 12).
    pub fn robust_lr() -> Self {
        OmegaGrid {
            values: (1..=20).map(|k| k as f64 / 10.0).collect(),
        }
    }

    /// 20 evenly spaced points from 0.1 to 2.1 inclusive (DCA paper Sec. 5).
    pub fn dca() -> Self {
        OmegaGrid {
            values: (0..20).map(|k| 0.1 + 2.0 * k as f64 / 19.0).collect(),
        }
    }

    /// A custom grid; every value must be finite and positive.
    pub fn new(values: Vec<f64>) -> Result<Self> {
        if values.is_empty() {
            return Err(Error::Empty { what: "ω grid" });
        }
        crate::error::check_bounds(&values, "ω grid")?;
        Ok(OmegaGrid { values })
    }

    /// The multipliers.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}

/// How the errors of the repeats are combined into one score per grid point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Arithmetic mean (penalises occasional blow-ups, as it should at small ε).
    Mean,
    /// Median (robust to them).
    Median,
}

impl Aggregate {
    fn combine(self, values: &mut [f64]) -> f64 {
        match self {
            Aggregate::Mean => values.iter().sum::<f64>() / values.len() as f64,
            Aggregate::Median => {
                values.sort_by(f64::total_cmp);
                let m = values.len() / 2;
                if values.len() % 2 == 1 {
                    values[m]
                } else {
                    0.5 * (values[m - 1] + values[m])
                }
            }
        }
    }
}

/// Settings of the threshold search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchConfig {
    /// Grid for the common x multiplier ω_x.
    pub grid_x: OmegaGrid,
    /// Grid for the y multiplier ω_y.
    pub grid_y: OmegaGrid,
    /// Auxiliary data sets per grid point (10 in the DCA paper).
    pub repeats: usize,
    /// How repeats are combined.
    pub aggregate: Aggregate,
    /// Seed of the synthetic data and noise (not secret: nothing private is drawn from it).
    pub seed: u64,
    /// Largest common correlation of the auxiliary x columns, in [0, 1); 0 is the papers'
    /// independent design (see [`AuxData::generate_correlated`] for what it changes).
    pub aux_max_correlation: f64,
}

impl SearchConfig {
    /// The DCA paper's setting: 20 points in [0.1, 2.1] for both, 10 repeats, mean error.
    pub fn dca(seed: u64) -> Self {
        SearchConfig {
            grid_x: OmegaGrid::dca(),
            grid_y: OmegaGrid::dca(),
            repeats: 10,
            aggregate: Aggregate::Mean,
            seed,
            aux_max_correlation: 0.0,
        }
    }

    /// The robust LR paper's grid 0.1..2.0 for both, 10 repeats, mean error.
    pub fn robust_lr(seed: u64) -> Self {
        SearchConfig {
            grid_x: OmegaGrid::robust_lr(),
            grid_y: OmegaGrid::robust_lr(),
            ..SearchConfig::dca(seed)
        }
    }
}

/// The model fitted on auxiliary data during the threshold search.
pub trait ThresholdObjective: Sync {
    /// The caller's error type.
    type Error: From<Error> + Send;

    /// Errors (lower is better) of the model fitted on `aux` projected to B_x = ω_x·σ_x and
    /// B_y = ω_y·σ_y, for the given `omega_x` and every value in `omega_ys`. Noise must be drawn
    /// from `noise_rng`, which is identical for every `omega_x` of one repeat. Non-finite errors
    /// count as +∞.
    fn errors(
        &self,
        aux: &AuxData,
        omega_x: f64,
        omega_ys: &[f64],
        noise_rng: &mut ChaCha20Rng,
    ) -> std::result::Result<Vec<f64>, Self::Error>;
}

/// The outcome of a threshold search.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdChoice {
    /// The chosen x multiplier.
    pub omega_x: f64,
    /// The chosen y multiplier.
    pub omega_y: f64,
    /// Its aggregated error.
    pub error: f64,
    /// Aggregated error of every grid point, row-major `grid_x × grid_y`.
    pub table: Vec<f64>,
}

fn repeat_rngs(seed: u64, r: usize) -> (ChaCha20Rng, ChaCha20Rng) {
    let mut data = ChaCha20Rng::seed_from_u64(seed);
    data.set_stream(2 * r as u64);
    let mut noise = ChaCha20Rng::seed_from_u64(seed);
    noise.set_stream(2 * r as u64 + 1);
    (data, noise)
}

fn finite_or_inf(e: f64) -> f64 {
    if e.is_finite() { e } else { f64::INFINITY }
}

/// First index of the smallest value (ties go to the first).
fn argmin(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v < values[best] {
            best = i;
        }
    }
    best
}

/// Runs the threshold search: for each repeat draws an auxiliary data set from `spec`, evaluates
/// the objective on the whole grid and returns the grid point with the smallest aggregated error.
pub fn search_thresholds<O: ThresholdObjective>(
    spec: &AuxSpec,
    config: &SearchConfig,
    objective: &O,
) -> std::result::Result<ThresholdChoice, O::Error> {
    if config.repeats == 0 {
        return Err(Error::Empty {
            what: "threshold-search repeats",
        }
        .into());
    }
    spec.validate()?;
    crate::auxiliary::check_max_correlation(config.aux_max_correlation)?;
    let (gx, gy) = (config.grid_x.values(), config.grid_y.values());
    let data: Vec<(AuxData, ChaCha20Rng)> = (0..config.repeats)
        .into_par_iter()
        .map(|r| {
            let (mut data_rng, noise_rng) = repeat_rngs(config.seed, r);
            let aux =
                AuxData::generate_correlated(spec, config.aux_max_correlation, &mut data_rng)?;
            Ok((aux, noise_rng))
        })
        .collect::<Result<_>>()?;
    // errors[r][i * |gy| + k] for repeat r, ω_x = gx[i], ω_y = gy[k].
    let rows: Vec<Vec<f64>> = (0..config.repeats * gx.len())
        .into_par_iter()
        .map(|task| {
            let (r, i) = (task / gx.len(), task % gx.len());
            let (aux, noise_rng) = &data[r];
            let errs = objective.errors(aux, gx[i], gy, &mut noise_rng.clone())?;
            if errs.len() != gy.len() {
                return Err(Error::LengthMismatch {
                    what: "objective errors (one per ω_y)",
                    expected: gy.len(),
                    got: errs.len(),
                }
                .into());
            }
            Ok(errs.into_iter().map(finite_or_inf).collect())
        })
        .collect::<std::result::Result<_, O::Error>>()?;
    let table: Vec<f64> = (0..gx.len() * gy.len())
        .map(|cell| {
            let (i, k) = (cell / gy.len(), cell % gy.len());
            let mut per_repeat: Vec<f64> = (0..config.repeats)
                .map(|r| rows[r * gx.len() + i][k])
                .collect();
            config.aggregate.combine(&mut per_repeat)
        })
        .collect();
    let best = argmin(&table);
    Ok(ThresholdChoice {
        omega_x: gx[best / gy.len()],
        omega_y: gy[best % gy.len()],
        error: table[best],
        table,
    })
}

/// All splits (p₁, p₂, p₃) with every pᵢ a multiple of `1/steps`, at least `min_steps/steps`,
/// summing to one. `budget_split_grid(20, 1)` is the robust LR paper's {0.05, …, 0.90}³ simplex.
pub fn budget_split_grid(steps: u32, min_steps: u32) -> Result<Vec<[f64; 3]>> {
    if steps == 0 || 3 * min_steps > steps {
        return Err(Error::NoSplitGrid { steps, min_steps });
    }
    let mut out = Vec::new();
    for a in min_steps..=steps {
        for b in min_steps..=steps - a {
            let c = steps - a - b;
            if c >= min_steps {
                let s = steps as f64;
                out.push([a as f64 / s, b as f64 / s, c as f64 / s]);
            }
        }
    }
    Ok(out)
}

/// The model fitted on auxiliary data during the budget-split search.
pub trait SplitObjective: Sync {
    /// The caller's error type.
    type Error: From<Error> + Send;

    /// Error (lower is better) of the model fitted on `aux` with the budget split `split`; noise
    /// from `noise_rng`, identical for every split of one repeat.
    fn error(
        &self,
        aux: &AuxData,
        split: [f64; 3],
        noise_rng: &mut ChaCha20Rng,
    ) -> std::result::Result<f64, Self::Error>;
}

/// The outcome of a budget-split search.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitChoice {
    /// The chosen (p₁, p₂, p₃).
    pub split: [f64; 3],
    /// Its aggregated error.
    pub error: f64,
}

/// Searches `splits` for the smallest aggregated error over `repeats` auxiliary data sets.
pub fn search_budget_split<O: SplitObjective>(
    spec: &AuxSpec,
    splits: &[[f64; 3]],
    repeats: usize,
    aggregate: Aggregate,
    seed: u64,
    objective: &O,
) -> std::result::Result<SplitChoice, O::Error> {
    if repeats == 0 {
        return Err(Error::Empty {
            what: "budget-split search repeats",
        }
        .into());
    }
    if splits.is_empty() {
        return Err(Error::Empty {
            what: "budget-split search splits",
        }
        .into());
    }
    if let Some(s) = splits.iter().find(|s| {
        s.iter().any(|p| !(p.is_finite() && *p > 0.0)) || (s.iter().sum::<f64>() - 1.0).abs() > 1e-9
    }) {
        return Err(Error::BadSplit { split: *s }.into());
    }
    spec.validate()?;
    let per_repeat: Vec<Vec<f64>> = (0..repeats)
        .into_par_iter()
        .map(|r| {
            let (mut data_rng, noise_rng) = repeat_rngs(seed, r);
            let aux = AuxData::generate(spec, &mut data_rng)?;
            splits
                .iter()
                .map(|s| {
                    Ok(finite_or_inf(objective.error(
                        &aux,
                        *s,
                        &mut noise_rng.clone(),
                    )?))
                })
                .collect()
        })
        .collect::<std::result::Result<_, O::Error>>()?;
    let scores: Vec<f64> = (0..splits.len())
        .map(|k| {
            let mut v: Vec<f64> = per_repeat.iter().map(|row| row[k]).collect();
            aggregate.combine(&mut v)
        })
        .collect();
    let best = argmin(&scores);
    Ok(SplitChoice {
        split: splits[best],
        error: scores[best],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn grids_match_the_papers() {
        let r = OmegaGrid::robust_lr();
        assert_eq!(r.values().len(), 20);
        assert!((r.values()[0] - 0.1).abs() < 1e-15 && (r.values()[19] - 2.0).abs() < 1e-15);
        let d = OmegaGrid::dca();
        assert_eq!(d.values().len(), 20);
        assert!((d.values()[0] - 0.1).abs() < 1e-15 && (d.values()[19] - 2.1).abs() < 1e-12);
        assert!(OmegaGrid::new(vec![]).is_err());
        assert!(OmegaGrid::new(vec![0.5, -1.0]).is_err());
    }

    #[test]
    fn split_grid_is_the_papers_simplex() {
        let g = budget_split_grid(20, 1).unwrap();
        // a, b, c ≥ 1 with a + b + c = 20: C(19, 2) = 171 compositions.
        assert_eq!(g.len(), 171);
        assert!(
            g.iter()
                .all(|s| (s.iter().sum::<f64>() - 1.0).abs() < 1e-12)
        );
        assert!(g.contains(&[0.6, 0.35, 0.05]));
        assert!(budget_split_grid(2, 1).is_err());
    }

    /// A toy objective with a known minimum at (ω_x, ω_y) = (0.5, 1.5) plus noise from the
    /// provided stream, to test the search machinery itself.
    struct Bowl;
    impl ThresholdObjective for Bowl {
        type Error = Error;
        fn errors(
            &self,
            aux: &AuxData,
            ox: f64,
            oys: &[f64],
            rng: &mut ChaCha20Rng,
        ) -> Result<Vec<f64>> {
            let jitter: f64 = StandardNormal.sample(rng);
            Ok(oys
                .iter()
                .map(|oy| (ox - 0.5).powi(2) + (oy - 1.5).powi(2) + 0.01 * jitter + aux.y[0] * 0.0)
                .collect())
        }
    }

    fn spec() -> AuxSpec {
        AuxSpec {
            n: 10,
            x_scales: vec![1.0, 2.0],
            y_scale: 1.0,
            lambda: 1.0,
            lambda0: 1.0,
        }
    }

    #[test]
    fn search_finds_the_minimum_and_is_deterministic() {
        let config = SearchConfig::robust_lr(42);
        let a = search_thresholds(&spec(), &config, &Bowl).unwrap();
        assert!(
            (a.omega_x - 0.5).abs() < 1e-12 && (a.omega_y - 1.5).abs() < 1e-12,
            "{a:?}"
        );
        assert_eq!(a.table.len(), 400);
        let b = search_thresholds(&spec(), &config, &Bowl).unwrap();
        assert_eq!(a, b);
        let bad = SearchConfig {
            repeats: 0,
            ..config
        };
        assert!(search_thresholds(&spec(), &bad, &Bowl).is_err());
    }

    struct Peak;
    impl SplitObjective for Peak {
        type Error = Error;
        fn error(&self, _: &AuxData, s: [f64; 3], _: &mut ChaCha20Rng) -> Result<f64> {
            Ok((s[0] - 0.6).powi(2) + (s[1] - 0.35).powi(2))
        }
    }

    #[test]
    fn split_search_finds_the_minimum() {
        let g = budget_split_grid(20, 1).unwrap();
        let c = search_budget_split(&spec(), &g, 3, Aggregate::Median, 1, &Peak).unwrap();
        assert_eq!(c.split, [0.6, 0.35, 0.05]);
        assert!(
            search_budget_split(&spec(), &[[0.5, 0.5, 0.5]], 3, Aggregate::Mean, 1, &Peak).is_err()
        );
    }

    #[test]
    fn median_and_mean() {
        assert_eq!(Aggregate::Median.combine(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(Aggregate::Median.combine(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(Aggregate::Mean.combine(&mut [4.0, 1.0, 1.0]), 2.0);
    }
}
