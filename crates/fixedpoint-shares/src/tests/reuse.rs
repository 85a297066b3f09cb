//! `Client::shard_into`: reusing a previous call's share vectors changes no share, allocates
//! nothing new, and bad input leaves the caller's messages as documented.

use dp_noise::rng::RngSource;

use super::params;
use crate::message::{ShareMessage, SharePayload};
use crate::{Client, ClientId, Error, RoundConfig, ShareMode};

fn client(config: &RoundConfig, id: u64, seed: u64) -> Client {
    Client::new(config, ClientId(id), RngSource::InsecureFixedSeed(seed)).unwrap()
}

fn full_vector_addresses(messages: &[ShareMessage]) -> Vec<*const u64> {
    let mut out: Vec<*const u64> = messages
        .iter()
        .filter_map(|m| match &m.payload {
            SharePayload::Full(words) => Some(words.as_ptr()),
            SharePayload::Seed(_) => None,
        })
        .collect();
    out.sort();
    out
}

#[test]
fn reused_vectors_hold_exactly_what_fresh_ones_would() {
    for mode in [ShareMode::Full, ShareMode::Seed] {
        let config = RoundConfig::new(&params(6, 4, 1, 37, mode)).unwrap();
        let mut reused = Vec::new();
        for id in 0..6u64 {
            let values: Vec<f64> = (0..37)
                .map(|j| (j as f64 - 18.0 * id as f64) / 40.0)
                .collect();
            let before = full_vector_addresses(&reused);
            client(&config, id, 100 + id)
                .shard_into(&values, &mut reused)
                .unwrap();
            let fresh = client(&config, id, 100 + id).shard(&values).unwrap();
            assert_eq!(reused, fresh, "{mode:?}, client {id}");
            if id > 0 {
                // Same buffers as the previous client's: nothing was allocated.
                assert_eq!(
                    full_vector_addresses(&reused),
                    before,
                    "{mode:?}, client {id}"
                );
            }
        }
    }
}

#[test]
fn bad_input_and_shorter_vectors() {
    let config = RoundConfig::new(&params(3, 3, 0, 8, ShareMode::Full)).unwrap();
    let mut out = client(&config, 0, 1).shard(&[0.5; 8]).unwrap();
    let kept = out.clone();
    // A wrong length changes nothing.
    let err = client(&config, 1, 2).shard_into(&[0.5; 7], &mut out);
    assert!(matches!(err, Err(Error::LengthMismatch { .. })), "{err:?}");
    assert_eq!(out, kept);
    // A value out of bound empties `out`.
    let mut bad = [0.5; 8];
    bad[3] = 1e9;
    let err = client(&config, 1, 2).shard_into(&bad, &mut out);
    assert!(matches!(err, Err(Error::OutOfBound { .. })), "{err:?}");
    assert!(out.is_empty());
    // Vectors of another round's length are not reused: the shares are still right.
    let other = RoundConfig::new(&params(3, 3, 0, 5, ShareMode::Full)).unwrap();
    let mut mixed = client(&other, 0, 3).shard(&[0.25; 5]).unwrap();
    client(&config, 2, 4)
        .shard_into(&[0.5; 8], &mut mixed)
        .unwrap();
    assert_eq!(mixed, client(&config, 2, 4).shard(&[0.5; 8]).unwrap());
}
