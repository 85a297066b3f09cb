//! Unit tests of the aggregator: charges, recorded rounds and closes, the live-round cache.

use super::budget::replay;
use super::{legacy_close_json, recorded_round, recorded_spec, round_rho};
use crate::Error;
use crate::aggregator::store::Charges;
use crate::aggregator::store::RoundPhase;
use crate::hex;
use crate::protocol::job::JobState;
use crate::protocol::spec::{RoundSpec, token_hash};
use share_sealing::NodeKeyPair;
use std::time::Duration;

fn round(frac_bits: u32) -> crate::protocol::spec::Round {
    RoundSpec {
        validity: None,
        round: 1,
        n_clients: 16,
        n_nodes: 2,
        max_dropped: 2,
        dim: 5,
        bound: 1.0,
        mode: "seed".into(),
        noise_sigma_total: Some(2.5),
        l2_sensitivity: Some(1.0),
        frac_bits: Some(frac_bits),
        deadline_unix_ms: 1_900_000_000_000,
        node_keys: (0..2)
            .map(|_| hex::encode(&NodeKeyPair::generate().public.to_bytes()))
            .collect(),
        client_token_sha256: (0..16)
            .map(|i| hex::encode(&token_hash(&format!("t{i}"))))
            .collect(),
    }
    .validate()
    .unwrap()
}

/// On a coarse grid (f = 4) the rounding term is large: ρ = (Δ₂·2^f + √d)² /
/// (2·(N − T − 1)·σ_c²·2^2f) with σ_c = σ/√(N − T − 1) is (1 + √5/16)² / (2·2.5²) = 0.1039…,
/// not the continuous 0.08 (KLS's τ underflows at σ_c·2^f ≈ 11).
#[test]
fn the_charge_counts_the_grid_rounding_like_the_pipeline() {
    let by_hand = (1.0 + 5f64.sqrt() / 16.0).powi(2) / (2.0 * 2.5 * 2.5);
    let rho = round_rho(&round(4)).unwrap().unwrap();
    assert!(
        (rho - by_hand).abs() < 1e-12 * by_hand,
        "{rho} vs {by_hand}"
    );
    assert!(rho > 0.1);
}

/// A round recorded as a round config reads back under its id; one recorded as JSON with
/// its token list inline (older versions) under the id it had then, the SHA-256 of that JSON.
/// Verified rounds' truncation: ρ = 0.1 with Σδ_t = 2e-9 under (ε, δ) = (5, 1e-5). By hand
/// (python, float64): D = (1 + e^ε(1e-5 − D))·2e-9 with ε(δ′) = ρ + 2·sqrt(ρ·ln(1/δ′)),
/// iterated to its fixed point, is D = 2.0902765076679054e-08 and ε = 2.2461610311581874
/// (2.2459660262893473 without the truncation).
#[test]
fn the_truncation_of_verified_rounds_is_charged_as_delta_at_its_fixed_point() {
    let budget = dp_noise::PrivacyLoss {
        epsilon: 5.0,
        delta: 1e-5,
    };
    let plain = replay(
        budget,
        &Charges {
            rho: vec![0.1],
            truncation_delta: 0.0,
        },
    )
    .unwrap()
    .spent();
    assert!(
        (plain.epsilon - 2.2459660262893473).abs() < 1e-12,
        "{plain:?}"
    );
    let verified = replay(
        budget,
        &Charges {
            rho: vec![0.1],
            truncation_delta: 2e-9,
        },
    )
    .unwrap()
    .spent();
    // The charge sits a hair (1e-9 relative) above the fixed point.
    assert!(
        (verified.epsilon - 2.2461610311581874).abs() < 1e-9,
        "{verified:?}"
    );
    assert_eq!(verified.delta, 1e-5);
    // (1 + e^ε)·δ_t ≥ 10.4·1e-6 is past the budget's δ alone: refused.
    let refused = replay(
        budget,
        &Charges {
            rho: vec![0.1],
            truncation_delta: 1e-6,
        },
    );
    assert!(matches!(refused, Err(Error::Budget(_))), "{refused:?}");
}

