//! Saying so when the noise of the released statistics dominates them. Only released values
//! (the noisy statistics and the noise σ, both public after the release) are looked at, so the
//! check costs no privacy.

use crate::stats::{SuffStats, packed_index};

/// The warning is given when the noise sd is at least this share of the median |Σ x_j²|: a
/// signal-to-noise ratio below about 4 on the statistics that fix the posterior's scale.
pub const NOISE_DOMINANCE_RATIO: f64 = 0.25;

/// A warning when the noise sd `noise_sigma` of the released statistics `stats` is at least
/// [`NOISE_DOMINANCE_RATIO`] × the median of the released diagonal |Σ x_j²|; `None` otherwise and
/// for `noise_sigma <= 0` (no noise). `n` and `epsilon` only go into the message.
pub fn noise_dominance_warning(
    stats: &SuffStats,
    noise_sigma: f64,
    n: usize,
    epsilon: f64,
) -> Option<String> {
    if noise_sigma.is_nan() || noise_sigma <= 0.0 || stats.d == 0 {
        return None;
    }
    let mut diag: Vec<f64> = (0..stats.d)
        .filter_map(|j| stats.xx.get(packed_index(j, j, stats.d)).map(|v| v.abs()))
        .collect();
    if diag.is_empty() {
        return None;
    }
    diag.sort_by(f64::total_cmp);
    let median = diag[diag.len() / 2];
    if noise_sigma < NOISE_DOMINANCE_RATIO * median {
        return None;
    }
    Some(format!(
        "the noise of the released statistics (sd {noise_sigma:.3}) is {:.2}x the median released \
         Σx_j² ({median:.3}): with {n} rows at ε = {epsilon} the fit is dominated by noise and its \
         errors will be far above the non-private fit's; more rows or a larger ε are needed (see \
         docs/src/privacy-rows-per-epsilon.md)",
        noise_sigma / median.max(f64::MIN_POSITIVE)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(diag: f64) -> SuffStats {
        let d = 3;
        let mut xx = vec![0.5; d * (d + 1) / 2];
        for j in 0..d {
            xx[packed_index(j, j, d)] = diag;
        }
        SuffStats {
            d,
            n: 10,
            xx,
            xy: vec![1.0; d],
            yy: 0.0,
        }
    }

    #[test]
    fn warns_only_when_the_noise_is_a_large_share_of_the_statistics() {
        let w = noise_dominance_warning(&stats(100.0), 200.0, 19, 1.0).unwrap();
        assert!(w.contains("2.00x") && w.contains("19 rows"), "{w}");
        assert!(noise_dominance_warning(&stats(-100.0), 30.0, 19, 1.0).is_some());
        assert!(noise_dominance_warning(&stats(1000.0), 10.0, 5000, 1.0).is_none());
        assert!(noise_dominance_warning(&stats(1.0), 0.0, 5, 1.0).is_none());
    }
}
