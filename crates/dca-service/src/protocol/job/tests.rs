use super::*;
use crate::hex;

/// The wire and stored form is the lowercase name a job's state had as a string: a status
/// written before the state was typed reads back, and one written now reads the same.
#[test]
fn job_states_keep_their_names_on_the_wire_and_in_stores() {
    let names = [
        (JobState::Answering, "answering"),
        (JobState::Running, "running"),
        (JobState::Done, "done"),
        (JobState::Aborted, "aborted"),
        (JobState::Failed, "failed"),
        (JobState::Cancelled, "cancelled"),
    ];
    for (state, name) in names {
        assert_eq!(
            serde_json::to_string(&state).unwrap(),
            format!("\"{name}\"")
        );
        assert_eq!(state.to_string(), name);
        assert_eq!(state.is_live(), matches!(name, "answering" | "running"));
    }
    let stored = br#"{"id":"ab","state":"failed","reason":"round r: node 1 lost it","accepted":[[0,3]],"refused":[],"node_keys":[],"rounds":[],"rho_reserved":0.5,"rho_spent":0.0}"#;
    let status: JobStatus = serde_json::from_slice(stored).unwrap();
    assert_eq!(status.state, JobState::Failed);
    assert_eq!(serde_json::to_vec(&status).unwrap(), stored.to_vec());
    let unknown = br#"{"id":"ab","state":"paused","accepted":[],"refused":[],"node_keys":[],"rounds":[],"rho_reserved":0.5,"rho_spent":0.0}"#;
    let e = serde_json::from_slice::<JobStatus>(unknown)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown variant `paused`"), "{e}");
}

/// A valid blr job with a roster of 4 (tokens 00…, 01…, 02…, 03…).
pub(crate) fn spec() -> JobSpec {
    JobSpec {
        kind: JobKind::Blr,
        target: ColumnBounds {
            name: "y".into(),
            lo: 0.0,
            hi: 10.0,
            group: None,
        },
        features: vec![ColumnBounds {
            name: "a".into(),
            lo: -1.0,
            hi: 1.0,
            group: None,
        }],
        epsilon: 1.0,
        delta: 1e-5,
        max_dropped: 1,
        mode: "seed".into(),
        roster: (0..4u8).map(|i| hex::encode(&[i; 32])).collect(),
        max_rows: 1,
        answer_window_ms: 1000,
        upload_window_ms: 1000,
        created_unix_ms: 1,
        public_seed: None,
        clipped_share: None,
        validity: None,
        train: None,
    }
}

/// An unknown kind is refused where the spec is read (job file, `PUT /jobs/{id}` body),
/// naming the kind and the supported ones; the known ones keep their names in the id.
#[test]
fn an_unknown_kind_is_refused_when_read() {
    let mut json: serde_json::Value = serde_json::to_value(spec()).unwrap();
    assert_eq!(json["kind"], "blr");
    for bad in ["fit", "sums", "BLR", ""] {
        json["kind"] = bad.into();
        let e = serde_json::from_value::<JobSpec>(json.clone())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("job kind {bad:?} is not supported"))
                && e.contains("\"regression\", \"train\" or \"sum\""),
            "{e}"
        );
    }
    for kind in [
        JobKind::Blr,
        JobKind::Regression,
        JobKind::Train,
        JobKind::Sum,
    ] {
        json["kind"] = kind.as_str().into();
        let read: JobKind = serde_json::from_value(json["kind"].clone()).unwrap();
        assert_eq!(
            (read, serde_json::to_value(kind).unwrap()),
            (kind, json["kind"].clone())
        );
    }
}

