//! A participant's ledger and what it says about a job, in process: the aggregator's router
//! served on loopback (plain HTTP, a mock clock), two in-process nodes, and participants as
//! tasks of the test (`Participant::run`) holding one row each. Nothing here starts a process
//! but `dpdist participant ledger`, the command a hospital reads its ledger with.
//!
//! Deleting or editing a ledger grants no budget (it is checked against the aggregator's
//! record of the jobs its token answered), a cancelled job is charged at sealing and said so
//! on both sides, a participant started before its job waits for it, and the analyst sees the
//! answers counted as they come.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dca_service::aggregator::server::router;
use dca_service::aggregator::{Aggregator, AggregatorStoreLocation};
use dca_service::clock::{Clock, MockClock};
use dca_service::node::NodeOptions;
use dca_service::participant::ledger::{LedgerFile, people};
use dca_service::participant::{Outcome, Participant, Policy, Rows};
use dca_service::protocol::job::JobView;
use dca_service::protocol::job::{Answer, ColumnBounds, JobKind, JobSpec, JobState};
use dca_service::protocol::spec::token_hash;
use dca_service::secret::SecretString;
use dca_service::{Error, MEDIA_JSON, hex};
use dp_noise::PrivacyLoss;

const ADMIN: &str = "admin-token-for-participant-ledger-tests";
const ANALYST: &str = "analyst-token-for-participant-ledger-tests";
const LIMIT: Duration = Duration::from_secs(120);

struct Setup {
    url: String,
    http: reqwest::Client,
    clock: Arc<MockClock>,
    dir: common::Scratch,
    _pg: Option<common::PgDatabases>,
}

/// Two in-process nodes and the aggregator's router, served on loopback, on `store`; `None`
/// for PostgreSQL without a server (said loudly; a failure under CI).
async fn setup(name: &str, store: common::Store) -> Option<Setup> {
    let pg = match store {
        common::Store::Sqlite => None,
        common::Store::Postgres => {
            let admin = common::postgres_admin_url(name)?;
            Some(common::PgDatabases::create(
                &admin,
                &format!("pledger_{name}"),
                1,
            ))
        }
    };
    let suffix = if pg.is_some() { "-pg" } else { "" };
    let dir = common::Scratch::new(&format!("pledger-{name}{suffix}"));
    let mut nodes = Vec::new();
    for k in 0..2u16 {
        let data = dir.path.join(format!("node{k}"));
        std::fs::create_dir_all(&data).unwrap();
        let options = NodeOptions::new(k, data, SecretString::from(ADMIN.to_string()));
        let app = dca_service::node::router(&options).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        nodes.push(format!("http://{}", listener.local_addr().unwrap()));
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    let certs = common::make_certs(&dir.path);
    let http =
        dca_service::http::tls::http_client(&certs.ca_pem, 8, Duration::from_secs(30)).unwrap();
    let clock = Arc::new(MockClock::new(dca_service::node::now_ms()));
    let at = match &pg {
        None => AggregatorStoreLocation::Sqlite(dir.path.join("aggregator.sqlite")),
        Some(pg) => AggregatorStoreLocation::parse(Some(&pg.urls[0]), None).unwrap(),
    };
    let aggregator = Aggregator::open_at(
        &at,
        http.clone(),
        nodes,
        ADMIN.to_string(),
        PrivacyLoss {
            epsilon: 50.0,
            delta: 1e-3,
        },
    )
    .unwrap()
    .with_clock(clock.clone());
    let app = router(aggregator, ANALYST, Duration::from_millis(20));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Some(Setup {
        url,
        http,
        clock,
        dir,
        _pg: pg,
    })
}

fn token(i: usize) -> String {
    format!("participant-ledger-token-{i}")
}

/// A `sum` job (one DCA round) over participants `0..roster`, T = 1, at ε; `n` makes two
/// otherwise equal jobs distinct.
fn sum_job(s: &Setup, roster: usize, epsilon: f64, n: u64) -> JobSpec {
    let column = |name: &str| ColumnBounds {
        name: name.into(),
        lo: 0.0,
        hi: 1.0,
        group: None,
    };
    JobSpec {
        kind: JobKind::Sum,
        target: column("y"),
        features: vec![column("x")],
        epsilon,
        delta: 1e-5,
        max_dropped: 1,
        mode: "seed".into(),
        roster: (0..roster)
            .map(|i| hex::encode(&token_hash(&token(i))))
            .collect(),
        max_rows: 10,
        answer_window_ms: 60_000,
        upload_window_ms: 60_000,
        created_unix_ms: s.clock.now_ms() + n,
        public_seed: None,
        clipped_share: None,
        validity: None,
        train: None,
    }
}

/// Participant `i`: one row (x, a column its policy does not share, y), a policy sharing x
/// and y with a total ε of 1.5.
fn participant(s: &Setup, i: usize) -> Participant {
    let names = ["x", "private_notes", "y"].map(String::from).to_vec();
    Participant {
        aggregator: s.url.clone(),
        http: s.http.clone(),
        token: SecretString::from(token(i)),
        rows: Rows::memory(names, vec![0.5, 7.0, 0.25]).unwrap(),
        policy: Policy {
            columns: vec!["x".into(), "y".into()],
            max_epsilon_per_job: 2.0,
            total_epsilon: 1.5,
        },
        state_dir: state_dir(s, i),
        insecure_seed: Some(common::SEED),
        poll: Duration::from_millis(20),
        wait_for_job: Duration::from_secs(60),
        rebuild_ledger: false,
    }
}

fn state_dir(s: &Setup, i: usize) -> PathBuf {
    s.dir.path.join(format!("p{i}"))
}

async fn create(s: &Setup, spec: &JobSpec) -> String {
    let r = s
        .http
        .put(format!("{}/jobs/{}", s.url, spec.id()))
        .bearer_auth(ANALYST)
        .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
        .body(spec.canonical_json())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::CREATED);
    spec.id()
}

