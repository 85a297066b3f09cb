//! The `train` and `sum` job kinds: their settings, the public rule each of their rounds is
//! published with, and how the job's noise is planned so that every party can check it.
//!
//! A `train` job is DP-SGD logistic regression (dca-learning's trainer) with the participants
//! as clients: each iteration is one DCA round whose rule carries the current weights; each
//! participant sums its records' clipped gradients at those weights, every record in the batch
//! by its own Poisson coin drawn locally (nodes and aggregator never learn the batch; a
//! participant with no record in the batch still uploads its zero vector with its noise).
//! A `sum` job is one DCA round of the sums of the job's columns over all records.
//!
//! Privacy is accounted as for `blr` jobs, in zCDP per round without amplification by
//! subsampling (the aggregator cannot check the coins): the noise multiplier is the smallest
//! for which `iterations` rounds cost at most the job's ρ. The participants recompute that
//! bound from the round they are shown and refuse a round beyond it.

use dca_learning::{ClientSampling, Model, Optimizer, Privacy, TrainerConfig};
use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};
use serde::{Deserialize, Serialize};

use crate::protocol::job::JobSpec;
use crate::protocol::spec::config_rho;
use crate::{Error, Result};

/// Most iterations of one `train` job (its rounds are numbered by 24 bits of the job's rounds).
pub const MAX_ITERATIONS: u64 = 1 << 24;

/// The columns are mapped onto ±`SCALE` (the job's public bounds), as for `blr`.
const SCALE: f64 = 5.0;

/// A `train` job's DP-SGD settings (`[train]` in a job file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainSettings {
    /// DCA rounds, one per iteration.
    pub iterations: u64,
    /// C: each record's gradient is scaled down to ℓ2 norm ≤ C.
    pub clip_norm: f64,
    /// q: each record is in an iteration's batch with probability q, by its own coin.
    pub sampling_rate: f64,
    /// The optimizer's step size η.
    pub learning_rate: f64,
    /// "adam" or "sgd".
    pub optimizer: String,
    /// λ ≥ 0 of the public regulariser (λ/2)‖w‖² (the intercept is not penalised).
    #[serde(default)]
    pub l2: f64,
    /// Estimate an intercept b: θ = (w, b), b last, inside the clipped gradient
    /// (dca-learning's `Model::logistic`). On when absent. The canonical JSON holds the field
    /// only when it is false, so that a job written before the field existed keeps its id (and
    /// now means a job with an intercept), and `intercept = true` written out is the same job.
    #[serde(
        default = "intercept_by_default",
        skip_serializing_if = "is_intercept_on"
    )]
    pub intercept: bool,
}

fn intercept_by_default() -> bool {
    true
}

// serde's `skip_serializing_if` passes a reference.
fn is_intercept_on(intercept: &bool) -> bool {
    *intercept
}

impl TrainSettings {
    pub(crate) fn validate(&self, spec: &JobSpec) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidSpec(format!("job: train.{m}")));
        if !(1..=MAX_ITERATIONS).contains(&self.iterations) {
            return bad(format!(
                "iterations = {} must be from 1 to {MAX_ITERATIONS}",
                self.iterations
            ));
        }
        for (what, v) in [
            ("clip_norm", self.clip_norm),
            ("learning_rate", self.learning_rate),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("{what} = {v} must be finite and > 0"));
            }
        }
        if !(self.sampling_rate > 0.0 && self.sampling_rate <= 1.0) {
            return bad(format!(
                "sampling_rate = {} must be in (0, 1]",
                self.sampling_rate
            ));
        }
        if !(self.l2.is_finite() && self.l2 >= 0.0) {
            return bad(format!("l2 = {} must be finite and ≥ 0", self.l2));
        }
        if !matches!(self.optimizer.as_str(), "adam" | "sgd") {
            return bad(format!(
                "optimizer {:?} must be \"adam\" or \"sgd\"",
                self.optimizer
            ));
        }
        if spec.mode != "seed" {
            return Err(Error::InvalidSpec(format!(
                "job: a train job's rounds are seed-compressed (mode \"seed\"), not {:?}",
                spec.mode
            )));
        }
        Ok(())
    }

    /// The job's model: logistic regression with the job's ridge, with or without intercept.
    pub fn model(&self) -> Model {
        Model::Logistic {
            l2: self.l2,
            intercept: self.intercept,
        }
    }

    /// Length of θ, a round's dimension: one weight per feature, and b if the job has one.
    pub fn n_params(&self, features: usize) -> usize {
        self.model().n_params(features)
    }

    fn optimizer(&self) -> Optimizer {
        if self.optimizer == "sgd" {
            Optimizer::Sgd {
                learning_rate: self.learning_rate,
            }
        } else {
            Optimizer::adam(self.learning_rate)
        }
    }
}

