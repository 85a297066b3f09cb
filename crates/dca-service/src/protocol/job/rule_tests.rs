//! A participant's checks of a round's rule against the job it accepted, per kind.

use blr::Contribution;
use share_sealing::NodeKeyPair;

use super::kind::RoundRule;
use super::round_rule::{Rule, SumRule, TrainRule};
use super::train_settings::TrainSettings;
use super::{ColumnBounds, JobKind, JobRound, JobSpec};
use crate::Result;
use crate::hex;

/// What a participant makes of `job_round` in the job it accepted.
fn parse(spec: &JobSpec, job_round: &JobRound) -> Result<Box<dyn RoundRule>> {
    spec.kind.round_rule(spec, job_round)
}

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
        validity: None,
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
    assert!(parse(&train, &job_round(2, &ok)).is_ok());
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
        let e = parse(&train, &job_round(step, &Rule::Train(r)))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(word), "{word}: {e}");
    }
    // θ has b exactly when the job has an intercept: a rule without it for a job with one,
    // or with one for a job without, is refused, and the round is θ's length.
    let mut without_b = train_rule();
    without_b.weights.pop();
    let e = parse(&train, &job_round(2, &Rule::Train(without_b.clone())))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("2 weights") && e.contains("and an intercept"),
        "{e}"
    );
    let mut no_intercept = job("train");
    no_intercept.train.as_mut().unwrap().intercept = false;
    let e = parse(&no_intercept, &job_round(2, &ok))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("3 weights") && e.contains("no intercept"), "{e}");
    let plain = parse(&no_intercept, &job_round(2, &Rule::Train(without_b))).unwrap();
    assert_eq!(plain.expected(&no_intercept).unwrap().dim, 2);
    let with_b = parse(&train, &job_round(2, &ok)).unwrap();
    assert_eq!(with_b.expected(&train).unwrap().dim, 3);
    // A rule of another kind, or for another number of columns.
    let sum = Rule::Sum(SumRule { columns: 3 });
    assert!(parse(&train, &job_round(0, &sum)).is_err());
    assert!(parse(&job("sum"), &job_round(0, &sum)).is_ok());
    let wide = Rule::Sum(SumRule { columns: 4 });
    assert!(parse(&job("sum"), &job_round(0, &wide)).is_err());
    assert!(parse(&job("sum"), &job_round(0, &ok)).is_err());
    assert!(parse(&job("blr"), &job_round(0, &sum)).is_err());
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
    let ok = parse(&spec, &round(1, design.clone())).unwrap();
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
    assert!(parse(&spec, &round(2, narrowed.clone())).is_ok());
    let moments = JobRound {
        rule: Contribution::DesignMoments {
            design: design.clone(),
        }
        .to_json(),
        ..round(1, design.clone())
    };
    let ranges = parse(&spec, &moments).unwrap();
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
        let e = parse(&spec, &bad).err().unwrap().to_string();
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
    assert!(parse(&spec, &statistics).is_err());
    assert!(parse(&spec, &job_round(1, &Rule::Sum(SumRule { columns: 3 }))).is_err());
    assert!(
        !parse(&job("blr"), &round(1, design))
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
    let rule = parse(&train, &job_round(2, &Rule::Train(train_rule()))).unwrap();
    rule.check_budget(&train, &round(Some(z))).unwrap();
    let e = rule
        .check_budget(&train, &round(Some(z / 2.0)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("ε = 1"), "{e}");
    assert!(rule.check_budget(&train, &round(None)).is_err());
}