async fn view(s: &Setup, id: &str) -> JobView {
    let r = s
        .http
        .get(format!("{}/jobs/{id}", s.url))
        .bearer_auth(ANALYST)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    r.json().await.unwrap()
}

/// Waits (bounded) until `done` holds for the job's analyst view.
async fn until(s: &Setup, id: &str, what: &str, done: impl Fn(&JobView) -> bool) -> JobView {
    let start = Instant::now();
    loop {
        let v = view(s, id).await;
        if done(&v) {
            return v;
        }
        assert!(start.elapsed() < LIMIT, "{what}: {:?}", v.status);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn follow(p: Participant, id: &str) -> tokio::task::JoinHandle<dca_service::Result<Outcome>> {
    let id = id.to_string();
    tokio::spawn(async move { p.run(Some(&id)).await })
}

/// Runs `dpdist participant ledger` for participant `i` against the aggregator.
fn ledger_command(s: &Setup, i: usize) -> (bool, String) {
    let dir = state_dir(s, i);
    std::fs::write(dir.join("token"), token(i)).unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        "columns = [\"x\", \"y\"]\nmax_epsilon_per_job = 2.0\ntotal_epsilon = 1.5\n",
    )
    .unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let ca = s.dir.path.join("ca.pem").to_str().unwrap().to_string();
    common::dpdist(
        &[
            "participant",
            "ledger",
            "--state-dir",
            &path(""),
            "--policy",
            &path("policy.toml"),
            "--aggregator",
            &s.url,
            "--ca",
            &ca,
            "--token-file",
            &path("token"),
        ],
        LIMIT,
    )
}

/// A job of ε = 1 done by three participants whose total ε is 1.5; then
/// participant 0's ledger is deleted and participant 1's edited to say ε = 0: each refuses the
/// second job of ε = 1, naming the cause and the ways back, and answers nothing.
/// `dpdist participant ledger` prints the true totals (from the aggregator's record for the
/// deleted ledger); participant 1, started with `rebuild_ledger`, rebuilds its ledger from the
/// record and refuses the second job by its budget, the total rounded for people.
#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_or_edited_ledger_grants_no_budget(#[case] store: common::Store) {
    let Some(s) = setup("grants", store).await else {
        return;
    };
    tokio::time::timeout(LIMIT, async {
        let first = create(&s, &sum_job(&s, 3, 1.0, 0)).await;
        let runs: Vec<_> = (0..3).map(|i| follow(participant(&s, i), &first)).collect();
        for run in runs {
            let outcome = run.await.unwrap().unwrap();
            assert_eq!(outcome.state, JobState::Done, "{outcome:?}");
            assert!(outcome.took_part, "{outcome:?}");
        }
        let committed = participant(&s, 0).ledger().unwrap().committed();
        assert!(committed > 0.9 && committed <= 1.0, "{committed}");

        std::fs::remove_file(state_dir(&s, 0).join("ledger.jsonl")).unwrap();
        let p1_ledger = state_dir(&s, 1).join("ledger.jsonl");
        let text = std::fs::read_to_string(&p1_ledger).unwrap();
        assert!(text.contains("\"epsilon\":1.0"), "{text}");
        std::fs::write(
            &p1_ledger,
            text.replace("\"epsilon\":1.0", "\"epsilon\":0.0"),
        )
        .unwrap();

        let second = create(&s, &sum_job(&s, 3, 1.0, 1)).await;
        for (i, cause) in [(0, "is missing"), (1, "edited")] {
            let e = tokio::time::timeout(
                Duration::from_secs(20),
                participant(&s, i).run(Some(&second)),
            )
            .await
            .unwrap_or_else(|_| panic!("participant {i} took part in the second job"))
            .unwrap_err();
            let m = e.to_string();
            assert!(matches!(e, Error::Ledger(_)), "{m}");
            assert!(m.contains(cause), "participant {i}: {m}");
            assert!(
                m.contains("restore") && m.contains("--rebuild-ledger-from-aggregator"),
                "{m}"
            );
        }
        // Nothing answered; the analyst sees the roster counted as it answers.
        let v = view(&s, &second).await;
        assert_eq!(v.status.state, JobState::Answering);
        let counts = v.status.answers.unwrap();
        assert_eq!((counts.accepted, counts.refused, counts.silent), (0, 0, 3));

        // The deleted ledger: the command says so, and prints the record's totals.
        let (ok, out) = ledger_command(&s, 0);
        assert!(!ok, "{out}");
        assert!(out.contains("CANNOT BE TRUSTED: it is missing"), "{out}");
        let total = format!(
            "total: ε = {} committed of total_epsilon = 1.5: {} remains",
            people(committed),
            people(1.5 - committed)
        );
        assert!(out.contains(&total), "{total}\n{out}");

        // Participant 1 rebuilds its ledger from the record and refuses by its true budget.
        let mut p1 = participant(&s, 1);
        p1.rebuild_ledger = true;
        let followed = second.clone();
        let run = tokio::spawn(async move { p1.run(Some(&followed)).await });
        let v = until(&s, &second, "participant 1's refusal", |v| {
            v.status.answers.is_some_and(|c| c.refused == 1)
        })
        .await;
        assert_eq!(v.status.answers.unwrap().silent, 2);
        s.clock.advance(61_000);
        let outcome = run.await.unwrap().unwrap();
        assert_eq!(outcome.state, JobState::Aborted, "{outcome:?}");
        let v = view(&s, &second).await;
        let (_, why) = v.status.refused.iter().find(|(i, _)| *i == 1).unwrap();
        assert!(why.contains("budget exhausted"), "{why}");
        // The total is rounded for people, not 1.99999999…
        assert!(
            why.contains(&format!("total to {}", people(1.0 + committed))) && !why.contains("9999"),
            "{why}"
        );
        let (ok, out) = ledger_command(&s, 1);
        assert!(ok, "{out}");
        assert!(
            out.contains("rebuilt from the aggregator's record")
                && out.contains("the aggregator's record agrees")
                && out.contains(&total),
            "{out}"
        );
        assert!(
            std::fs::read_dir(state_dir(&s, 1)).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("untrusted")),
            "the edited ledger is kept beside"
        );
    })
    .await
    .expect("test exceeded its time limit");
}

