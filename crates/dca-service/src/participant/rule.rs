//! A participant's view of a round's rule, whatever the job's kind: what it checks the round
//! against before it pays for it, what it computes from its rows (fed chunk by chunk, already
//! mapped onto ±5 by the job's public bounds), and which randomness it seals with.
//!
//! - `blr`: the learner's [`blr::Contribution`].
//! - `train`: Σ over its records in this iteration's batch of the clipped logistic gradient at
//!   the published weights ([`dca_learning::ClientGradient`]); each record's coin is drawn
//!   here, from this participant's own randomness, so nobody else learns the batch. The class
//!   of a record is the sign of its mapped target (above the middle of the public range: +1).
//! - `sum`: Σ over its records of every column the job reads.
//! - `regression`: step 1 the learner's [`blr::Contribution::DesignMoments`] of the design the
//!   job's public ranges make, step 2 its [`blr::Contribution::DesignStatistics`] of ranges
//!   narrowed inside them, from its rows as they are in its file (the design maps them).

use blr::Contribution;
use dca_learning::{ClientGradient, iteration_rngs};
use dp_noise::rng::RngSource;

use crate::protocol::job::noise_plan::rounds_fit;
use crate::protocol::job::round_rule::{Rule, SumRule, TrainRule};
use crate::protocol::job::sum::sum_sensitivity;
use crate::protocol::job::{JobKind, JobRound, JobSpec};
use crate::protocol::spec::Round;
use crate::{Error, Result};

/// A round's rule, parsed for the job's kind.
pub(crate) enum JobRule {
    Blr(Contribution),
    /// A `regression` job's round: the design's statistics ([`JobSpec::design`]).
    Regression(Contribution),
    Train(TrainRule),
    Sum(SumRule),
}

/// What the round must look like for this rule: its dimension, the least per-coordinate
/// bound one record needs, and the ℓ2 sensitivity its noise must be calibrated for.
pub(crate) struct Expected {
    pub dim: usize,
    pub record_bound: f64,
    pub l2_sensitivity: f64,
}

/// A participant's running sum for one round.
pub(crate) enum Accumulator<'a> {
    Blr(blr::contribution::RowSum<'a>),
    Train(Box<ClientGradient>),
    Sum(Vec<f64>),
}

/// Whether `rule` is what step `step` of a `regression` job on `design` may ask: step 1 the
/// ranges round of the public design (or, without it, the statistics of the public design);
/// step 2 the statistics of a design narrowed inside it — same columns, intercept and block
/// shares, every range within the public one. The noise is calibrated on the unit scale, so any
/// such ranges keep the round's sensitivity; the check keeps a driver from widening them.
fn regression_step_is_the_jobs(design: &blr::Design, rule: &Contribution, step: u64) -> bool {
    let inside = |r: &blr::PublicRange, public: &blr::PublicRange| {
        r.lower >= public.lower && r.upper <= public.upper
    };
    match (step, rule) {
        (
            1,
            Contribution::DesignMoments { design: d }
            | Contribution::DesignStatistics { design: d },
        ) => d == design,
        (2, Contribution::DesignStatistics { design: d }) => {
            d.intercept == design.intercept
                && d.shares == design.shares
                && d.indicator_groups == design.indicator_groups
                && d.x.len() == design.x.len()
                && d.x.iter().zip(&design.x).all(|(r, p)| inside(r, p))
                && inside(&d.y, &design.y)
        }
        _ => false,
    }
}