/// What each participant computes in a `train` round (the round's published rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainRule {
    /// The iteration (0-based; the job round's step).
    pub iteration: u64,
    /// The public parameters the gradients are taken at: θ = (w, b), one weight per feature in
    /// the job's order, then the intercept b if the job has one.
    pub weights: Vec<f64>,
    /// C.
    pub clip_norm: f64,
    /// q.
    pub sampling_rate: f64,
}

/// What each participant computes in a `sum` round: Σ over its records of every column the
/// job reads (features then target), each mapped onto ±5 by the public bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SumRule {
    /// Columns summed (the job's features and its target).
    pub columns: usize,
}

/// The rule of a round of a `train` or `sum` job, as published (JSON, one key naming the
/// kind, so that a rule of one kind never parses as another's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum Rule {
    /// See [`TrainRule`].
    Train(TrainRule),
    /// See [`SumRule`].
    Sum(SumRule),
}

impl Rule {
    /// The published JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a rule always serialises")
    }

    /// Parses a published rule.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| Error::InvalidSpec(format!("a train or sum round's rule: {e}")))
    }
}

/// A `train` job's progress and result; every field is public (a release or computed from
/// releases).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TrainResult {
    /// The weights after the last released iteration, one per feature (of the features mapped
    /// onto ±5): P(y = 1 | x) = σ(Σ_j weights_j·x_j + intercept), see [`predict_proba`].
    pub weights: Vec<f64>,
    /// The intercept b after the last released iteration; absent for a job without intercept
    /// (and in the results of jobs that ran before train jobs had intercepts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept: Option<f64>,
    /// Each iteration's released noisy gradient sum, in order (θ's coordinates: b's last).
    pub sums: Vec<Vec<f64>>,
    /// Records over all participants that took part (the normaliser is q times this).
    pub records: usize,
    /// z: each round's noise has σ_total = z·C.
    pub noise_multiplier: f64,
}

impl TrainResult {
    /// Records the trainer's parameters θ of a job with or without `intercept`: the weights,
    /// and b (θ's last entry) named apart.
    pub fn set_params(&mut self, params: &[f64], intercept: bool) {
        let (weights, b) = match params.split_last() {
            Some((&b, weights)) if intercept => (weights, Some(b)),
            _ => (params, None),
        };
        self.weights = weights.to_vec();
        self.intercept = b;
    }
}

/// P(y = 1 | x) = σ(wᵀx + b) for each row of `table` under a `train` job's `result` (b = 0 for
/// a job without intercept): the job's features read from the table and mapped onto ±5 by their
/// public ranges (values outside clipped), as the participants mapped them.
///
/// # Errors
/// `spec` is not a train job, the result's weights are not one per feature or its intercept
/// disagrees with the job's setting, or the table lacks a feature column.
pub fn predict_proba(
    spec: &JobSpec,
    result: &TrainResult,
    table: &blr::data::Table,
) -> Result<Vec<f64>> {
    let settings = spec
        .train
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec("job: not a train job".into()))?;
    let d = spec.features.len();
    if d == 0 || result.weights.len() != d || result.intercept.is_some() != settings.intercept {
        return Err(Error::InvalidSpec(format!(
            "a train result with {} weights and {} intercept for a job of {d} features {}",
            result.weights.len(),
            if result.intercept.is_some() {
                "an"
            } else {
                "no"
            },
            if settings.intercept {
                "with an intercept"
            } else {
                "without intercept"
            }
        )));
    }
    let names: Vec<&str> = spec.features.iter().map(|c| c.name.as_str()).collect();
    let mut x = crate::protocol::job::columns_of(table, &names, "the model reads")?;
    let owned: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    spec.public_bounds()
        .scale(&mut x, &owned, SCALE)
        .map_err(|e| Error::InvalidSpec(format!("job's public bounds: {e}")))?;
    let b = result.intercept.unwrap_or(0.0);
    Ok(x.chunks_exact(d)
        .map(|row| {
            let margin: f64 = row.iter().zip(&result.weights).map(|(v, w)| v * w).sum();
            1.0 / (1.0 + (-(margin + b)).exp())
        })
        .collect())
}