/// Participants 0 and 1 seal and upload to the job's round, participant 2
/// accepted and is gone, so the round waits; the analyst cancels. The aggregator's status
/// spends nothing and says the round was never released but stays charged by whoever sealed
/// for it; each participant's outcome says it did not take part, and that its ledger keeps
/// the charge (charged at sealing).
#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_job_is_charged_at_sealing_and_says_so_on_both_sides(
    #[case] store: common::Store,
) {
    let Some(s) = setup("cancel", store).await else {
        return;
    };
    tokio::time::timeout(LIMIT, async {
        let id = create(&s, &sum_job(&s, 3, 1.0, 0)).await;
        let r = s
            .http
            .post(format!("{}/jobs/{id}/answer", s.url))
            .bearer_auth(token(2))
            .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
            .body(
                serde_json::to_vec(&Answer {
                    accept: true,
                    rows: 1,
                    reason: String::new(),
                })
                .unwrap(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::OK);
        let runs: Vec<_> = (0..2).map(|i| follow(participant(&s, i), &id)).collect();
        let start = Instant::now();
        for i in 0..2 {
            loop {
                let uploaded = LedgerFile::read(&state_dir(&s, i))
                    .ok()
                    .flatten()
                    .and_then(|f| f.ledger.jobs.get(&id).cloned())
                    .is_some_and(|j| !j.rounds.is_empty() && j.rounds.values().all(|r| r.uploaded));
                if uploaded {
                    break;
                }
                assert!(start.elapsed() < LIMIT, "participant {i} did not upload");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let r = s
            .http
            .post(format!("{}/jobs/{id}/cancel", s.url))
            .bearer_auth(ANALYST)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::OK);
        let v = view(&s, &id).await;
        assert_eq!(v.status.state, JobState::Cancelled);
        assert_eq!(v.status.rho_spent, 0.0);
        let reason = v.status.reason.unwrap();
        assert!(
            reason.contains("never released") && reason.contains("charged at sealing"),
            "{reason}"
        );
        for run in runs {
            let outcome = run.await.unwrap().unwrap();
            assert_eq!(outcome.state, JobState::Cancelled);
            assert!(!outcome.took_part, "{outcome:?}");
            assert_eq!(outcome.released_rounds, 0);
            assert_eq!(outcome.unreleased_rounds, 1);
            assert!(outcome.unreleased_rho > 0.0);
            let said = outcome.describe();
            assert!(
                said.contains("did not take part: no round with its shares was released")
                    && said.contains("charged at sealing")
                    && !said.contains("took part ("),
                "{said}"
            );
        }
        // Its ledger keeps the charge: the job holds ε of what was sealed.
        assert!(participant(&s, 0).ledger().unwrap().committed() > 0.0);
    })
    .await
    .expect("test exceeded its time limit");
}

/// Participants started before any job (one following every job, one the
/// job it was told the id of) wait for it; one told not to wait gives up at once, saying what
/// it waited for. Once the analyst creates the job they answer and the job runs.
#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_started_before_their_job_wait_for_it(#[case] store: common::Store) {
    let Some(s) = setup("wait", store).await else {
        return;
    };
    tokio::time::timeout(LIMIT, async {
        // The record a participant reconciles with: empty for a token that answered nothing
        // (as for a stranger's: it learns nothing), refused to the analyst.
        for (who, status, body) in [
            (token(0), 200, Some("{\"jobs\":[]}")),
            ("a-stranger".to_string(), 200, Some("{\"jobs\":[]}")),
            (ANALYST.to_string(), 400, None),
        ] {
            let r = s
                .http
                .get(format!("{}/participation", s.url))
                .bearer_auth(&who)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), status, "{who}");
            if let Some(body) = body {
                assert_eq!(r.text().await.unwrap(), body);
            }
        }
        let spec = sum_job(&s, 3, 1.0, 0);
        let id = spec.id();
        let mut impatient = participant(&s, 2);
        impatient.wait_for_job = Duration::ZERO;
        let e = impatient.run(None).await.unwrap_err().to_string();
        assert!(
            e.contains("no job named this participant") && e.contains("roster"),
            "{e}"
        );
        let any = participant(&s, 0);
        let every_job = tokio::spawn(async move { any.run(None).await });
        let one = follow(participant(&s, 1), &id);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!every_job.is_finished() && !one.is_finished());
        create(&s, &spec).await;
        let last = follow(participant(&s, 2), &id);
        for run in [one, last] {
            let outcome = run.await.unwrap().unwrap();
            assert!(
                outcome.state == JobState::Done && outcome.took_part,
                "{outcome:?}"
            );
        }
        // The one following every job saw it end too, and goes on waiting.
        let start = Instant::now();
        loop {
            let ended = participant(&s, 0)
                .ledger()
                .ok()
                .and_then(|l| l.jobs.get(&id).and_then(|j| j.ended));
            if ended == Some(JobState::Done) {
                break;
            }
            assert!(
                start.elapsed() < LIMIT,
                "participant 0 did not see the job end"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!every_job.is_finished());
        every_job.abort();
    })
    .await
    .expect("test exceeded its time limit");
}
