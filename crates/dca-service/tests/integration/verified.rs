//! Verified rounds across processes (`validity` in the round spec): node processes of the
//! `dpdist` binary check every contribution on its shares, the aggregator relays their verifier
//! shares. Two participants cheat — one inflates node 0's share by 10⁶ times the round's bound,
//! one sends a node a share expanding to garbage (as a huge noise slice would) — and are left out
//! and named; the release equals DCA's over the honest clients bit for bit (insecure seed), in
//! both share modes, with both bounds, on both stores. A verified job runs every round verified
//! and plans its noise at the δ its rounds' truncation leaves.

use crate::common;
use rstest::rstest;

use std::time::Duration;

use common::*;
use dca_service::protocol::upload::{seal_for, upload_shares};
use dca_service::protocol::validity::ValiditySpec;
use dca_service::protocol::verified_close::{
    MEDIA_CLIENT_LIST, MEDIA_VERIFIED_CLOSE, VerifiedClose, decode_verifier_shares,
    encode_client_list,
};
use dp_noise::rng::RngSource;
use fixedpoint_shares::ClientId;
use prio::codec::Decode;
use prio::field::Field128;
use prio::vdaf::prio3::Prio3InputShare;
use reqwest::StatusCode;
use verified_shares::{VerifiedClient, VerifiedReport};

const LIMIT: Duration = Duration::from_secs(300);
const CHEATERS: [u64; 2] = [2, 5];

/// Client `client` of `round` shards honestly, then `tamper`s with its report before sealing.
async fn upload_cheating(
    cluster: &Cluster,
    round: &dca_service::protocol::spec::Round,
    client: u64,
    tamper: impl Fn(&mut VerifiedReport),
) {
    let validity = round.validity.as_ref().unwrap();
    let mut report = VerifiedClient::new(
        &round.config,
        validity.bound,
        ClientId(client),
        RngSource::InsecureFixedSeed(SEED).derive(client),
    )
    .unwrap()
    .shard(&values(client as usize, round.config.dim()))
    .unwrap();
    tamper(&mut report);
    let sealed: Vec<Vec<u8>> = (0..cluster.nodes.len())
        .map(|k| seal_for(round, client, k as u16, &report.node_message(k).unwrap()).unwrap())
        .collect();
    upload_shares(
        &cluster.http,
        round,
        &cluster.urls(),
        client,
        &client_token(client),
        &sealed,
    )
    .await
    .unwrap();
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cheating_participants_are_left_out_and_the_honest_sum_released(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some((cluster, _secret)) = verifying_cluster("verified", 3, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let (n, dim) = (8usize, 5usize);
        let mut round_no = 300;
        let (mut rho, mut sum_delta_t) = (0.0, 0.0);
        for validity in [
            ValiditySpec::Linf {
                truncation_delta: 1e-9,
            },
            // Every input has |x_j| ≤ 8 (the spec's bound), so ‖x‖₂ ≤ 8·√5.
            ValiditySpec::L2 {
                data_norm: 8.0 * 5f64.sqrt(),
                truncation_delta: 1e-9,
            },
        ] {
            for mode in ["full", "seed"] {
                round_no += 1;
                let mut spec = spec(round_no, n, 2, dim, mode, Some(2.5), keys.clone());
                spec.validity = Some(validity);
                let round = agg.create_round(spec).await.unwrap();
                let bound = round.validity.as_ref().unwrap().bound.units();
                upload_all(
                    &cluster,
                    &round,
                    (0..n as u64).filter(|i| !CHEATERS.contains(i)),
                )
                .await;
                // 10⁶ times the bound on node 0's share of the first coordinate.
                upload_cheating(&cluster, &round, CHEATERS[0], |report| {
                    if let Prio3InputShare::Leader {
                        measurement_share, ..
                    } = &mut report.input_shares[0]
                    {
                        measurement_share[0] += Field128::from(1_000_000 * u128::from(bound));
                    }
                })
                .await;
                // Node 1's seed expands to another share: every coordinate moves by garbage.
                upload_cheating(&cluster, &round, CHEATERS[1], |report| {
                    if let Prio3InputShare::Helper {
                        meas_and_proofs_share,
                        ..
                    } = &mut report.input_shares[1]
                    {
                        let mut bytes = meas_and_proofs_share.as_ref().to_vec();
                        bytes[0] ^= 1;
                        *meas_and_proofs_share =
                            prio::vdaf::xof::Seed::get_decoded(&bytes).unwrap();
                    }
                })
                .await;
                let net = agg.release(&round).await.unwrap();
                let what = format!("{validity:?} {mode}");
                assert_eq!(net.invalid.as_deref(), Some(&CHEATERS[..]), "{what}");
                let honest = in_process(&round, &CHEATERS);
                assert_eq!(net.sum_units, honest.sum_units, "{what}");
                assert_eq!(bits(&net.sum), bits(&honest.sum), "{what}");
                assert_eq!(
                    net.noise_sigma_released.to_bits(),
                    honest.noise_sigma_released.to_bits()
                );
                let expected: Vec<u64> = (0..n as u64).filter(|i| !CHEATERS.contains(i)).collect();
                assert_eq!(net.clients, expected, "{what}");
                let delta_t = round.validity.as_ref().unwrap().bound.truncation_delta();
                assert!(delta_t > 0.0 && delta_t <= 1e-9, "{delta_t}");
                assert_eq!(net.truncation_delta, Some(delta_t));
                sum_delta_t += delta_t;
                // As in network.rs: Δ₂ = 1 plus one grid unit per coordinate for rounding.
                let f = round.config.codec().frac_bits() as i32;
                rho += (1.0 + 5f64.sqrt() * 2f64.powi(-f)).powi(2) / (2.0 * 2.5 * 2.5);
            }
        }
        // The accountant converts ρ at δ′ = 1e-5 − D, where D = (1 + e^ε(δ′))·Σδ_t: the
        // truncation of the four verified rounds' noise is charged as δ.
        let eps = |delta: f64| rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt();
        let mut d = 0.0;
        for _ in 0..20 {
            d = (1.0 + eps(1e-5 - d).exp()) * sum_delta_t;
        }
        let spent = agg.spent();
        assert!(spent.epsilon > eps(1e-5), "{spent:?}");
        assert!(
            (spent.epsilon - eps(1e-5 - d)).abs() < 1e-9,
            "{spent:?} vs {}",
            eps(1e-5 - d)
        );
        // A third cheater is one past T = 2: the round is aborted, nothing released.
        round_no += 1;
        let mut spec = spec(round_no, n, 2, dim, "seed", Some(2.5), keys.clone());
        spec.validity = Some(ValiditySpec::Linf {
            truncation_delta: 1e-9,
        });
        let round = agg.create_round(spec).await.unwrap();
        let bound = round.validity.as_ref().unwrap().bound.units();
        upload_all(&cluster, &round, 3..n as u64).await;
        for client in 0..3 {
            upload_cheating(&cluster, &round, client, |report| {
                if let Prio3InputShare::Leader {
                    measurement_share, ..
                } = &mut report.input_shares[0]
                {
                    measurement_share[1] += Field128::from(3 * u128::from(bound));
                }
            })
            .await;
        }
        let refused = agg.release(&round).await.unwrap_err().to_string();
        assert!(refused.contains("3 clients missing"), "{refused}");
    })
    .await
    .expect("test exceeded its time limit");
}