#[test]
fn recorded_rounds_read_back_under_the_id_they_were_created_with() {
    use sha2::{Digest, Sha256};
    let r = round(4);
    let config = r.config_bytes().unwrap();
    assert_eq!(recorded_round(&r.id(), &config).unwrap().hash, r.hash);
    let e = recorded_round(&"ab".repeat(32), &config).unwrap_err();
    assert!(matches!(e, Error::Integrity(_)), "{e}");
    // The spec's JSON with the list as its last field, as those versions wrote it.
    let spec = r.spec.canonical_json();
    let list = format!(
        ",\"client_token_sha256\":[\"{}\"]}}",
        r.spec.client_token_sha256.join("\",\"")
    );
    let json = [&spec[..spec.len() - 1], list.as_bytes()].concat();
    let old_id = hex::encode(&Sha256::digest(&json));
    let old = recorded_round(&old_id, &json).unwrap();
    assert_eq!(old.id(), old_id);
    assert_eq!(old.token_hashes, r.token_hashes);
    assert!(matches!(
        recorded_round(&r.id(), &json),
        Err(Error::Integrity(_))
    ));
    assert_eq!(recorded_spec(&config).unwrap().round, 1);
    assert_eq!(recorded_spec(&json).unwrap().round, 1);
}

/// A live round is read from the store and checked once: later passes get the same
/// `Arc` (its spec is not read again); it leaves the cache when it is no longer live.
#[test]
fn live_rounds_are_read_once_and_forgotten_once_they_end() {
    let dir = crate::scratch_dir("live-rounds");
    let agg = crate::aggregator::Aggregator::open(
        &dir.join("aggregator.sqlite"),
        {
            let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
            crate::http::tls::http_client(ca.cert.pem().as_bytes(), 1, Duration::from_secs(1))
                .unwrap()
        },
        vec!["https://127.0.0.1:9".into(); 2],
        "admin".to_string(),
        dp_noise::PrivacyLoss {
            epsilon: 10.0,
            delta: 1e-5,
        },
    )
    .unwrap();
    let a = round(4);
    let mut b = a.spec.clone();
    b.round = 2;
    let b = b.validate().unwrap();
    for r in [&a, &b] {
        agg.store
            .insert_round(&r.id(), &r.config_bytes().unwrap())
            .unwrap();
    }
    let ids = |rounds: Vec<std::sync::Arc<crate::protocol::spec::Round>>| {
        rounds.iter().map(|r| r.id()).collect::<Vec<_>>()
    };
    let first = agg.open_rounds().unwrap();
    assert_eq!(ids(first.clone()), [a.id(), b.id()]);
    let again = agg.open_rounds().unwrap();
    assert!(std::sync::Arc::ptr_eq(&first[0], &again[0]));
    assert!(std::sync::Arc::ptr_eq(&first[1], &again[1]));

    assert!(agg.store.begin_abort(&b.id(), "test").unwrap());
    assert_eq!(ids(agg.open_rounds().unwrap()), [a.id()]);
    let aborting = agg.live_rounds_in(&[RoundPhase::Aborting]).unwrap();
    assert!(std::sync::Arc::ptr_eq(&aborting[0], &first[1]));
    agg.store.finish_abort(&b.id()).unwrap();
    assert_eq!(ids(agg.open_rounds().unwrap()), [a.id()]);
    assert!(
        agg.live_rounds_in(&[RoundPhase::Aborting])
            .unwrap()
            .is_empty()
    );
    let cached: Vec<String> = agg.live_rounds.0.lock().unwrap().keys().cloned().collect();
    assert_eq!(cached, [a.id()]);
}

#[test]
fn a_close_recorded_as_json_reads_back_as_its_pairs() {
    let body = br#"{"agreed":[7,2],"shards":["00000000000000ff","0102030405060708"]}"#;
    let pairs = legacy_close_json(body, 8).unwrap();
    assert_eq!(
        pairs.iter().collect::<Vec<_>>(),
        [
            (
                fixedpoint_shares::ClientId(2),
                fixedpoint_shares::ShardId(0x0102_0304_0506_0708)
            ),
            (
                fixedpoint_shares::ClientId(7),
                fixedpoint_shares::ShardId(0xff)
            )
        ]
    );
    for bad in [
        &br#"{"agreed":[7],"shards":[]}"#[..],
        br#"{"agreed":[8],"shards":["00000000000000ff"]}"#,
        br#"{"agreed":[1,1],"shards":["00000000000000ff","00000000000000ff"]}"#,
        br#"{"agreed":[1],"shards":["ff"]}"#,
        b"DPDP",
    ] {
        assert!(legacy_close_json(bad, 8).is_err());
    }
}