/// A `sum` job's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SumResult {
    /// The released noisy sums in the units of the columns (features, then target):
    /// n·lo + (s + 5n)(hi − lo)/10 of the released sum s of the values mapped onto ±5.
    pub sums: Vec<f64>,
    /// The released sums of the mapped values (what the DCA round released).
    pub released: Vec<f64>,
    /// n: the records summed (the accepted participants' rows, public).
    pub records: usize,
    /// σ of the Gaussian noise in each released (mapped) sum, if no participant dropped out.
    pub noise_sigma: f64,
}

/// Columns a `sum` job sums: the features, then the target.
pub fn sum_columns(spec: &JobSpec) -> Vec<&crate::protocol::job::ColumnBounds> {
    spec.features.iter().chain([&spec.target]).collect()
}

/// The ℓ2 sensitivity of a `sum` round: one record moves each of its d + 1 mapped columns by
/// at most 5.
pub fn sum_sensitivity(spec: &JobSpec) -> f64 {
    SCALE * ((spec.features.len() + 1) as f64).sqrt()
}

/// The round configuration of a `sum` job with `n_clients` participants on `n_nodes` nodes:
/// the smallest noise whose round costs at most the job's ρ.
pub fn sum_round_config(spec: &JobSpec, n_clients: usize, n_nodes: u16) -> Result<RoundConfig> {
    let l2 = sum_sensitivity(spec);
    let make = |sigma: f64| {
        Ok(RoundConfig::new(&RoundParams {
            round: RoundId(0),
            n_clients,
            n_nodes,
            max_dropped: spec.max_dropped,
            dim: spec.features.len() + 1,
            bound: SCALE * spec.max_rows as f64,
            mode: spec.share_mode(),
            noise_sigma_total: Some(sigma),
            frac_bits: None,
        })?)
    };
    let sigma = smallest_noise(&make, l2, spec.rho()?, 1, 1.0)?;
    make(sigma)
}

/// Maps a `sum` job's released sums back to the columns' units: the map onto ±5 is affine,
/// and n is public.
pub fn sum_in_units(spec: &JobSpec, released: &[f64], records: usize) -> Vec<f64> {
    let n = records as f64;
    sum_columns(spec)
        .iter()
        .zip(released)
        .map(|(c, s)| n * c.lo + (s + SCALE * n) * (c.hi - c.lo) / (2.0 * SCALE))
        .collect()
}

/// The trainer's configuration of a `train` job with `n_clients` participants on `n_nodes`
/// nodes: Poisson sampling, logistic regression, and the smallest noise multiplier z for which
/// `iterations` rounds cost at most the job's ρ.
pub fn trainer_config(spec: &JobSpec, n_clients: usize, n_nodes: u16) -> Result<TrainerConfig> {
    let t = spec
        .train
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec("job: not a train job".into()))?;
    let c = t.clip_norm;
    let make = |z: f64| {
        Ok(RoundConfig::new(&RoundParams {
            round: RoundId(0),
            n_clients,
            n_nodes,
            max_dropped: spec.max_dropped,
            // θ's coordinates: b's gradient is inside the clipped norm, so the bound and the
            // noise are the same with or without it.
            dim: t.n_params(spec.features.len()),
            bound: c * spec.max_rows as f64,
            mode: ShareMode::Seed,
            noise_sigma_total: Some(z * c),
            frac_bits: None,
        })?)
    };
    let z = smallest_noise(&make, c, spec.rho()?, t.iterations, c)?;
    Ok(TrainerConfig {
        model: t.model(),
        sampling: ClientSampling::Poisson {
            rate: t.sampling_rate,
        },
        clip_norm: c,
        privacy: Privacy::Private {
            budget: dp_noise::PrivacyLoss::new(spec.epsilon, spec.delta)
                .map_err(|e| Error::InvalidSpec(format!("job: {e}")))?,
            noise_multiplier: z,
        },
        optimizer: t.optimizer(),
        n_nodes,
        max_dropped: spec.max_dropped,
    })
}