impl JobRule {
    /// Parses `job_round`'s rule for `spec`'s kind and checks it against the job this
    /// participant accepted.
    pub(crate) fn parse(spec: &JobSpec, job_round: &JobRound) -> Result<Self> {
        let refuse = |m: String| Err(Error::Job(format!("round {}: {m}", job_round.id)));
        let rule = match spec.kind {
            JobKind::Blr => return Ok(JobRule::Blr(Contribution::from_json(&job_round.rule)?)),
            JobKind::Regression => {
                let rule = Contribution::from_json(&job_round.rule)?;
                let design = spec.design()?;
                return if regression_step_is_the_jobs(&design, &rule, job_round.step) {
                    Ok(JobRule::Regression(rule))
                } else {
                    refuse(format!(
                        "its rule (step {}) is not the job's design's: step 1 the ranges round of \
                         its columns' public ranges (or their statistics), step 2 the statistics \
                         of ranges inside them, with an intercept",
                        job_round.step
                    ))
                };
            }
            JobKind::Train | JobKind::Sum => Rule::from_json(&job_round.rule)?,
        };
        match (spec.kind, rule, &spec.train) {
            (JobKind::Train, Rule::Train(r), Some(t)) => {
                if r.iteration != job_round.step || r.iteration >= t.iterations {
                    return refuse(format!(
                        "its rule is for iteration {} (round step {}), the job runs {}",
                        r.iteration, job_round.step, t.iterations
                    ));
                }
                if r.clip_norm != t.clip_norm || r.sampling_rate != t.sampling_rate {
                    return refuse(format!(
                        "its rule clips at {} and samples at {}, the job at {} and {}",
                        r.clip_norm, r.sampling_rate, t.clip_norm, t.sampling_rate
                    ));
                }
                // θ = (w, b): a rule with b for a job without intercept (or the reverse) would
                // have this participant compute another model than the one it accepted.
                if r.weights.len() != t.n_params(spec.features.len())
                    || r.weights.iter().any(|w| !w.is_finite())
                {
                    return refuse(format!(
                        "its rule has {} weights (or one not finite), the job {} features {}",
                        r.weights.len(),
                        spec.features.len(),
                        if t.intercept {
                            "and an intercept"
                        } else {
                            "and no intercept"
                        }
                    ));
                }
                Ok(JobRule::Train(r))
            }
            (JobKind::Sum, Rule::Sum(r), None) => {
                if r.columns != spec.features.len() + 1 || job_round.step != 0 {
                    return refuse(format!(
                        "its rule sums {} columns in step {}, the job {} in one round",
                        r.columns,
                        job_round.step,
                        spec.features.len() + 1
                    ));
                }
                Ok(JobRule::Sum(r))
            }
            (kind, _, _) => refuse(format!("its rule is not one of a {:?} job", kind.as_str())),
        }
    }

    /// What the round must look like.
    pub(crate) fn expected(&self, spec: &JobSpec) -> Result<Expected> {
        Ok(match self {
            JobRule::Blr(rule) | JobRule::Regression(rule) => {
                if rule.columns() != spec.features.len() {
                    return Err(Error::Job(format!(
                        "a round's rule reads {} columns, the job has {}",
                        rule.columns(),
                        spec.features.len()
                    )));
                }
                Expected {
                    dim: rule.dim(),
                    record_bound: rule.record_bound(),
                    l2_sensitivity: rule.l2_sensitivity()?,
                }
            }
            JobRule::Train(r) => Expected {
                dim: r.weights.len(),
                record_bound: r.clip_norm,
                l2_sensitivity: r.clip_norm,
            },
            JobRule::Sum(r) => Expected {
                dim: r.columns,
                record_bound: 5.0,
                l2_sensitivity: sum_sensitivity(spec),
            },
        })
    }

    /// The job-level privacy check of a `train` or `sum` round: its noise lets all the job's
    /// rounds fit in the ε, δ this participant accepted (a `blr` round is checked by the
    /// ledger's running total alone, as its two rounds split the budget unevenly).
    pub(crate) fn check_budget(&self, spec: &JobSpec, round: &Round) -> Result<()> {
        let (rounds, l2) = match self {
            JobRule::Blr(_) | JobRule::Regression(_) => return Ok(()),
            JobRule::Train(r) => (spec.train.as_ref().map_or(0, |t| t.iterations), r.clip_norm),
            JobRule::Sum(_) => (1, sum_sensitivity(spec)),
        };
        if !rounds_fit(&round.config, l2, rounds, spec.rho()?)? {
            return Err(Error::Job(format!(
                "round {}: {rounds} rounds with its noise would cost more than the job's \
                 ε = {}, δ = {} (NON-PRIVATE for this participant)",
                round.id(),
                spec.epsilon,
                spec.delta
            )));
        }
        Ok(())
    }

