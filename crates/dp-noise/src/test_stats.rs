//! Statistical helpers for the tests (never compiled into the library).
//!
//! Every test compares against a bound that holds with probability ≥ 1 − 1e-6, and uses fixed
//! seeds, so a failure means a wrong distribution, not bad luck.

use crate::special::erfc;

/// The significance level of every statistical test in this crate.
pub(crate) const ALPHA: f64 = 1e-6;

/// P(χ²_df > x) in closed form for integer df ≥ 1 (regularised upper incomplete gamma at
/// half-integer shape): even df = 2k: e^{−x/2} Σ_{i<k} (x/2)^i/i!; odd df = 2k+1:
/// erfc(sqrt(x/2)) + e^{−x/2} Σ_{i<k} (x/2)^{i+1/2}/Γ(i + 3/2).
pub(crate) fn chi_square_sf(df: usize, x: f64) -> f64 {
    assert!(df >= 1);
    let h = 0.5 * x;
    let k = df / 2;
    if df.is_multiple_of(2) {
        let mut term = 1.0;
        let mut sum = 0.0;
        for i in 0..k {
            if i > 0 {
                term *= h / i as f64;
            }
            sum += term;
        }
        (-h).exp() * sum
    } else {
        // term_i = h^{i+1/2}/Γ(i+3/2); term_0 = sqrt(h)/Γ(3/2) = 2 sqrt(h/π).
        let mut term = 2.0 * (h / std::f64::consts::PI).sqrt();
        let mut sum = 0.0;
        for i in 0..k {
            if i > 0 {
                term *= h / (i as f64 + 0.5);
            }
            sum += term;
        }
        erfc(h.sqrt()) + (-h).exp() * sum
    }
}

/// Pearson's statistic and its p-value for `counts` against probabilities `probs` (sum 1).
pub(crate) fn chi_square_p_value(counts: &[u64], probs: &[f64]) -> (f64, f64) {
    let n: u64 = counts.iter().sum();
    let n = n as f64;
    let stat: f64 = counts
        .iter()
        .zip(probs)
        .map(|(&c, &p)| {
            let e = n * p;
            (c as f64 - e) * (c as f64 - e) / e
        })
        .sum();
    (stat, chi_square_sf(counts.len() - 1, stat))
}

/// The DKW–Massart bound: P(sup |F_n − F| > t) ≤ 2·exp(−2nt²) for every n, so
/// t = sqrt(ln(2/α)/(2n)) is a valid critical value for the KS statistic. For α = 1e-6:
/// sqrt(ln(2e6)/2) = sqrt(14.5087/2) = 2.6934, i.e. t = 2.6934/sqrt(n).
pub(crate) fn ks_critical(n: usize) -> f64 {
    ((2.0 / ALPHA).ln() / (2.0 * n as f64)).sqrt()
}

/// The two-sided KS statistic of `samples` (sorted in place) against the continuous CDF `cdf`.
pub(crate) fn ks_statistic(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in samples.iter().enumerate() {
        let f = cdf(x);
        d = d.max(f - i as f64 / n).max((i + 1) as f64 / n - f);
    }
    d
}

/// Hoeffding: a mean of n variables in [0, 1] is within sqrt(ln(2/α)/(2n)) of its expectation
/// with probability ≥ 1 − α (same number as the DKW bound).
pub(crate) fn hoeffding_radius(n: usize) -> f64 {
    ks_critical(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against mpmath `gammainc(df/2, x/2, inf, regularized=True)`.
    #[test]
    fn chi_square_sf_matches_mpmath() {
        let cases = [
            (1, 3.0, 0.083_264_516_663_550_4),
            (2, 5.0, 0.082_084_998_623_898_8),
            (3, 10.0, 0.018_566_135_463_043_23),
            (10, 25.0, 0.005_345_505_487_134_064),
            (39, 60.0, 0.016_922_148_663_836_035),
            (40, 100.0, 4.791_357_300_338_101e-7),
        ];
        for (df, x, want) in cases {
            let got = chi_square_sf(df, x);
            assert!(
                ((got - want) / want).abs() < 1e-12,
                "df {df}: {got} vs {want}"
            );
        }
    }
}