/// A node without the operators' verify secret refuses to join a verified round (named cause),
/// and a plain close of a verified round is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_verify_secret_refuses_verified_rounds() {
    tokio::time::timeout(LIMIT, async {
        let cluster = Cluster::start("verified-nosecret", 2);
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let mut spec = spec(1, 4, 1, 3, "seed", None, keys);
        spec.validity = Some(ValiditySpec::Linf {
            truncation_delta: 1e-9,
        });
        let refused = agg.create_round(spec).await.unwrap_err().to_string();
        assert!(refused.contains("verify secret"), "{refused}");
        assert!(refused.contains("409"), "{refused}");
    })
    .await
    .expect("test exceeded its time limit");
}

/// A node refuses a close whose verdicts do not finish its checks (a relay that lies, or
/// another node's), storing nothing; the aggregator's own close then releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refuses_verdicts_that_do_not_finish_its_checks() {
    tokio::time::timeout(LIMIT, async {
        let (cluster, _secret) =
            verifying_cluster("verified-verdicts", 2, Store::Sqlite).expect("SQLite");
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let mut spec = spec(7, 4, 1, 3, "seed", Some(2.5), keys);
        spec.validity = Some(ValiditySpec::Linf {
            truncation_delta: 1e-9,
        });
        let round = agg.create_round(spec).await.unwrap();
        upload_all(&cluster, &round, 0..4).await;
        let (url, id) = (&cluster.nodes[0].url, round.id());
        let pairs = cluster
            .http
            .get(format!("{url}/rounds/{id}/received"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec();
        // Node 1 keeps its checks from /verify; node 0 has none kept and runs them again at
        // close: verdicts of zeros finish neither.
        let verify = cluster
            .http
            .post(format!("{}/rounds/{id}/verify", cluster.nodes[1].url))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", MEDIA_CLIENT_LIST)
            .body(encode_client_list(&[0, 1, 2, 3]))
            .send()
            .await
            .unwrap();
        assert_eq!(verify.status(), StatusCode::OK);
        let shares = decode_verifier_shares(&verify.bytes().await.unwrap(), 4).unwrap();
        assert!(shares.iter().all(Option::is_some));
        let lying = VerifiedClose {
            pairs,
            verdicts: vec![vec![0; 32]; 4],
            invalid: vec![],
        };
        let refused = cluster
            .http
            .post(format!("{url}/rounds/{id}/close"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", MEDIA_VERIFIED_CLOSE)
            .body(lying.encode())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::CONFLICT);
        let body = refused.text().await.unwrap();
        assert!(body.contains("verdict-refused"), "{body}");
        // A plain close of a verified round is refused too.
        let on_node_1 = cluster
            .http
            .post(format!("{}/rounds/{id}/close", cluster.nodes[1].url))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", MEDIA_VERIFIED_CLOSE)
            .body(lying.encode())
            .send()
            .await
            .unwrap();
        assert_eq!(on_node_1.status(), StatusCode::CONFLICT);
        let plain = cluster
            .http
            .post(format!("{url}/rounds/{id}/close"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", dca_service::MEDIA_PAIR_SET)
            .body(lying.pairs.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(plain.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let net = agg.release(&round).await.unwrap();
        assert_eq!(net.invalid.as_deref(), Some(&[][..]));
        assert_eq!(net.sum_units, in_process(&round, &[]).sum_units);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A `blr` job with `validity = linf` (and the clipped-share round: three rounds) over five
/// `dpdist participant` processes with uneven rows: every round is verified, the job's noise is
/// planned at δ′ = δ − (1 + e^ε)·3·δ_t, and the release equals the in-process pipeline's at that
/// δ′ bit for bit (insecure seeds, whose noise no truncation reaches). The aggregator's
/// reservation carries the 3·δ_t after the job settles; the participants' ledgers commit at
/// most the job's ε.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_job_plans_its_noise_at_the_delta_its_truncation_leaves(#[case] store: Store) {
    use crate::participants::{POLICY, assert_same_fit, diabetes, in_process, job_spec};
    use common::jobs::*;
    use dca_service::protocol::job::JobSpec;

    tokio::time::timeout(LIMIT, async {
        let Some((cluster, _secret)) = verifying_cluster("verified-job", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let delta_t = 1e-9;
        let spec = JobSpec {
            clipped_share: Some(0.05),
            validity: Some(ValiditySpec::Linf {
                truncation_delta: delta_t,
            }),
            ..job_spec(5, 1, 200, 120_000)
        };
        // By hand: δ′ = 1e-5 − (1 + e¹)·3e-9.
        let delta_noise = 1e-5 - (1.0 + 1f64.exp()) * 3.0 * delta_t;
        assert_eq!(spec.noise_budget().unwrap().delta, delta_noise);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let mut start = 0;
        let dirs: Vec<_> = [20usize, 40, 80, 100, 200]
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let own = &rows[start..start + n];
                start += n;
                participant_files(&cluster.dir, i, &header, own, POLICY)
            })
            .collect();
        let view = run_all_taking_part(&cluster, &aggregator.url, &dirs, &id).await;
        assert!(
            view.status
                .rounds
                .iter()
                .all(|r| r.spec.validity == spec.validity),
            "{:?}",
            view.status.rounds
        );
        let local = in_process(&spec, &dirs);
        assert_same_fit(&view, &local);
        let result = view.status.result.as_ref().unwrap();
        let reported = local.spent.delta + (1.0 + local.spent.epsilon.exp()) * 3.0 * delta_t;
        assert_eq!(result.spent_delta.to_bits(), reported.to_bits());
        assert!(local.spent.delta <= delta_noise && reported <= 1e-5 * (1.0 + 1e-12));
        // The reservation is ρ at δ′, less than at δ.
        let plain = JobSpec {
            validity: None,
            ..spec.clone()
        };
        assert_eq!(view.status.rho_reserved, spec.rho().unwrap());
        assert!(view.status.rho_reserved < plain.rho().unwrap());
        for dir in &dirs {
            let committed = dca_service::participant::ledger::LedgerFile::read(&dir.join("state"))
                .unwrap()
                .expect("a ledger")
                .ledger
                .committed();
            assert!(committed > 0.9 && committed <= 1.0, "{committed}");
        }
        // The settled reservation keeps the three rounds' δ_t: the accountant converts what
        // the job spent at δ_B − D, D = (1 + e^ε(δ_B − D))·3·δ_t (by iteration, as by hand).
        let rho = view.status.rho_spent;
        let eps = |delta: f64| rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt();
        let mut d = 0.0;
        for _ in 0..20 {
            d = (1.0 + eps(1e-5 - d).exp()) * 3.0 * delta_t;
        }
        let spent = cluster.aggregator("aggregator.sqlite").spent();
        assert!(
            (spent.epsilon - eps(1e-5 - d)).abs() < 1e-9,
            "{spent:?} against {}",
            eps(1e-5 - d)
        );
        assert!(spent.epsilon > eps(1e-5));
    })
    .await
    .expect("test exceeded its time limit");
}