/// Two aggregators (replicas) on one store: the analyst's cancel on B is read before, and
/// written after, a status write of A's driver. The cancel must not overwrite it: the job
/// ends cancelled *with* the round A recorded (before the compare-and-swap, B wrote back the
/// status it had read, and A's round was lost).
fn a_cancel_on_one_replica_keeps_the_drivers_write_on_another(
    at: &crate::aggregator::AggregatorStoreLocation,
) {
    use crate::aggregator::Aggregator;
    // No node is ever called: a client that trusts a CA of its own.
    let ca = crate::http::tls::tests::pki("127.0.0.1").0;
    let open = || {
        Aggregator::open_at(
            at,
            crate::http::tls::http_client(ca.as_bytes(), 1, Duration::from_secs(5)).unwrap(),
            vec!["https://127.0.0.1:9".into(), "https://127.0.0.1:9".into()],
            "admin",
            dp_noise::PrivacyLoss {
                epsilon: 10.0,
                delta: 1e-4,
            },
        )
        .unwrap()
    };
    let (a, b) = (open(), open());
    let spec = crate::protocol::job::tests::spec();
    let status = crate::aggregator::jobs::driver::initial_status(&spec, vec![]).unwrap();
    let (id, created) = a
        .create_job(&spec, &serde_json::to_vec(&status).unwrap())
        .unwrap();
    assert!(created);
    // A drives the job (it created it, so it holds the lease): it is running.
    a.update_job_as_driver(&id, |s| {
        s.state = JobState::Running;
        Ok(())
    })
    .unwrap();
    let recorded = crate::protocol::job::JobRound {
        step: 0,
        id: "ab".repeat(32),
        // A job status keeps no token list.
        spec: RoundSpec {
            client_token_sha256: vec![],
            ..round(8).spec
        },
        rule: "{}".into(),
        clients: vec![0, 1, 2],
    };
    let mut calls = 0;
    let cancelled = b
        .update_job(&id, |s| {
            calls += 1;
            if calls == 1 {
                // Between B's read and B's write, A's driver records a round.
                a.update_job_as_driver(&id, |s| {
                    s.rounds.push(recorded.clone());
                    Ok(())
                })
                .unwrap();
            }
            s.state = JobState::Cancelled;
            s.reason = Some("cancelled by the analyst".into());
            Ok(())
        })
        .unwrap();
    let (_, stored) = b.job(&id).unwrap().unwrap();
    assert_eq!(stored.state, JobState::Cancelled);
    assert_eq!(
        stored.rounds,
        vec![recorded.clone()],
        "the driver's write, made between the cancel's read and its write, was lost"
    );
    assert_eq!(cancelled, stored);
    assert_eq!(calls, 2, "the cancel was made again on the status A wrote");
    // The job ended: A's driver writes nothing more.
    assert!(matches!(
        a.update_job_as_driver(&id, |s| {
            s.state = JobState::Done;
            Ok(())
        }),
        Err(Error::JobLeaseLost(_))
    ));
}

#[test]
fn a_cancel_on_one_replica_keeps_the_drivers_write_on_another_sqlite() {
    let dir = crate::scratch_dir("agg-job-cas");
    a_cancel_on_one_replica_keeps_the_drivers_write_on_another(
        &crate::aggregator::AggregatorStoreLocation::Sqlite(dir.join("agg.sqlite")),
    );
}

#[test]
fn a_cancel_on_one_replica_keeps_the_drivers_write_on_another_postgres() {
    let Some(db) = crate::aggregator::store::pg_test_db("agg_job_cas") else {
        return;
    };
    a_cancel_on_one_replica_keeps_the_drivers_write_on_another(&db.location());
}
