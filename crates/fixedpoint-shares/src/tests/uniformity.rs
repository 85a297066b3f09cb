//! Any M − 1 shares of one client look uniform over the whole ring.
//!
//! For each subset of M − 1 nodes and each of the 8 byte positions of a word, the bytes at that
//! position across the subset's shares must pass a chi-square test with 256 bins at α = 1e-6.
//! Testing per byte position matters: masks drawn from a bounded range (as in the authors'
//! research code) leave the high bytes of the balancing share biased, which a pooled byte test
//! could dilute; [`bounded_masks_would_fail`] shows this test catches it.

use dp_noise::rng::RngSource;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::{expand, params};
use crate::{Client, ClientId, RoundConfig, ShareMode};

/// Upper 1e-6 quantile of chi-square with 255 degrees of freedom.
///
/// Computed as the root of Q(255/2, x/2) = 1e-6 (regularised upper incomplete gamma, Lentz
/// continued fraction, bisection): x = 377.078. Wilson–Hilferty cross-check: with k = 255,
/// z = Φ⁻¹(1 − 1e-6) = 4.753424, x ≈ k·(1 − 2/(9k) + z·sqrt(2/(9k)))³
/// = 255·(1 − 0.000871 + 4.753424·0.029521)³ = 255·1.139450³ = 255·1.479408 = 377.25.
/// (The often-quoted 375.6 has upper tail 1.28e-6, slightly above α.)
const CHI2_255_CRIT: f64 = 377.078;

fn chi_square(counts: &[u64; 256]) -> f64 {
    let n: u64 = counts.iter().sum();
    let expected = n as f64 / 256.0;
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

/// Chi-square per byte position over all words of `shares`.
fn per_position_chi_square(shares: &[Vec<u64>]) -> [f64; 8] {
    let mut counts = [[0u64; 256]; 8];
    for share in shares {
        for w in share {
            for (pos, b) in w.to_le_bytes().iter().enumerate() {
                counts[pos][usize::from(*b)] += 1;
            }
        }
    }
    counts.map(|c| chi_square(&c))
}

#[test]
fn any_m_minus_one_shares_are_uniform() {
    let (m, d) = (4u16, 8192usize);
    // A maximally structured input: every element at the bound (high bytes constant).
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = RoundConfig::new(&params(10, m, 0, d, mode)).unwrap();
        let msgs = Client::new(&config, ClientId(5), RngSource::InsecureFixedSeed(2024))
            .unwrap()
            .shard(&vec![2.5; d])
            .unwrap();
        let shares: Vec<Vec<u64>> = msgs.iter().map(expand).collect();
        for left_out in 0..usize::from(m) {
            let subset: Vec<Vec<u64>> = shares
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != left_out)
                .map(|(_, s)| s.clone())
                .collect();
            for (pos, chi2) in per_position_chi_square(&subset).iter().enumerate() {
                assert!(
                    *chi2 < CHI2_255_CRIT,
                    "{mode:?}, without node {left_out}, byte {pos}: chi2 = {chi2}"
                );
            }
        }
        // The encoding itself is far from uniform (the test has power).
        let f = config.codec().frac_bits();
        let plain = vec![vec![super::quantise(2.5, f) as i64 as u64; d]];
        assert!(
            per_position_chi_square(&plain)
                .iter()
                .any(|&c| c > CHI2_255_CRIT)
        );
    }
}

/// With masks uniform only on [0, 2^48), the balancing share enc(z) − r of a constant input
/// has biased top bytes and fails the same test.
#[test]
fn bounded_masks_would_fail() {
    let d = 8192;
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let encoded = 5u64 << 50;
    let balancing: Vec<u64> = (0..d)
        .map(|_| encoded.wrapping_sub(rng.next_u64() >> 16))
        .collect();
    let chi2 = per_position_chi_square(&[balancing]);
    assert!(
        chi2[7] > CHI2_255_CRIT && chi2[6] > CHI2_255_CRIT,
        "{chi2:?}"
    );
}