#[test]
fn a_valid_spec_passes_and_each_bad_field_is_named() {
    spec().validate().unwrap();
    type Change = Box<dyn Fn(&mut JobSpec)>;
    let cases: Vec<(&str, Change)> = vec![
        ("[train] settings", Box::new(|s| s.kind = JobKind::Train)),
        ("feature", Box::new(|s| s.features.clear())),
        ("bounds", Box::new(|s| s.features[0].hi = -2.0)),
        ("twice", Box::new(|s| s.target.name = "a".into())),
        ("epsilon", Box::new(|s| s.epsilon = 0.0)),
        ("delta", Box::new(|s| s.delta = 0.5)),
        ("mode", Box::new(|s| s.mode = "fast".into())),
        ("honest", Box::new(|s| s.max_dropped = 3)),
        ("roster[1]", Box::new(|s| s.roster[1] = "AB".repeat(32))),
        (
            "listed twice",
            Box::new(|s| s.roster[1] = s.roster[0].clone()),
        ),
        ("max_rows", Box::new(|s| s.max_rows = 0)),
        ("upload_window_ms", Box::new(|s| s.upload_window_ms = 5)),
        (
            "clipped_share = 0",
            Box::new(|s| s.clipped_share = Some(0.0)),
        ),
        (
            "clipped_share = 0.9",
            Box::new(|s| s.clipped_share = Some(0.9)),
        ),
        (
            "clipped_share = NaN",
            Box::new(|s| s.clipped_share = Some(f64::NAN)),
        ),
        (
            "not for a \"sum\" job",
            Box::new(|s| {
                s.kind = JobKind::Sum;
                s.clipped_share = Some(0.05);
            }),
        ),
        (
            "not for a \"regression\" job",
            Box::new(|s| {
                s.kind = JobKind::Regression;
                s.clipped_share = Some(0.05);
            }),
        ),
        (
            "column \"a\" needs a name and finite bounds",
            Box::new(|s| {
                s.kind = JobKind::Regression;
                s.features[0].lo = f64::INFINITY;
            }),
        ),
    ];
    for (word, change) in cases {
        let mut s = spec();
        change(&mut s);
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains(word), "{word}: {e}");
    }
}

#[test]
fn a_regression_jobs_indicator_groups_make_the_designs_and_bad_ones_are_named() {
    let level = |name: &str, group: &str| ColumnBounds {
        name: name.into(),
        lo: 0.0,
        hi: 1.0,
        group: Some(group.into()),
    };
    let mut s = JobSpec {
        kind: JobKind::Regression,
        ..spec()
    };
    let id_without = s.id();
    s.features.extend([
        level("red", "colour"),
        level("m", "size"),
        level("blue", "colour"),
    ]);
    s.validate().unwrap();
    assert_eq!(
        s.design().unwrap().indicator_groups,
        vec![vec![1, 3], vec![2]]
    );
    assert_ne!(s.id(), id_without);
    let without = JobSpec {
        features: s.features[..1].to_vec(),
        ..s.clone()
    };
    // No group: the JSON (and so the id) of a job is what it was before groups existed.
    assert_eq!(without.id(), id_without);
    assert!(
        !String::from_utf8(without.canonical_json())
            .unwrap()
            .contains("group")
    );
    type Change = Box<dyn Fn(&mut JobSpec)>;
    let cases: Vec<(&str, Change)> = vec![
        (
            "groups are for the features of \"regression\" jobs",
            Box::new(|s| s.kind = JobKind::Blr),
        ),
        (
            "\"y\" names an indicator group",
            Box::new(|s| s.target.group = Some("g".into())),
        ),
        (
            "its bounds must be lo = 0, hi = 1",
            Box::new(|s| s.features[2].hi = 2.0),
        ),
    ];
    for (needle, change) in cases {
        let mut bad = s.clone();
        change(&mut bad);
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains(needle), "{needle}: {e}");
    }
}

#[test]
fn the_id_binds_every_field() {
    let a = spec();
    let b = JobSpec {
        epsilon: 1.5,
        ..spec()
    };
    assert_eq!(a.id(), spec().id());
    assert_ne!(a.id(), b.id());
    assert_eq!(a.id().len(), 64);
    // The clipped-share round is part of what participants accept.
    let c = JobSpec {
        clipped_share: Some(0.05),
        ..spec()
    };
    assert_ne!(a.id(), c.id());
    assert!(
        !String::from_utf8(a.canonical_json())
            .unwrap()
            .contains("clipped_share")
    );
}

#[test]
fn clipped_share_goes_to_the_fit_config() {
    let with = JobSpec {
        clipped_share: Some(0.05),
        ..spec()
    };
    let share = |s: &JobSpec| s.fit_config(3).projection.unwrap().clipped_share_budget;
    assert_eq!(share(&with), 0.05);
    assert_eq!(share(&spec()), 0.0);
    with.validate().unwrap();
}