    /// The randomness of this participant's shares and noise, and of its sampling coins, in
    /// the round of step `step` where it is client `client`: the OS's, or under a fixed seed
    /// (NON-PRIVATE) derived as the in-process pipeline and trainer derive theirs.
    pub(crate) fn rngs(
        &self,
        insecure_seed: Option<u64>,
        step: u64,
        client: u64,
    ) -> (RngSource, RngSource) {
        let Some(seed) = insecure_seed else {
            return (RngSource::Os, RngSource::Os);
        };
        let seed = RngSource::InsecureFixedSeed(seed);
        match self {
            JobRule::Train(_) => {
                let (round, sampling) = iteration_rngs(&seed, step);
                (round.derive(client), sampling.derive(client))
            }
            JobRule::Blr(_) | JobRule::Regression(_) | JobRule::Sum(_) => {
                let round = seed.derive(step).derive(client);
                (round, round)
            }
        }
    }

    /// Whether the rule reads rows as they are in the file (a design maps them itself) rather
    /// than mapped onto ±5 by the job's public bounds.
    pub(crate) fn reads_raw_rows(&self) -> bool {
        matches!(self, JobRule::Regression(_))
    }

    /// An empty sum for this rule; `sampling` draws a `train` round's coins.
    pub(crate) fn accumulator(
        &self,
        spec: &JobSpec,
        sampling: RngSource,
    ) -> Result<Accumulator<'_>> {
        Ok(match self {
            JobRule::Blr(rule) | JobRule::Regression(rule) => Accumulator::Blr(rule.accumulator()?),
            JobRule::Train(r) => {
                let model = spec.train.as_ref().map(|t| t.model()).ok_or_else(|| {
                    Error::Job("a train round's rule for a job without [train]".into())
                })?;
                Accumulator::Train(Box::new(ClientGradient::poisson(
                    model,
                    &r.weights,
                    spec.features.len(),
                    Some(r.clip_norm),
                    r.sampling_rate,
                    sampling,
                )?))
            }
            JobRule::Sum(r) => Accumulator::Sum(vec![0.0; r.columns]),
        })
    }
}

