//! Database plumbing shared by the node's and the aggregator's stores: SQLite migrations, the
//! PostgreSQL location (a parsed `--store` URL), connection and transaction runner, and the
//! test databases.

pub(crate) mod blocking;
pub(crate) mod migrations;
mod pg_location;
#[cfg(test)]
pub(crate) mod postgres_test_db;
pub(crate) mod postgres_tx;

pub(crate) use pg_location::PooledPg;
pub use pg_location::{DEFAULT_STORE_POOL_SIZE, MIN_STORE_POOL_SIZE, PgLocation};
