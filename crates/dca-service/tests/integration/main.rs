//! The service's integration tests, in one binary so that the crate and its dependencies are
//! linked once: each module was its own test binary (`cargo test -p dca-service --test
//! integration participants::` runs one of them). Fixtures live in `common/`.

#![allow(missing_docs)]

mod common;

mod aggregator_http;
mod aggregator_replicas;
mod cli_errors;
mod cli_jobs;
mod cli_privacy;
mod cli_round;
mod faults;
mod hostile;
mod network;
mod network_blr;
mod network_train;
mod node_http;
mod node_replicas;
mod participant_ledger;
mod participants;
mod participants_train;
mod verified;
