//! Verified rounds in process: honest rounds release DCA's sum; invalid clients are left out.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    ClientId, Release, RoundConfig, RoundId, RoundParams, ShareMode, simulate_round,
};
use prio::field::Field128;
use prio::vdaf::prio3::Prio3InputShare;
use verified_shares::{Error, LinfBound, VerifiedReport, simulate_verified_round};

const SEED: u64 = 43;

fn config(mode: ShareMode, noise: Option<f64>, max_dropped: usize) -> RoundConfig {
    RoundConfig::new(&RoundParams {
        round: RoundId(43),
        n_clients: 8,
        n_nodes: 3,
        max_dropped,
        dim: 5,
        bound: 1.0,
        mode,
        noise_sigma_total: noise,
        frac_bits: None,
    })
    .unwrap()
}

fn inputs() -> Vec<Vec<f64>> {
    (0..8)
        .map(|i| (0..5).map(|j| ((i * 5 + j) as f64 * 0.37).sin()).collect())
        .collect()
}

fn dca(config: &RoundConfig, dropped: &[ClientId]) -> Release {
    simulate_round(
        config,
        &inputs(),
        dropped,
        RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap()
}

/// Adds `delta` to coordinate `j` of the client's contribution: node 0's share of the lowest
/// bit of entry j (Prio3SumVec encodes entry j as `bits` field elements, least significant
/// first), so the shares now sum to a vector `delta` units further out, with the old proof.
fn shift_entry(report: &mut VerifiedReport, bound: &LinfBound, j: usize, delta: Field128) {
    let bits = (128 - bound.max_measurement().leading_zeros()) as usize;
    match &mut report.input_shares[0] {
        Prio3InputShare::Leader {
            measurement_share, ..
        } => measurement_share[j * bits] += delta,
        Prio3InputShare::Helper { .. } => panic!("node 0 holds the leader share"),
    }
}

#[test]
fn honest_rounds_release_dcas_sum_bit_for_bit() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        for noise in [None, Some(0.5)] {
            let config = config(mode, noise, 2);
            let bound = LinfBound::new(&config, 1e-9).unwrap();
            let rng = RngSource::InsecureFixedSeed(SEED);
            let verified =
                simulate_verified_round(&config, bound, &inputs(), &[ClientId(6)], None, rng)
                    .unwrap();
            assert!(verified.invalid.is_empty());
            // δ_t as the bound computed it (≤ the 1e-9 asked for), 0 without noise.
            assert_eq!(verified.truncation_delta, bound.truncation_delta);
            assert!(verified.truncation_delta <= 1e-9);
            assert_eq!(verified.truncation_delta == 0.0, noise.is_none());
            assert_eq!(
                verified.release,
                dca(&config, &[ClientId(6)]),
                "{mode:?} {noise:?}"
            );
        }
    }
}

/// Without noise the release is the exact sum, checked against the inputs' encodings by hand:
/// round(x·2^f) summed over the clients.
#[test]
fn noiseless_release_is_the_encoded_sum() {
    let config = config(ShareMode::Seed, None, 2);
    let bound = LinfBound::new(&config, 1e-9).unwrap();
    assert_eq!(bound.slice_units, 0);
    let scale = (1u64 << config.codec().frac_bits()) as f64;
    let verified = simulate_verified_round(
        &config,
        bound,
        &inputs(),
        &[],
        None,
        RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap();
    for j in 0..5 {
        let by_hand: i64 = inputs().iter().map(|x| (x[j] * scale).round() as i64).sum();
        assert_eq!(verified.release.sum_units[j], by_hand);
    }
}

#[test]
fn a_contribution_a_million_times_its_bound_is_left_out() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = config(mode, Some(0.5), 2);
        let bound = LinfBound::new(&config, 1e-9).unwrap();
        let million = Field128::from(u128::from(bound.data_units) * 1_000_000);
        let tamper = |r: &mut VerifiedReport| {
            if r.client == ClientId(3) {
                shift_entry(r, &bound, 2, million);
            }
        };
        let verified = simulate_verified_round(
            &config,
            bound,
            &inputs(),
            &[],
            Some(&tamper),
            RngSource::InsecureFixedSeed(SEED),
        )
        .unwrap();
        assert_eq!(verified.invalid, vec![ClientId(3)]);
        assert_eq!(verified.release, dca(&config, &[ClientId(3)]), "{mode:?}");
    }
}

/// A noise slice of −1000·τ in one coordinate (below 0 after the shift: the field wraps).
#[test]
fn a_huge_noise_slice_is_left_out() {
    let config = config(ShareMode::Seed, Some(0.5), 2);
    let bound = LinfBound::new(&config, 1e-9).unwrap();
    assert!(bound.slice_units > 0);
    let huge = Field128::from(u128::from(bound.slice_units) * 1000);
    let tamper = |r: &mut VerifiedReport| {
        if r.client == ClientId(5) {
            shift_entry(r, &bound, 0, -huge);
        }
    };
    let verified = simulate_verified_round(
        &config,
        bound,
        &inputs(),
        &[ClientId(1)],
        Some(&tamper),
        RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap();
    assert_eq!(verified.invalid, vec![ClientId(5)]);
    assert_eq!(verified.release, dca(&config, &[ClientId(1), ClientId(5)]));
}

#[test]
fn more_than_t_missing_releases_nothing_and_names_the_invalid() {
    let config = config(ShareMode::Seed, Some(0.5), 2);
    let bound = LinfBound::new(&config, 1e-9).unwrap();
    let one = Field128::from(1u128 << 70);
    let tamper = |r: &mut VerifiedReport| {
        if r.client.0 % 4 == 1 {
            shift_entry(r, &bound, 4, one);
        }
    };
    let err = simulate_verified_round(
        &config,
        bound,
        &inputs(),
        &[ClientId(0)],
        Some(&tamper),
        RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap_err();
    match err {
        Error::TooManyMissing {
            dropped,
            invalid,
            invalid_clients,
            max_dropped,
        } => {
            assert_eq!((dropped, invalid, max_dropped), (1, 2, 2));
            assert_eq!(invalid_clients, vec![ClientId(1), ClientId(5)]);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn truncation_delta_outside_0_1_is_refused() {
    let config = config(ShareMode::Seed, Some(0.5), 2);
    for bad in [0.0, 1.0, -1e-9, f64::NAN] {
        assert!(matches!(
            LinfBound::new(&config, bad),
            Err(Error::InvalidParameter {
                name: "truncation_delta",
                ..
            })
        ));
    }
}

/// The round's B by hand: N = 8, T = 2, σ_total = 0.5, so σ_client = 0.5/√(8 − 2 − 1) (DCA
/// paper, Thm 1) and σ in units σ_client·2^f; τ = ⌈σ·√(2·ln(2·8·5/10⁻⁹))⌉; the data's bound
/// 1.0·2^f units.
#[test]
fn the_rounds_bound_by_hand() {
    let config = config(ShareMode::Seed, Some(0.5), 2);
    let f = config.codec().frac_bits();
    let bound = LinfBound::new(&config, 1e-9).unwrap();
    let scale = (1u64 << f) as f64;
    let sigma_units = 0.5 / 5f64.sqrt() * scale;
    let tau = (sigma_units * (2.0 * (2.0 * 8.0 * 5.0 / 1e-9f64).ln()).sqrt()).ceil() as u64;
    assert_eq!(bound.data_units, 1u64 << f);
    assert_eq!(bound.slice_units, tau);
    assert_eq!(bound.max_measurement(), 2 * u128::from((1u64 << f) + tau));
}
