//! Scratch stores for tests, the one helper of the unit tests (`crate::db::postgres_test_db`) and of
//! the integration tests (`tests/common`, which includes this file): a fresh directory for a
//! test's SQLite files, and a PostgreSQL database of its own on the server that
//! `DPDIST_TEST_POSTGRES` names (a URL whose user may create databases; `scripts/pg-start.sh`
//! makes one), dropped with its connections at the end. Without the variable a PostgreSQL test
//! says so loudly and passes, except under CI (`CI` set), where it fails.
//!
//! The blocking PostgreSQL client runs on threads of its own here: async tests call this too.

#![allow(dead_code)]

use std::path::PathBuf;

/// An empty directory for one test (`dpdist-NAME-PID`, under the integration tests' target
/// temp dir or else the system's; whatever a previous run left there is removed first).
pub fn scratch_dir(name: &str) -> PathBuf {
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = base.join(format!("dpdist-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A SQLite file `file` in a fresh [`scratch_dir`] (not created: the store makes it).
pub fn sqlite_file(name: &str, file: &str) -> PathBuf {
    scratch_dir(name).join(file)
}

/// The URL of the PostgreSQL server for tests (`DPDIST_TEST_POSTGRES`), or `None` after saying
/// loudly that `test` is skipped. Under CI (`CI` set) a missing server fails the test instead.
#[cfg(feature = "server")]
pub fn postgres_admin_url(test: &str) -> Option<String> {
    match std::env::var("DPDIST_TEST_POSTGRES") {
        Ok(url) => Some(url),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: DPDIST_TEST_POSTGRES is unset under CI; the PostgreSQL variant cannot run"
            );
            eprintln!("SKIPPED (DPDIST_TEST_POSTGRES unset): {test} on PostgreSQL");
            None
        }
    }
}

#[cfg(feature = "server")]
pub use postgres_db::*;

#[cfg(feature = "server")]
mod postgres_db {
    use postgres::NoTls;

    /// Runs `f` with a new administrator's connection, on a thread of its own.
    fn as_admin<T: Send + 'static>(
        admin: &str,
        f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
    ) -> Option<T> {
        let admin = admin.to_string();
        std::thread::spawn(move || {
            postgres::Client::connect(&admin, NoTls)
                .ok()
                .map(|mut c| f(&mut c))
        })
        .join()
        .expect("the test database thread")
    }

    /// A database made for one test, dropped (with its connections) when this is dropped; `at`
    /// is where a store finds it.
    pub struct TestDb<L> {
        admin: String,
        name: String,
        url: String,
        pub at: L,
    }

    impl TestDb<()> {
        /// A fresh database `name` on the server `admin` names (made again if a previous run
        /// left it).
        pub fn create(admin: &str, name: &str) -> TestDb<()> {
            let name = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect::<String>()
                .to_ascii_lowercase();
            let to_make = name.clone();
            as_admin(admin, move |c| {
                c.batch_execute(&format!("DROP DATABASE IF EXISTS {to_make} WITH (FORCE)"))
                    .expect("no database left by an earlier run");
                c.batch_execute(&format!("CREATE DATABASE {to_make}"))
                    .expect("a test database");
            })
            .expect("DPDIST_TEST_POSTGRES reachable");
            let base = admin
                .rsplit_once('/')
                .map(|(b, _)| b.to_string())
                .expect("DPDIST_TEST_POSTGRES is postgres://user@host:port/database");
            TestDb {
                admin: admin.to_string(),
                url: format!("{base}/{name}"),
                name,
                at: (),
            }
        }

        /// The same database, where a store of type `L` finds it: made by `at` from the
        /// client's configuration and the name to show.
        pub fn located<L>(mut self, at: impl FnOnce(postgres::Config, String) -> L) -> TestDb<L> {
            let mut config: postgres::Config =
                self.admin.parse().expect("DPDIST_TEST_POSTGRES is a URL");
            config.dbname(&self.name);
            let at = at(config, format!("test database {}", self.name));
            // The database now belongs to the returned value; `self` drops nothing.
            TestDb {
                admin: std::mem::take(&mut self.admin),
                name: std::mem::take(&mut self.name),
                url: std::mem::take(&mut self.url),
                at,
            }
        }
    }

    impl<L> TestDb<L> {
        /// The database's URL (a `--store` argument).
        pub fn url(&self) -> &str {
            &self.url
        }

        /// A new connection to the test's database (on the calling thread: not from async code).
        pub fn connect(&self) -> postgres::Client {
            postgres::Client::connect(&self.url, NoTls).expect("the test database")
        }

        /// A new connection to the server as its administrator (not to the test's database).
        pub fn admin(&self) -> postgres::Client {
            postgres::Client::connect(&self.admin, NoTls).expect("the test server")
        }

        /// Terminates every other session on the test's database, as a server restart, a
        /// failover or a firewall would, each waited for (at most 5 s) until it is gone; how
        /// many there were. The shared test server itself keeps running: other tests use it.
        pub fn cut_connections(&self) -> usize {
            let name = self.name.clone();
            as_admin(&self.admin, move |c| {
                c.query(
                    "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
                     WHERE datname = $1 AND pid <> pg_backend_pid()",
                    &[&name],
                )
                .expect("sessions terminated")
                .iter()
                .filter(|r| r.get::<_, bool>(0))
                .count()
            })
            .expect("the test server")
        }
    }

    impl<L> Drop for TestDb<L> {
        fn drop(&mut self) {
            if self.name.is_empty() {
                return;
            }
            let name = self.name.clone();
            as_admin(&self.admin, move |c| {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            });
        }
    }

    /// A fresh database `dpdist_{prefix}_{pid}_{name}` for the test `name`, its location made
    /// by `at` from the client configuration and the name to show; `None` (after saying so)
    /// without a server.
    pub fn test_db<L>(
        prefix: &str,
        name: &str,
        at: impl FnOnce(postgres::Config, String) -> L,
    ) -> Option<TestDb<L>> {
        let admin = super::postgres_admin_url(&format!("{prefix} {name}"))?;
        let db = TestDb::create(
            &admin,
            &format!("dpdist_{prefix}_{}_{name}", std::process::id()),
        );
        Some(db.located(at))
    }
}
