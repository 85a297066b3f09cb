//! Database plumbing shared by the node's and the aggregator's stores: SQLite migrations, the
//! PostgreSQL location (a parsed `--store` URL), connection and transaction runner, and the
//! test databases.

pub(crate) mod migrations;
mod pg_location;
#[cfg(test)]
pub(crate) mod postgres_test_db;
pub(crate) mod postgres_tx;

pub use pg_location::PgLocation;
