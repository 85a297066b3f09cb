//! The `train` and `sum` kinds: settings, rules, results and the planned noise.

use super::noise_plan::*;
use super::round_rule::*;
use super::sum::*;
use super::train::*;
use super::train_settings::*;
use crate::hex;
use crate::protocol::job::{ColumnBounds, JobKind, JobSpec};
use dca_learning::Privacy;

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
        validity: None,
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

/// A verified job plans its noise at δ′ = δ − (1 + e^ε)·R·δ_t, R its most rounds. By hand for
/// ε = 1, δ = 1e-5, δ_t = 1e-9: R = 1 (sum) 9.996281718171542e-6; R = 2 (blr, regression)
/// 9.992563436343082e-6; R = 3 (blr with its clipped-share round) 9.988845154514623e-6;
/// R = 10 (train, 10 iterations) 9.96281718171541e-6. At R = 2, ρ = (√(L + 1) − √L)² with
/// L = ln(1/δ′) is 0.020818647970100256 (0.0208199383395355 at δ). Without a validity mode
/// nothing changes, the id included; `l2`, a δ_t out of (0, 1) and a truncation that takes all
/// of δ (δ_t > δ/(1 + e) = 2.69e-6 for a sum job) are refused.
#[test]
fn a_verified_job_plans_its_noise_at_the_delta_its_truncation_leaves() {
    use crate::protocol::validity::ValiditySpec;
    let linf = |truncation_delta| Some(ValiditySpec::Linf { truncation_delta });
    let verified = |kind: &str| JobSpec {
        validity: linf(1e-9),
        ..spec(kind)
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-15 * b.abs();
    for (spec, rounds, delta) in [
        (verified("sum"), 1, 9.996281718171542e-6),
        (verified("blr"), 2, 9.992563436343082e-6),
        (verified("regression"), 2, 9.992563436343082e-6),
        (
            JobSpec {
                clipped_share: Some(0.05),
                ..verified("blr")
            },
            3,
            9.988845154514623e-6,
        ),
        (verified("train"), 10, 9.96281718171541e-6),
    ] {
        spec.validate().unwrap();
        assert_eq!(spec.max_rounds(), rounds, "{:?}", spec.kind);
        let budget = spec.noise_budget().unwrap();
        assert_eq!(budget.epsilon, 1.0);
        assert!(
            close(budget.delta, delta),
            "{:?}: {}",
            spec.kind,
            budget.delta
        );
    }
    // `rho_from_budget` keeps a margin of 1e-9 below the largest ρ.
    let near = |a: f64, b: f64| (a - b).abs() <= 2e-9 * b;
    assert!(near(verified("blr").rho().unwrap(), 0.020818647970100256));
    assert!(near(spec("blr").rho().unwrap(), 0.0208199383395355));
    assert_eq!(spec("blr").noise_budget().unwrap().delta, 1e-5);
    assert_eq!(spec("blr").truncation_delta(), 0.0);
    assert!(close(verified("train").truncation_delta(), 1e-8));
    assert!(
        !String::from_utf8(spec("blr").canonical_json())
            .unwrap()
            .contains("validity")
    );
    assert_ne!(spec("blr").id(), verified("blr").id());
    for (word, validity) in [
        (
            "jobs take \"linf\"",
            Some(ValiditySpec::L2 {
                data_norm: 1.0,
                truncation_delta: 1e-9,
            }),
        ),
        ("must be in (0, 1)", linf(0.0)),
        ("must be in (0, 1)", linf(1.0)),
        ("takes all of δ", linf(2.7e-6)),
    ] {
        let e = JobSpec {
            validity,
            ..spec("sum")
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains(word), "{word}: {e}");
    }
    let e = JobSpec {
        validity: linf(2.6e-6),
        ..spec("sum")
    };
    e.validate().unwrap();
}
