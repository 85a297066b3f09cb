//! A whole verified round in one process: clients → M verifying nodes ⇄ relay → release.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{ClientId, ClientSet, Release, RoundConfig};
use rand_core::RngCore;
use rayon::prelude::*;

use crate::report::{VerifiedClient, VerifiedReport, VerifyKey};
use crate::validity::ValidityBound;
use crate::verify::{Pending, Relay, Verdict, VerifyingNode};
use crate::{Error, Result};

/// The stream of `rng` the nodes' shared verify key is drawn from (clients use streams `0..N`,
/// N ≤ 2^32, as in `fixedpoint_shares::simulate_round`).
pub const STREAM_VERIFY_KEY: u64 = 1 << 40;

/// Reports verified at once (a report's node-0 share is about 2·bits·d field elements).
const BATCH: usize = 64;

/// A verified round's release and the clients it left out for invalid contributions.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedRelease {
    /// The release over the valid clients (dropped and invalid ones are not in `clients`).
    pub release: Release,
    /// Clients whose reports failed verification, in id order.
    pub invalid: Vec<ClientId>,
    /// δ_t: the probability bound on any honest noise value reaching the slice bound, to add
    /// to the round's δ as [`crate::bound::total_delta`] says (0 without noise).
    pub truncation_delta: f64,
}

/// What a client does to its report before sending it (tests of malicious clients).
pub type Tamper<'a> = &'a (dyn Fn(&mut VerifiedReport) + Sync);

/// Runs one verified round over `inputs[i]` = client i's vector. Clients in `dropped` send
/// nothing; `tamper`, if given, changes each report before the nodes see it. Client i draws its
/// noise from `rng.derive(i)` as in `fixedpoint_shares::simulate_round`, so where no honest noise
/// value reaches the slice bound the release equals that round's over the same clients.
///
/// # Errors
/// [`fixedpoint_shares::Error::LengthMismatch`] and client errors for bad inputs;
/// [`Error::TooManyMissing`] if more than T clients dropped or were invalid (nothing released);
/// [`Error::Proof`] if the nodes disagree on a report the relay found valid (refused rather than
/// released wrong).
pub fn simulate_verified_round<V: AsRef<[f64]> + Sync>(
    config: &RoundConfig,
    bound: impl Into<ValidityBound>,
    inputs: &[V],
    dropped: &[ClientId],
    tamper: Option<Tamper<'_>>,
    rng: RngSource,
) -> Result<VerifiedRelease> {
    let bound = bound.into();
    let n = config.n_clients();
    if inputs.len() != n {
        return Err(fixedpoint_shares::Error::LengthMismatch {
            what: "client inputs",
            expected: n,
            actual: inputs.len(),
        }
        .into());
    }
    let dropped = ClientSet::from_ids(n, dropped)?;
    let missing = |invalid: Vec<ClientId>| Error::TooManyMissing {
        dropped: dropped.len(),
        invalid: invalid.len(),
        invalid_clients: invalid,
        max_dropped: config.max_dropped(),
    };
    if dropped.len() > config.max_dropped() {
        return Err(missing(Vec::new()));
    }
    let mut verify_key: VerifyKey = [0; 32];
    rng.derive(STREAM_VERIFY_KEY)
        .try_rng()
        .map_err(fixedpoint_shares::Error::from)?
        .fill_bytes(&mut verify_key);
    let mut nodes = (0..usize::from(config.n_nodes()))
        .map(|k| VerifyingNode::new(config, bound, k, verify_key))
        .collect::<Result<Vec<_>>>()?;
    let relay = Relay::new(config, bound)?;
    let participants: Vec<u64> = (0..n as u64)
        .filter(|&i| !dropped.contains(ClientId(i)))
        .collect();
    let mut invalid = Vec::new();
    for ids in participants.chunks(BATCH) {
        let checked = ids
            .par_iter()
            .map(|&i| {
                let mut report = VerifiedClient::new(config, bound, ClientId(i), rng.derive(i))?
                    .shard(inputs[i as usize].as_ref())?;
                if let Some(tamper) = tamper {
                    tamper(&mut report);
                }
                Ok((ClientId(i), check(&nodes, &relay, &report)))
            })
            .collect::<Result<Vec<_>>>()?;
        for (client, verdict) in checked {
            match verdict {
                None => invalid.push(client),
                Some((pending, verdict)) => {
                    for (node, pending) in nodes.iter_mut().zip(pending) {
                        node.accept(client, pending, &verdict)?;
                    }
                }
            }
        }
    }
    if dropped.len() + invalid.len() > config.max_dropped() {
        return Err(missing(invalid));
    }
    let valid = nodes[0].valid().to_vec();
    let node_sums = nodes.iter().map(|node| node.sum().clone()).collect();
    let sum_units = relay.sum_units(node_sums, valid.len(), bound)?;
    Ok(VerifiedRelease {
        release: release(config, &valid, sum_units)?,
        invalid,
        truncation_delta: bound.truncation_delta(),
    })
}

/// Every node's verifier share, combined by the relay: the nodes' pending states and the
/// verdict if the report is valid.
fn check(
    nodes: &[VerifyingNode],
    relay: &Relay,
    report: &VerifiedReport,
) -> Option<(Vec<Pending>, Verdict)> {
    let (pending, shares): (Vec<_>, Vec<_>) = nodes
        .iter()
        .map(|node| node.verify(report).ok())
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .unzip();
    relay.combine(shares).map(|verdict| (pending, verdict))
}

fn release(config: &RoundConfig, valid: &[ClientId], sum_units: Vec<i64>) -> Result<Release> {
    let codec = config.codec();
    let words: Vec<u64> = sum_units.iter().map(|&s| s as u64).collect();
    let mut sum = vec![0.0; words.len()];
    codec.decode(&words, &mut sum)?;
    let noise = config.noise();
    Ok(Release {
        round: config.round(),
        sum,
        sum_units,
        clients: ClientSet::from_ids(config.n_clients(), valid)?,
        n_clients: config.n_clients(),
        n_included: valid.len(),
        max_dropped: config.max_dropped(),
        frac_bits: codec.frac_bits(),
        noise,
        noise_sigma_released: noise.map_or(0.0, |n| n.sigma_client * (valid.len() as f64).sqrt()),
    })
}
