//! Iterative private learning (DCA paper Sec. 4.2) across processes on loopback: two
//! `dpdist node` processes and a `dpdist aggregator` server; the trainer and its clients are
//! this test. Every iteration's DCA round runs on the services and must release exactly what the
//! in-process trainer releases with the same seed — also with a client that drops out, which
//! the aggregator handles at the round's deadline. Every process is killed when its guard drops;
//! every wait is bounded.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::time::Duration;

use common::*;
use dca_learning::{
    ClientSampling, Model, Optimizer, Privacy, PrivacyLoss, Records, RngSource, Trainer,
    TrainerConfig,
};
use dca_service::analyst::fit::NetworkTransport;
use dca_service::analyst::train::train_over_network;

const LIMIT: Duration = Duration::from_secs(300);

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// 30 records, 3 features, labels from the sign of a fixed linear score (deterministic).
fn sample_records() -> Records {
    let (n, d) = (30, 3);
    let x: Vec<f64> = (0..n * d)
        .map(|k| ((k * 7 + 3) % 11) as f64 / 10.0 - 0.5)
        .collect();
    let y = x
        .chunks(d)
        .map(|r| f64::from(r[0] - 0.5 * r[1] + 0.25 * r[2] > 0.0))
        .collect();
    Records::new(x, d, y).unwrap()
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn training_over_the_services_equals_the_in_process_trainer_bit_for_bit(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("train", 2, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let records = sample_records();
        let config = TrainerConfig {
            model: Model::Logistic {
                l2: 1e-3,
                intercept: false,
            },
            sampling: ClientSampling::Poisson { rate: 0.5 },
            clip_norm: 1.0,
            privacy: Privacy::Private {
                budget: PrivacyLoss {
                    epsilon: 5.0,
                    delta: 1e-5,
                },
                noise_multiplier: 4.0,
            },
            optimizer: Optimizer::adam(0.1),
            n_nodes: 2,
            max_dropped: 1,
        };
        let seed = RngSource::InsecureFixedSeed(2019);
        let trainer = Trainer::new(config, records.len(), records.dim(), seed).unwrap();

        let mut transport = NetworkTransport::new(
            tokio::runtime::Handle::current(),
            cluster.http.clone(),
            aggregator.url.clone(),
            ANALYST_TOKEN.to_string(),
        );
        transport.concurrency = 8;
        transport.upload_window = Duration::from_secs(120);
        let run = train_over_network(transport, trainer.clone(), records.clone(), 3)
            .await
            .unwrap();

        let mut local = trainer;
        let local_steps: Vec<_> = (0..3).map(|_| local.step(&records, &[]).unwrap()).collect();
        assert_eq!(run.steps.len(), 3);
        assert_eq!(
            run.transport.releases.len(),
            3,
            "one aggregator round per iteration"
        );
        for (k, (net, own)) in run.steps.iter().zip(&local_steps).enumerate() {
            assert_eq!(run.transport.releases[k].round, k as u64);
            assert_eq!(
                bits(&net.released_sum),
                bits(&own.released_sum),
                "iteration {k}"
            );
            assert_eq!(net.n_included, records.len());
            assert!(net.noise_sigma_released > 0.0);
            assert_eq!(net.spent, own.spent);
        }
        assert_eq!(bits(run.trainer.params()), bits(local.params()));
        assert_eq!(run.trainer.iteration(), 3);

        // A client that sends nothing: the aggregator closes the round at its deadline without
        // it, and the release is still the in-process one (which drops the same client).
        let (mut net_trainer, mut transport) = (run.trainer, run.transport);
        transport.upload_window = Duration::from_secs(15);
        let handle = tokio::task::spawn_blocking(move || {
            let step = net_trainer.step_via(&sample_records(), &[4], &mut transport);
            (step, net_trainer)
        });
        let (step, net_trainer) = handle.await.unwrap();
        let step = step.unwrap();
        let own = local.step(&records, &[4]).unwrap();
        assert_eq!(step.n_included, records.len() - 1);
        assert_eq!(bits(&step.released_sum), bits(&own.released_sum));
        assert_eq!(bits(net_trainer.params()), bits(local.params()));
    })
    .await
    .expect("test exceeded its time limit");
}

/// `dpdist train --no-intercept` with a fixed seed releases the weights `dpdist train`
/// released before it had intercepts, bit for bit: the constants are what the same command
/// without the flag printed at commit 0980f78 (not computed here). Twelve clients, two
/// features; the command itself checks its releases against the in-process trainer.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpdist_train_without_intercept_releases_what_it_released_before(#[case] store: Store) {
    let Some(cluster) = Cluster::start_on("train-cli-golden", 2, store) else {
        return;
    };
    // The aggregator charges every round in full (no amplification by subsampling).
    let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 50.0);
    let data = cluster.dir.join("train.csv");
    let mut csv = String::from("a,b,label\n");
    for k in 0..12 {
        let (a, b) = ((k * 5 % 7) as f64 - 3.0, (k * 3 % 11) as f64 - 5.0);
        let label = u8::from(a + 0.5 * b > 0.5);
        csv += &format!("{a},{b},{label}\n");
    }
    std::fs::write(&data, csv).unwrap();
    let (ca, token) = (
        cluster.certs.dir.join("ca.pem"),
        cluster.dir.join("analyst.token"),
    );
    let args = [
        "train",
        "--aggregator",
        &aggregator.url,
        "--ca",
        ca.to_str().unwrap(),
        "--analyst-token-file",
        token.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--feature-bound",
        "6",
        "--iterations",
        "3",
        "--rate",
        "0.5",
        "--max-dropped",
        "1",
        "--upload-secs",
        "60",
        "--insecure-seed",
        "11",
    ]
    .map(String::from);
    let run = |extra: &'static [&'static str], offset: &'static str| {
        let args = args.clone();
        tokio::task::spawn_blocking(move || {
            let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
            args.extend(extra);
            // Round ids must be distinct across the runs on one aggregator.
            args.extend(["--round-offset", offset]);
            let (ok, out) = dpdist(&args, LIMIT);
            assert!(ok, "{out}");
            let report: serde_json::Value =
                serde_json::from_str(&out[out.find("\n{\n").expect("a JSON report") + 1..])
                    .unwrap();
            (report, out)
        })
    };
    let (report, out) = run(&["--no-intercept"], "0").await.unwrap();
    assert_eq!(report["intercept"], serde_json::Value::Null, "{out}");
    let weights: Vec<f64> = serde_json::from_value(report["weights"].clone()).unwrap();
    let before: [u64; 2] = [13803123174405339440, 13811429222856866806];
    assert_eq!(bits(&weights), before, "{out}");

    // By default the model has an intercept, reported apart from the two weights; the command's
    // own check (its releases equal the in-process trainer's, which has the intercept) holds.
    let (report, out) = run(&[], "100").await.unwrap();
    assert_eq!(
        report["releases_bit_identical_to_in_process"], true,
        "{out}"
    );
    assert_eq!(report["weights"].as_array().map(Vec::len), Some(2), "{out}");
    assert!(
        report["intercept"].as_f64().is_some_and(|b| b != 0.0),
        "{out}"
    );
}
