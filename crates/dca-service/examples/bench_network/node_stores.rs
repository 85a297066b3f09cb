//! Where the benchmark's nodes keep rounds and shares, and what that costs: SQLite files in
//! each node's data directory (the default), or one PostgreSQL database per node index that
//! the node's replicas share, made by the benchmark and dropped at its end. For PostgreSQL
//! the server's own CPU is measured too: a node's CPU alone hides the work moved into the
//! server.

use std::path::Path;

/// The stores of the M nodes.
pub enum NodeStores {
    Sqlite,
    Postgres(Box<PgStores>),
}

impl NodeStores {
    /// `template` is `sqlite` or `postgres://user@host:port/name_{k}` ({k} = the node index);
    /// for PostgreSQL the databases are made here, empty, and their sizes recorded.
    pub fn open(template: &str, m: u16, replicas: usize) -> Result<NodeStores, String> {
        if template == "sqlite" {
            if replicas > 1 {
                return Err(format!(
                    "--replicas {replicas} needs --node-store postgres://…/name_{{k}}: replicas of a node share its PostgreSQL database, a SQLite file cannot be shared"
                ));
            }
            return Ok(NodeStores::Sqlite);
        }
        if !(template.starts_with("postgres://") || template.starts_with("postgresql://")) {
            return Err(format!(
                "--node-store {template:?}: expected `sqlite` or postgres://user@host:port/name_{{k}}"
            ));
        }
        if m > 1 && !template.contains("{k}") {
            return Err(format!(
                "--node-store {template:?} has no {{k}}: each of the {m} nodes needs a database of its own"
            ));
        }
        on_thread(|| PgStores::create(template, m)).map(|pg| NodeStores::Postgres(Box::new(pg)))
    }

    /// The `--store` URL of node `k`, `None` for SQLite.
    pub fn url(&self, k: u16) -> Option<&str> {
        match self {
            NodeStores::Sqlite => None,
            NodeStores::Postgres(pg) => Some(&pg.urls[usize::from(k)]),
        }
    }
}

/// The nodes' PostgreSQL databases, one per node index, on one server.
pub struct PgStores {
    admin: postgres::Config,
    names: Vec<String>,
    urls: Vec<String>,
    /// `pg_database_size` of each database just made (what an empty database weighs).
    pub baseline_bytes: Vec<u64>,
    /// The server's main process, when its data directory can be read here (a server on this
    /// machine, readable by this user); `None` leaves the server's CPU unmeasured.
    postmaster: Option<u32>,
}

impl PgStores {
    fn create(template: &str, m: u16) -> Result<PgStores, String> {
        let mut names = Vec::new();
        let mut urls = Vec::new();
        for k in 0..m {
            let url = template.replace("{k}", &k.to_string());
            let config: postgres::Config = url
                .parse()
                .map_err(|e| format!("--node-store {url:?}: {e}"))?;
            let name = config
                .get_dbname()
                .ok_or_else(|| format!("--node-store {url:?} names no database"))?
                .to_string();
            // Names go into CREATE and DROP DATABASE unquoted.
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(format!(
                    "--node-store {url:?}: database name {name:?} must be lower-case letters, digits and _"
                ));
            }
            names.push(name);
            urls.push(url);
        }
        let mut admin: postgres::Config = urls[0].parse().expect("parsed above");
        admin.dbname("postgres");
        let mut c = admin
            .connect(postgres::NoTls)
            .map_err(|e| format!("--node-store: the server's `postgres` database: {e}"))?;
        // Never drop what the benchmark did not make: every name must be free before any is made.
        for name in &names {
            let taken = c
                .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[name])
                .map_err(|e| e.to_string())?;
            if taken.is_some() {
                return Err(format!(
                    "--node-store: database {name} exists; the benchmark makes its own and drops it at the end, so name one that does not exist"
                ));
            }
        }
        let mut stores = PgStores {
            admin,
            names: Vec::new(),
            urls,
            baseline_bytes: Vec::new(),
            postmaster: None,
        };
        for name in &names {
            c.batch_execute(&format!("CREATE DATABASE {name}"))
                .map_err(|e| format!("CREATE DATABASE {name}: {e}"))?;
            stores.names.push(name.clone());
        }
        stores.baseline_bytes = database_sizes(&mut c, &names)?;
        let data_dir: String = c
            .query_one("SHOW data_directory", &[])
            .map_err(|e| e.to_string())?
            .get(0);
        stores.postmaster = std::fs::read_to_string(Path::new(&data_dir).join("postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next()?.trim().parse().ok());
        Ok(stores)
    }

    /// `pg_database_size` of each node's database now.
    pub fn sizes(&self) -> Result<Vec<u64>, String> {
        let (admin, names) = (self.admin.clone(), self.names.clone());
        on_thread(move || {
            let mut c = admin.connect(postgres::NoTls).map_err(|e| e.to_string())?;
            // Sizes right after a round still hold dead rows' pages; a checkpoint does not
            // change pg_database_size, so none is forced.
            database_sizes(&mut c, &names)
        })
    }

    /// Bytes of write-ahead log the whole server has written so far (its WAL position).
    pub fn wal_position(&self) -> Result<f64, String> {
        let admin = self.admin.clone();
        on_thread(move || {
            let mut c = admin.connect(postgres::NoTls).map_err(|e| e.to_string())?;
            c.query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8",
                &[],
            )
            .map(|r| r.get(0))
            .map_err(|e| e.to_string())
        })
    }

    /// CPU seconds the server has used so far: its main process, the children it has reaped
    /// (ended backends) and the children alive now; `None` if its process is not visible.
    pub fn server_cpu_seconds(&self) -> Option<f64> {
        let pid = self.postmaster?;
        let own = stat_fields(pid)?;
        // Fields 14-17 of /proc/<pid>/stat: utime, stime, cutime, cstime (counted from 1;
        // `stat_fields` starts after the command name, at field 3).
        let field = |f: &[String], n: usize| f.get(n - 3)?.parse::<f64>().ok();
        let mut ticks = field(&own, 14)? + field(&own, 15)? + field(&own, 16)? + field(&own, 17)?;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let Some(f) = stat_fields(child) else {
                continue;
            };
            if field(&f, 4) == Some(f64::from(pid)) {
                ticks += field(&f, 14).unwrap_or(0.0) + field(&f, 15).unwrap_or(0.0);
            }
        }
        Some(ticks / 100.0) // USER_HZ on Linux
    }
}

impl Drop for PgStores {
    fn drop(&mut self) {
        let (admin, names) = (self.admin.clone(), std::mem::take(&mut self.names));
        on_thread(move || {
            if let Ok(mut c) = admin.connect(postgres::NoTls) {
                for name in names {
                    if let Err(e) =
                        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    {
                        eprintln!("DROP DATABASE {name}: {e} (drop it by hand)");
                    }
                }
            }
        });
    }
}

fn database_sizes(c: &mut postgres::Client, names: &[String]) -> Result<Vec<u64>, String> {
    names
        .iter()
        .map(|name| {
            c.query_one("SELECT pg_database_size($1::text)", &[name])
                .map(|r| r.get::<_, i64>(0) as u64)
                .map_err(|e| format!("pg_database_size({name}): {e}"))
        })
        .collect()
}

/// The fields of /proc/<pid>/stat after the command name (field 3 onwards).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        s.rsplit_once(')')?
            .1
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

/// The blocking PostgreSQL client runs a runtime of its own, which tokio refuses inside an
/// async task: every call is made on a thread of its own.
fn on_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().expect("a PostgreSQL call panicked"))
}