impl Accumulator<'_> {
    /// Adds rows: `x` row-major (rows × features), `y` the target, both mapped onto ±5.
    pub(crate) fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        match self {
            Accumulator::Blr(sum) => sum.push_rows(x, y)?,
            Accumulator::Train(sum) => sum.push_rows(x, y)?,
            Accumulator::Sum(sum) => {
                let d = sum.len() - 1;
                if x.len() != y.len() * d {
                    return Err(Error::InvalidSpec(format!(
                        "{} values for {} rows of {d} features",
                        x.len(),
                        y.len()
                    )));
                }
                for (row, &target) in x.chunks_exact(d.max(1)).zip(y) {
                    for (s, v) in sum.iter_mut().zip(row) {
                        *s += v;
                    }
                    sum[d] += target;
                }
            }
        }
        Ok(())
    }

    /// The vector this participant contributes.
    pub(crate) fn finish(self) -> Result<Vec<f64>> {
        Ok(match self {
            Accumulator::Blr(sum) => sum.finish()?,
            Accumulator::Train(sum) => sum.finish(),
            Accumulator::Sum(sum) => sum,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;
    use crate::protocol::job::ColumnBounds;
    use crate::protocol::job::train_settings::TrainSettings;
    use share_sealing::NodeKeyPair;

    fn job(kind: &str) -> JobSpec {
        let column = |name: &str| ColumnBounds {
            name: name.into(),
            lo: 0.0,
            hi: 1.0,
            group: None,
        };
        JobSpec {
            kind: JobKind::try_from(kind.to_string()).unwrap(),
            target: column("y"),
            features: vec![column("a"), column("b")],
            epsilon: 1.0,
            delta: 1e-5,
            max_dropped: 1,
            mode: "seed".into(),
            roster: (0..6u8).map(|i| hex::encode(&[i; 32])).collect(),
            max_rows: 2,
            answer_window_ms: 1000,
            upload_window_ms: 1000,
            created_unix_ms: 1,
            public_seed: None,
            clipped_share: None,
            train: (kind == "train").then(|| TrainSettings {
                iterations: 5,
                clip_norm: 1.0,
                sampling_rate: 0.25,
                learning_rate: 0.1,
                optimizer: "sgd".into(),
                l2: 0.0,
                intercept: true,
            }),
        }
    }

    fn job_round(step: u64, rule: &Rule) -> JobRound {
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        JobRound {
            step,
            id: "r".into(),
            spec: crate::protocol::spec::tests::spec(6, 2, &keys),
            rule: rule.to_json(),
            clients: (0..6).collect(),
        }
    }

    /// A rule of the job `job("train")`: two weights and the intercept.
    fn train_rule() -> TrainRule {
        TrainRule {
            iteration: 2,
            weights: vec![0.5, -0.5, 0.25],
            clip_norm: 1.0,
            sampling_rate: 0.25,
        }
    }

    #[test]
    fn a_rule_that_is_not_the_accepted_jobs_is_refused() {
        let train = job("train");
        let ok = Rule::Train(train_rule());
        assert!(JobRule::parse(&train, &job_round(2, &ok)).is_ok());
        type Change = fn(&mut TrainRule);
        let cases: [(&str, u64, Change); 6] = [
            ("iteration", 3, |_| {}),
            ("iteration", 5, |r| r.iteration = 5),
            ("clips", 2, |r| r.clip_norm = 2.0),
            ("samples", 2, |r| r.sampling_rate = 0.5),
            ("weights", 2, |r| r.weights.push(0.0)),
            // JSON has no NaN: it cannot even be published as a number.
            ("rule", 2, |r| r.weights[0] = f64::NAN),
        ];
        for (word, step, change) in cases {
            let mut r = train_rule();
            change(&mut r);
            let e = JobRule::parse(&train, &job_round(step, &Rule::Train(r)))
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(word), "{word}: {e}");
        }
        // θ has b exactly when the job has an intercept: a rule without it for a job with one,
        // or with one for a job without, is refused, and the round is θ's length.
        let mut without_b = train_rule();
        without_b.weights.pop();
        let e = JobRule::parse(&train, &job_round(2, &Rule::Train(without_b.clone())))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("2 weights") && e.contains("and an intercept"),
            "{e}"
        );
        let mut no_intercept = job("train");
        no_intercept.train.as_mut().unwrap().intercept = false;
        let e = JobRule::parse(&no_intercept, &job_round(2, &ok))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("3 weights") && e.contains("no intercept"), "{e}");
        let plain = JobRule::parse(&no_intercept, &job_round(2, &Rule::Train(without_b))).unwrap();
        assert_eq!(plain.expected(&no_intercept).unwrap().dim, 2);
        let with_b = JobRule::parse(&train, &job_round(2, &ok)).unwrap();
        assert_eq!(with_b.expected(&train).unwrap().dim, 3);
        // A rule of another kind, or for another number of columns.
        let sum = Rule::Sum(SumRule { columns: 3 });
        assert!(JobRule::parse(&train, &job_round(0, &sum)).is_err());
        assert!(JobRule::parse(&job("sum"), &job_round(0, &sum)).is_ok());
        let wide = Rule::Sum(SumRule { columns: 4 });
        assert!(JobRule::parse(&job("sum"), &job_round(0, &wide)).is_err());
        assert!(JobRule::parse(&job("sum"), &job_round(0, &ok)).is_err());
        assert!(JobRule::parse(&job("blr"), &job_round(0, &sum)).is_err());
    }

    #[test]
    fn a_regression_round_must_carry_the_jobs_design_or_ranges_inside_it() {
        let spec = job("regression");
        spec.validate().unwrap();
        let design = spec.design().unwrap();
        let round = |step: u64, design: blr::Design| JobRound {
            rule: Contribution::DesignStatistics { design }.to_json(),
            ..job_round(step, &Rule::Sum(SumRule { columns: 3 }))
        };
        let ok = JobRule::parse(&spec, &round(1, design.clone())).unwrap();
        assert!(ok.reads_raw_rows());
        assert_eq!(ok.expected(&spec).unwrap().l2_sensitivity, 1.0);
        let mut wider = design.clone();
        wider.y.upper = 2.0;
        let no_intercept = blr::Design {
            intercept: false,
            ..design.clone()
        };
        // Step 2: the statistics of ranges inside the public ones (the ranges round's).
        let mut narrowed = design.clone();
        narrowed.x[0].lower += 0.25 * (narrowed.x[0].upper - narrowed.x[0].lower);
        narrowed.y.upper -= 0.25 * (narrowed.y.upper - narrowed.y.lower);
        assert!(JobRule::parse(&spec, &round(2, narrowed.clone())).is_ok());
        let moments = JobRound {
            rule: Contribution::DesignMoments {
                design: design.clone(),
            }
            .to_json(),
            ..round(1, design.clone())
        };
        let ranges = JobRule::parse(&spec, &moments).unwrap();
        assert!(ranges.reads_raw_rows());
        assert_eq!(
            ranges.expected(&spec).unwrap().dim,
            2 * (spec.features.len() + 1)
        );
        let late_moments = JobRound {
            step: 2,
            ..moments.clone()
        };
        let no_intercept_2 = blr::Design {
            intercept: false,
            ..narrowed.clone()
        };
        for bad in [
            round(1, narrowed),
            round(1, wider.clone()),
            round(1, no_intercept),
            round(2, wider),
            round(2, no_intercept_2),
            round(
                2,
                blr::Design {
                    indicator_groups: vec![vec![0, 1]],
                    ..design.clone()
                },
            ),
            round(3, design.clone()),
            late_moments,
        ] {
            let e = JobRule::parse(&spec, &bad).err().unwrap().to_string();
            assert!(e.contains("job's design"), "{e}");
        }
        // A blr job's rule, or a sum rule, is not a regression round's.
        let statistics = JobRound {
            rule: Contribution::Statistics {
                bounds_x: vec![1.0, 1.0],
                bound_y: 1.0,
                with_yy: true,
            }
            .to_json(),
            ..round(1, design.clone())
        };
        assert!(JobRule::parse(&spec, &statistics).is_err());
        assert!(JobRule::parse(&spec, &job_round(1, &Rule::Sum(SumRule { columns: 3 }))).is_err());
        assert!(
            !JobRule::parse(&job("blr"), &round(1, design))
                .unwrap()
                .reads_raw_rows()
        );
    }

    /// The job's noise lets its five rounds fit its ρ; a round with half that noise (four
    /// times the cost) does not, and neither does a round without noise.
    #[test]
    fn a_round_whose_noise_does_not_fit_the_jobs_budget_is_refused() {
        let train = job("train");
        let config = crate::protocol::job::train::trainer_config(&train, 6, 2).unwrap();
        let dca_learning::Privacy::Private {
            noise_multiplier: z,
            ..
        } = config.privacy
        else {
            panic!("private")
        };
        let keys = [NodeKeyPair::generate(), NodeKeyPair::generate()];
        let round = |sigma: Option<f64>| {
            let mut s = crate::protocol::spec::tests::spec(6, 2, &keys);
            s.dim = 2;
            s.bound = 2.0;
            s.noise_sigma_total = sigma;
            s.l2_sensitivity = sigma.map(|_| 1.0);
            s.validate().unwrap()
        };
        let rule = JobRule::Train(train_rule());
        rule.check_budget(&train, &round(Some(z))).unwrap();
        let e = rule
            .check_budget(&train, &round(Some(z / 2.0)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ε = 1"), "{e}");
        assert!(rule.check_budget(&train, &round(None)).is_err());
    }
}
