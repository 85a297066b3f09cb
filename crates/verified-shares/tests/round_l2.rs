//! Verified rounds with the L2 bound in process: honest rounds release DCA's sum bit for bit;
//! a client whose shares sum past R is left out; a client whose data exceed the bound refuses.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    ClientId, Release, RoundConfig, RoundId, RoundParams, ShareMode, simulate_round,
};
use prio::field::Field128;
use prio::vdaf::prio3::Prio3InputShare;
use verified_shares::l2::slice_norm_bound_units;
use verified_shares::{Error, L2Bound, VerifiedReport, simulate_verified_round};

const SEED: u64 = 43;

fn config(mode: ShareMode, noise: Option<f64>) -> RoundConfig {
    RoundConfig::new(&RoundParams {
        round: RoundId(43),
        n_clients: 8,
        n_nodes: 3,
        max_dropped: 2,
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

/// Every input has |x_j| ≤ 1 in 5 coordinates, so ‖x‖₂ ≤ sqrt(5).
fn bound(config: &RoundConfig) -> L2Bound {
    L2Bound::for_round(config, 5f64.sqrt(), 1e-9).unwrap()
}

#[test]
fn the_rounds_bound_by_hand() {
    let config = config(ShareMode::Seed, Some(0.5));
    let f = config.codec().frac_bits();
    let sigma = config.noise().unwrap().sigma_client_units;
    let b = bound(&config);
    assert_eq!(
        b.data_units,
        (5f64.sqrt() * 2f64.powi(f as i32)).ceil() as u64
    );
    assert_eq!(b.slice_units, slice_norm_bound_units(sigma, 8, 5, 1e-9));
    assert!(b.truncation_delta <= 1e-9 && b.truncation_delta > 0.0);
    let exact = bound(&config_without_noise());
    assert_eq!((exact.slice_units, exact.truncation_delta), (0, 0.0));
}

fn config_without_noise() -> RoundConfig {
    config(ShareMode::Seed, None)
}

#[test]
fn honest_l2_rounds_release_dcas_sum_bit_for_bit() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        for noise in [None, Some(0.5)] {
            let config = config(mode, noise);
            let bound = bound(&config);
            let verified = simulate_verified_round(
                &config,
                bound,
                &inputs(),
                &[ClientId(6)],
                None,
                RngSource::InsecureFixedSeed(SEED),
            )
            .unwrap();
            assert!(verified.invalid.is_empty());
            assert_eq!(
                verified.release,
                dca(&config, &[ClientId(6)]),
                "{mode:?} {noise:?}"
            );
            assert_eq!(verified.truncation_delta, bound.truncation_delta);
        }
    }
}

#[test]
fn a_client_whose_shares_sum_far_past_r_is_left_out() {
    let config = config(ShareMode::Seed, Some(0.5));
    let bound = bound(&config);
    // 10⁶·R added to node 0's share of entry 2's lowest bit (entries are bits of u = v + R).
    let bits = (128 - (2 * u128::from(bound.units())).leading_zeros()) as usize;
    let huge = Field128::from(u128::from(bound.units()) * 1_000_000);
    let tamper = |r: &mut VerifiedReport| {
        if r.client == ClientId(5) {
            match &mut r.input_shares[0] {
                Prio3InputShare::Leader {
                    measurement_share, ..
                } => measurement_share[2 * bits] += huge,
                Prio3InputShare::Helper { .. } => panic!("node 0 holds the leader share"),
            }
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
fn a_client_whose_data_exceed_the_bound_refuses() {
    let config = config(ShareMode::Seed, Some(0.5));
    let tight = L2Bound::for_round(&config, 0.5, 1e-9).unwrap();
    let err = simulate_verified_round(
        &config,
        tight,
        &inputs(),
        &[],
        None,
        RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap_err();
    match err {
        Error::DataPastBound { norm, bound, .. } => {
            assert!(norm > 0.5 && norm <= 5f64.sqrt() + 1e-9, "{norm}");
            assert!((bound - 0.5).abs() < 1e-12, "{bound}");
        }
        other => panic!("{other}"),
    }
    assert!(L2Bound::for_round(&config, -1.0, 1e-9).is_err());
    assert!(L2Bound::for_round(&config, f64::INFINITY, 1e-9).is_err());
}
