//! A database of its own for one test of a PostgreSQL store, on the server that
//! `DPDIST_TEST_POSTGRES` names (a URL whose user may create databases; `scripts/pg-start.sh`
//! makes one), dropped with its connections at the end. Without the variable a test says so
//! loudly and passes, except under CI (`CI` set), where it fails.

use postgres::NoTls;

/// A database made for one test, dropped (with its connections) when this is dropped; `at` is
/// where a store finds it.
pub(crate) struct TestDb<L> {
    admin: String,
    name: String,
    pub(crate) at: L,
}

impl<L> TestDb<L> {
    /// A new connection to the server as its administrator (not to the test's database).
    pub(crate) fn admin(&self) -> postgres::Client {
        postgres::Client::connect(&self.admin, NoTls).expect("the test server")
    }

    /// Terminates every other session on the test's database, as a server restart, a failover
    /// or a firewall would, each waited for (at most 5 s) until it is gone; how many there
    /// were. The shared test server itself keeps running: other tests use it.
    pub(crate) fn cut_connections(&self) -> usize {
        self.admin()
            .query(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&self.name],
            )
            .expect("sessions terminated")
            .iter()
            .filter(|r| r.get::<_, bool>(0))
            .count()
    }
}

impl<L> Drop for TestDb<L> {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A fresh database `dpdist_{prefix}_{pid}_{name}` for the test `name`, its location made by
/// `at` from the client configuration and the name to show; `None` (after saying so) without
/// a server.
pub(crate) fn test_db<L>(
    prefix: &str,
    name: &str,
    at: impl FnOnce(postgres::Config, String) -> L,
) -> Option<TestDb<L>> {
    let Ok(admin) = std::env::var("DPDIST_TEST_POSTGRES") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "DPDIST_TEST_POSTGRES is unset under CI: the PostgreSQL tests cannot run"
        );
        eprintln!("SKIPPED (DPDIST_TEST_POSTGRES unset): PostgreSQL store test {prefix} {name}");
        return None;
    };
    let name = format!("dpdist_{prefix}_{}_{name}", std::process::id());
    let mut c = postgres::Client::connect(&admin, NoTls).expect("DPDIST_TEST_POSTGRES reachable");
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .expect("no database left by an earlier run");
    c.batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("a test database");
    let mut config: postgres::Config = admin.parse().expect("DPDIST_TEST_POSTGRES is a URL");
    config.dbname(&name);
    let at = at(config, format!("test database {name}"));
    Some(TestDb { admin, name, at })
}
