//! A client's contribution with its noise slice bounded in L2 (the verified L2 mode): the same
//! draws as the unbounded one, scaled towards 0 only when the slice is longer than the bound.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    Client, ClientId, RoundConfig, RoundId, RoundParams, ShareMode, SliceBound,
};

fn config() -> RoundConfig {
    RoundConfig::new(&RoundParams {
        round: RoundId(43),
        n_clients: 5,
        n_nodes: 3,
        max_dropped: 1,
        dim: 40,
        bound: 1.0,
        mode: ShareMode::Seed,
        noise_sigma_total: Some(0.5),
        frac_bits: None,
    })
    .unwrap()
}

fn values() -> Vec<f64> {
    (0..40).map(|j| (j as f64 * 0.61).cos()).collect()
}

fn contribution(bound: SliceBound) -> Vec<i64> {
    let config = config();
    let mut client = Client::new(&config, ClientId(2), RngSource::InsecureFixedSeed(7)).unwrap();
    let words = client.bounded_contribution(&values(), bound).unwrap();
    words.iter().map(|&w| w as i64).collect()
}

fn encoded() -> Vec<i64> {
    let config = config();
    let mut units = vec![0u64; 40];
    config.codec().encode(&values(), &mut units).unwrap();
    units.iter().map(|&w| w as i64).collect()
}

fn slice(words: &[i64]) -> Vec<i64> {
    words
        .iter()
        .zip(encoded())
        .map(|(&w, e)| w.wrapping_sub(e))
        .collect()
}

fn norm(v: &[i64]) -> f64 {
    v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt()
}

#[test]
fn a_norm_bound_the_slice_stays_within_changes_nothing() {
    let free = contribution(SliceBound::Coordinate(u64::MAX));
    assert_eq!(contribution(SliceBound::Norm(u64::MAX >> 2)), free);
    let slice_norm = norm(&slice(&free));
    assert!(slice_norm > 0.0);
    assert_eq!(
        contribution(SliceBound::Norm(slice_norm.ceil() as u64)),
        free
    );
}

#[test]
fn a_longer_slice_is_scaled_to_the_bound_keeping_each_entrys_sign() {
    let free = slice(&contribution(SliceBound::Coordinate(u64::MAX)));
    let tau = (norm(&free) / 3.0) as u64;
    let bounded = slice(&contribution(SliceBound::Norm(tau)));
    let length = norm(&bounded);
    // At most τ; each entry truncated towards 0 loses less than one unit, so at least τ − sqrt(d)
    // (and the scale's margin of 1e-12 relative).
    assert!(length <= tau as f64, "{length} > {tau}");
    assert!(
        length >= tau as f64 * (1.0 - 1e-9) - 40f64.sqrt(),
        "{length} ≪ {tau}"
    );
    for (b, f) in bounded.iter().zip(&free) {
        assert!(
            b.unsigned_abs() <= f.unsigned_abs() && b.signum() * f.signum() >= 0,
            "{b} {f}"
        );
        // The direction is kept: b ≈ f/3 to within a unit and the scale's rounding.
        assert!(
            ((*b as f64) - (*f as f64) * tau as f64 / norm(&free)).abs()
                < 1.0 + 1e-6 * (*f as f64).abs()
        );
    }
}
