//! The compute node's HTTP handlers (dca-service's router, in process) fed a fresh round and a
//! sequence of requests built from the input: honest, mutated and raw sealed uploads, wrong
//! tokens, close / abort / round-config bodies, reads. Checks: no panic, no 5xx, a wrong token
//! is refused, a refused upload leaves the node's received set unchanged. See
//! `dpdist_fuzz::node_http`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| dpdist_fuzz::node_http::run(data));
