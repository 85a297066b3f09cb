//! Tests of the PostgreSQL node store against a real server (`DPDIST_TEST_POSTGRES`).

#[allow(unused_imports)]
use super::*;
