//! Database plumbing shared by the node's and the aggregator's stores: SQLite migrations, the
//! PostgreSQL connection and transaction runner, and the test databases.

pub(crate) mod migrations;
#[cfg(test)]
pub(crate) mod postgres_test_db;
pub(crate) mod postgres_tx;