/// Whether `rounds` rounds like `round` (sum of ℓ2 sensitivity `l2`) fit in ρ `budget`.
pub fn rounds_fit(config: &RoundConfig, l2: f64, rounds: u64, budget: f64) -> Result<bool> {
    Ok(match config_rho(config, l2)? {
        Some(rho) => rho * rounds as f64 <= budget * (1.0 + 1e-9),
        None => false,
    })
}

/// The smallest noise parameter s (σ_total = s · `unit`) for which `rounds` rounds configured
/// by `make(s)` fit in ρ `budget`, by bisection (the fixed-point grid depends on the noise, so
/// the cost is computed on the very configuration).
fn smallest_noise(
    make: &dyn Fn(f64) -> Result<RoundConfig>,
    l2: f64,
    budget: f64,
    rounds: u64,
    unit: f64,
) -> Result<f64> {
    // Planned with a little slack below the budget, so that the running totals of the
    // aggregator and of each participant (a sum of `rounds` equal charges, checked against
    // the budget up to 1e-9) never trip over rounding at the last round.
    let target = budget * (1.0 - 1e-6);
    let fits = |s: f64| -> Result<bool> {
        match make(s) {
            Ok(config) => rounds_fit(&config, l2, rounds, target),
            // A noise so large the grid cannot hold it is "does not fit" from above; the
            // search never goes there unless nothing smaller fits.
            Err(_) => Ok(false),
        }
    };
    // σ ≥ Δ·sqrt(rounds / 2ρ) for the continuous Gaussian; the discrete sum costs a little
    // more, so start there and double.
    let mut lo = l2 / unit * (rounds as f64 / (2.0 * budget)).sqrt() * 0.5;
    let mut hi = lo * 2.0;
    let mut doublings = 0;
    while !fits(hi)? {
        lo = hi;
        hi *= 2.0;
        doublings += 1;
        if doublings > 60 || !hi.is_finite() {
            return Err(Error::InvalidSpec(format!(
                "job: no noise lets {rounds} round(s) fit in the job's ε, δ (zCDP ρ = \
                 {budget}) with these participants and nodes"
            )));
        }
    }
    for _ in 0..64 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if fits(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;
    use crate::protocol::job::{ColumnBounds, JobKind};

    fn column(name: &str, lo: f64, hi: f64) -> ColumnBounds {
        ColumnBounds {
            name: name.into(),
            lo,
            hi,
            group: None,
        }
    }

    fn spec(kind: &str) -> JobSpec {
        JobSpec {
            kind: JobKind::try_from(kind.to_string()).unwrap(),
            target: column("y", 0.0, 1.0),
            features: vec![column("a", -1.0, 1.0), column("b", 0.0, 10.0)],
            epsilon: 1.0,
            delta: 1e-5,
            max_dropped: 1,
            mode: "seed".into(),
            roster: (0..6u8).map(|i| hex::encode(&[i; 32])).collect(),
            max_rows: 3,
            answer_window_ms: 1000,
            upload_window_ms: 1000,
            created_unix_ms: 1,
            public_seed: None,
            clipped_share: None,
            train: (kind == "train").then(|| TrainSettings {
                iterations: 10,
                clip_norm: 1.0,
                sampling_rate: 0.5,
                learning_rate: 0.1,
                optimizer: "adam".into(),
                l2: 0.0,
                intercept: true,
            }),
        }
    }

    type Change = Box<dyn Fn(&mut JobSpec)>;

    fn assert_refused(kind: &str, cases: Vec<(&str, Change)>) {
        spec(kind).validate().unwrap();
        for (word, change) in cases {
            let mut s = spec(kind);
            change(&mut s);
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(word), "{kind}, {word}: {e}");
        }
    }

    /// `intercept` is in the canonical JSON only when false: a job file without the field and
    /// one with `intercept = true` are the same job (the id above), one with `intercept = false`
    /// is another; a setting that is not a boolean is refused naming the field.
    #[test]
    fn the_intercept_setting_reads_and_hashes_as_documented() {
        let on = spec("train");
        let text = String::from_utf8(on.canonical_json()).unwrap();
        assert!(!text.contains("intercept"), "{text}");
        let without_field = r#"{"iterations": 10, "clip_norm": 1.0, "sampling_rate": 0.5,
            "learning_rate": 0.1, "optimizer": "adam"}"#;
        let read: TrainSettings = serde_json::from_str(without_field).unwrap();
        assert!(read.intercept);
        let explicit: TrainSettings =
            serde_json::from_str(&without_field.replace("}", r#", "intercept": true}"#)).unwrap();
        assert_eq!(explicit, read);
        let mut off = spec("train");
        off.train.as_mut().unwrap().intercept = false;
        let text = String::from_utf8(off.canonical_json()).unwrap();
        assert!(text.contains(r#""intercept":false"#), "{text}");
        assert_ne!(off.id(), on.id());
        let bad = serde_json::from_str::<TrainSettings>(
            &without_field.replace("}", r#", "intercept": "yes"}"#),
        )
        .unwrap_err()
        .to_string();
        assert!(bad.contains("boolean"), "{bad}");
    }

    /// θ = (w, b) splits into the weights and the intercept named apart; a result stored
    /// before results had an intercept still reads (without one).
    #[test]
    fn a_train_result_names_the_intercept() {
        let mut r = TrainResult::default();
        r.set_params(&[0.5, -1.0, 0.25], true);
        assert_eq!(
            (r.weights.clone(), r.intercept),
            (vec![0.5, -1.0], Some(0.25))
        );
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains(r#""intercept":0.25"#), "{json}");
        r.set_params(&[0.5, -1.0], false);
        assert_eq!((r.weights.clone(), r.intercept), (vec![0.5, -1.0], None));
        let old: TrainResult = serde_json::from_str(
            r#"{"weights":[1.0,2.0],"sums":[],"records":3,"noise_multiplier":1.5}"#,
        )
        .unwrap();
        assert_eq!(old.intercept, None);
    }

    /// P(y = 1 | x) of two rows, by hand: a (range [−1, 1]) and b ([0, 10]) mapped onto ±5,
    /// i.e. 5a and b − 5 (b = 12 clipped to 10 first), then σ(0.4·x_a − 0.2·x_b + 0.3).
    #[test]
    fn predictions_use_the_intercept_and_the_public_map() {
        let s = spec("train");
        let result = TrainResult {
            weights: vec![0.4, -0.2],
            intercept: Some(0.3),
            ..TrainResult::default()
        };
        let table = blr::data::Table::parse_csv("b,y,a\n2,0,0.5\n12,1,-1\n").unwrap();
        let p = predict_proba(&s, &result, &table).unwrap();
        let sigma = |t: f64| 1.0 / (1.0 + (-t).exp());
        let by_hand = [
            sigma(0.4 * 2.5 - 0.2 * -3.0 + 0.3),
            sigma(0.4 * -5.0 - 0.2 * 5.0 + 0.3),
        ];
        for (got, want) in p.iter().zip(by_hand) {
            assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        }
        // A result of the other setting, or one weight short, is refused; so is a table
        // without a feature the model reads.
        let plain = TrainResult {
            intercept: None,
            ..result.clone()
        };
        assert!(
            predict_proba(&s, &plain, &table)
                .unwrap_err()
                .to_string()
                .contains("intercept")
        );
        let short = TrainResult {
            weights: vec![0.4],
            ..result.clone()
        };
        assert!(predict_proba(&s, &short, &table).is_err());
        let no_b = blr::data::Table::parse_csv("a,y\n0.5,0\n").unwrap();
        let e = predict_proba(&s, &result, &no_b).unwrap_err().to_string();
        assert!(e.contains("\"b\""), "{e}");
    }

    #[test]
    fn bad_train_specs_are_refused_and_name_their_field() {
        let train = |f: fn(&mut TrainSettings)| -> Change {
            Box::new(move |s: &mut JobSpec| f(s.train.as_mut().unwrap()))
        };
        assert_refused(
            "train",
            vec![
                ("iterations", train(|t| t.iterations = 0)),
                ("iterations", train(|t| t.iterations = MAX_ITERATIONS + 1)),
                ("clip_norm", train(|t| t.clip_norm = 0.0)),
                ("learning_rate", train(|t| t.learning_rate = f64::NAN)),
                ("sampling_rate", train(|t| t.sampling_rate = 1.5)),
                ("sampling_rate", train(|t| t.sampling_rate = 0.0)),
                ("l2", train(|t| t.l2 = -1.0)),
                ("optimizer", train(|t| t.optimizer = "rmsprop".into())),
                ("\"seed\"", Box::new(|s| s.mode = "full".into())),
                ("[train] settings", Box::new(|s| s.train = None)),
                ("epsilon", Box::new(|s| s.epsilon = -1.0)),
                ("honest", Box::new(|s| s.roster.truncate(2))),
            ],
        );
    }

    #[test]
    fn bad_sum_specs_are_refused_and_name_their_field() {
        assert_refused(
            "sum",
            vec![
                (
                    "not for a \"sum\" job",
                    Box::new(|s| s.train = spec("train").train),
                ),
                ("feature", Box::new(|s| s.features.clear())),
                ("bounds", Box::new(|s| s.target.hi = s.target.lo)),
                ("twice", Box::new(|s| s.features[1].name = "y".into())),
                ("delta", Box::new(|s| s.delta = 1.0)),
            ],
        );
    }

    /// The planned noise lets all rounds fit in the job's ρ, and is not wasteful: the discrete
    /// sum costs at least the continuous Gaussian's Δ²/(2σ²) per round, so σ is at least
    /// Δ·sqrt(rounds / 2ρ) (up to the 1e-9 the budget checks allow for rounding), and it stays
    /// within a few per cent of that.
    #[test]
    fn the_planned_noise_fits_the_budget_and_no_more() {
        let train = spec("train");
        let rho = train.rho().unwrap();
        let config = trainer_config(&train, 6, 3).unwrap();
        let Privacy::Private {
            noise_multiplier: z,
            ..
        } = config.privacy
        else {
            panic!("private")
        };
        let continuous = (10.0 / (2.0 * rho)).sqrt();
        assert!(
            z >= continuous * (1.0 - 1e-8) && z < continuous * 1.05,
            "{z} vs {continuous}"
        );
        let sum = spec("sum");
        let round = sum_round_config(&sum, 6, 3).unwrap();
        let sigma = round.noise().unwrap().sigma_total;
        let l2 = 5.0 * 3f64.sqrt();
        let continuous = l2 / (2.0 * rho).sqrt();
        assert!(
            sigma >= continuous * (1.0 - 1e-8) && sigma < continuous * 1.05,
            "{sigma}"
        );
        assert!(rounds_fit(&round, l2, 1, rho).unwrap());
        assert!(!rounds_fit(&round, l2, 2, rho).unwrap());
    }

    #[test]
    fn released_sums_map_back_to_the_columns_units() {
        let s = spec("sum");
        // Three records, every value at its upper bound (+5 each once mapped), then at lower.
        let high = sum_in_units(&s, &[15.0, 15.0, 15.0], 3);
        assert_eq!(high, vec![3.0, 30.0, 3.0]);
        let low = sum_in_units(&s, &[-15.0, -15.0, -15.0], 3);
        assert_eq!(low, vec![-3.0, 0.0, 0.0]);
    }

    #[test]
    fn a_rule_names_its_kind() {
        let rule = Rule::Sum(SumRule { columns: 3 });
        assert_eq!(rule.to_json(), r#"{"sum":{"columns":3}}"#);
        assert_eq!(Rule::from_json(&rule.to_json()).unwrap(), rule);
        assert!(Rule::from_json(r#"{"train":{"columns":3}}"#).is_err());
        assert!(Rule::from_json("[]").is_err());
    }
}
