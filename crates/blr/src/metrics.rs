//! Accuracy measures: MAE, RMSE and Spearman's rank correlation (average ranks for ties).

use crate::error::{Error, Result};

fn check_pair(truth: &[f64], predicted: &[f64]) -> Result<()> {
    if truth.is_empty() {
        return Err(Error::Empty {
            what: "metric's true values",
        });
    }
    if truth.len() != predicted.len() {
        return Err(Error::LengthMismatch {
            what: "metric's predictions (one per true value)",
            expected: truth.len(),
            got: predicted.len(),
        });
    }
    projection::error::check_finite(truth, 1, "truth")?;
    projection::error::check_finite(predicted, 1, "predicted")?;
    Ok(())
}

/// Mean absolute error.
pub fn mae(truth: &[f64], predicted: &[f64]) -> Result<f64> {
    check_pair(truth, predicted)?;
    Ok(truth
        .iter()
        .zip(predicted)
        .map(|(a, b)| (a - b).abs())
        .sum::<f64>()
        / truth.len() as f64)
}

/// Root mean squared error.
pub fn rmse(truth: &[f64], predicted: &[f64]) -> Result<f64> {
    check_pair(truth, predicted)?;
    let mse = truth
        .iter()
        .zip(predicted)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / truth.len() as f64;
    Ok(mse.sqrt())
}

/// Ranks 1..n with ties given the average of the ranks they span.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut ranks = vec![0.0; values.len()];
    average_ranks_into(values, &mut Vec::new(), &mut Vec::new(), &mut ranks);
    ranks
}

/// [`average_ranks`] into `ranks`, reusing `order` and `scratch`. The values are sorted by
/// [`sort_by_total_order`]: the same order as a stable sort of the indices by
/// `values[i].total_cmp(&values[j])`, at less cost (ranking is a large part of the threshold
/// search, which ranks every auxiliary fit's predictions).
fn average_ranks_into(
    values: &[f64],
    order: &mut Vec<(u64, usize)>,
    scratch: &mut Vec<(u64, usize)>,
    ranks: &mut [f64],
) {
    sort_by_total_order(values, order, scratch);
    assign_average_ranks(values, order, ranks);
}

/// Fills `order` with (key, index) for every value, sorted by key and, among equal keys, by
/// index: `key` maps `f64::total_cmp`'s order onto the unsigned integers, so this is the order of
/// a stable sort by `total_cmp`. A least-significant-digit radix sort (stable) on the key's upper
/// four bytes, skipping a byte that all keys share, then an insertion sort on the whole pair, which
/// only moves keys that share their upper 32 bits (values within about 10⁻⁶ of each other,
/// relatively): a few linear passes instead of n log n comparisons (the threshold search's
/// rankings: 30% less CPU than `sort_unstable` on the pairs, and the whole search 10% faster).
fn sort_by_total_order(
    values: &[f64],
    order: &mut Vec<(u64, usize)>,
    scratch: &mut Vec<(u64, usize)>,
) {
    let n = values.len();
    order.clear();
    order.extend(values.iter().enumerate().map(|(i, v)| {
        let bits = v.to_bits() as i64;
        let key = bits ^ ((((bits >> 63) as u64) >> 1) as i64);
        ((key as u64) ^ (1 << 63), i)
    }));
    if n < 2 {
        return;
    }
    let mut counts = [[0usize; 256]; 4];
    for &(key, _) in order.iter() {
        let top = (key >> 32) as usize;
        counts[0][top & 0xff] += 1;
        counts[1][(top >> 8) & 0xff] += 1;
        counts[2][(top >> 16) & 0xff] += 1;
        counts[3][top >> 24] += 1;
    }
    scratch.clear();
    scratch.resize(n, (0, 0));
    for (byte, count) in counts.iter_mut().enumerate() {
        let shift = 32 + 8 * byte;
        if count[((order[0].0 >> shift) & 0xff) as usize] == n {
            continue; // every key has this byte: the pass would not move anything
        }
        let mut next = 0;
        for c in count.iter_mut() {
            let here = *c;
            *c = next;
            next += here;
        }
        for &pair in order.iter() {
            let digit = ((pair.0 >> shift) & 0xff) as usize;
            scratch[count[digit]] = pair;
            count[digit] += 1;
        }
        std::mem::swap(order, scratch);
    }
    // Bounded: many values alike in their upper 32 bits (a nearly constant vector) would make
    // the insertion sort quadratic; past 8n moves a comparison sort finishes the job.
    let mut budget = 8 * n;
    for i in 1..n {
        let pair = order[i];
        let mut j = i;
        while j > 0 && order[j - 1] > pair {
            if budget == 0 {
                order[j] = pair; // back in, the shifted pairs a permutation again
                order.sort_unstable();
                return;
            }
            budget -= 1;
            order[j] = order[j - 1];
            j -= 1;
        }
        order[j] = pair;
    }
}

fn assign_average_ranks(values: &[f64], order: &[(u64, usize)], ranks: &mut [f64]) {
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end].1] == values[order[start].1] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their average:
        let rank = (start + 1 + end) as f64 / 2.0;
        for &(_, i) in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
}

/// Spearman's ρ against fixed true values, their ranks computed once: the threshold search scores
/// many predictions against the same auxiliary targets.
#[derive(Clone, Debug)]
pub(crate) struct SpearmanTruth {
    ranks: Vec<f64>,
    order: Vec<(u64, usize)>,
    scratch: Vec<(u64, usize)>,
    predicted_ranks: Vec<f64>,
}

impl SpearmanTruth {
    /// Checks `truth` (non-empty, finite) and ranks it.
    pub(crate) fn new(truth: &[f64]) -> Result<Self> {
        if truth.is_empty() {
            return Err(Error::Empty {
                what: "metric's true values",
            });
        }
        projection::error::check_finite(truth, 1, "truth")?;
        let (mut order, mut scratch) = (Vec::new(), Vec::new());
        let mut ranks = vec![0.0; truth.len()];
        average_ranks_into(truth, &mut order, &mut scratch, &mut ranks);
        Ok(SpearmanTruth {
            predicted_ranks: vec![0.0; truth.len()],
            ranks,
            order,
            scratch,
        })
    }

    /// [`spearman`] of the true values against `predicted`.
    pub(crate) fn rho(&mut self, predicted: &[f64]) -> Result<f64> {
        if predicted.len() != self.ranks.len() {
            return Err(Error::LengthMismatch {
                what: "metric's predictions (one per true value)",
                expected: self.ranks.len(),
                got: predicted.len(),
            });
        }
        projection::error::check_finite(predicted, 1, "predicted")?;
        average_ranks_into(
            predicted,
            &mut self.order,
            &mut self.scratch,
            &mut self.predicted_ranks,
        );
        Ok(rank_correlation(&self.ranks, &self.predicted_ranks))
    }
}

/// Pearson correlation of two rank vectors of 1..n (mean (n + 1)/2); 0 when either is constant.
fn rank_correlation(a: &[f64], b: &[f64]) -> f64 {
    let mean = (a.len() as f64 + 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        sab += (x - mean) * (y - mean);
        saa += (x - mean).powi(2);
        sbb += (y - mean).powi(2);
    }
    if saa == 0.0 || sbb == 0.0 {
        return 0.0;
    }
    sab / (saa * sbb).sqrt()
}

/// Spearman's ρ: Pearson correlation of the average ranks. A constant vector carries no ranking
/// information and gives 0 (the correlation itself is undefined there).
pub fn spearman(truth: &[f64], predicted: &[f64]) -> Result<f64> {
    check_pair(truth, predicted)?;
    Ok(rank_correlation(
        &average_ranks(truth),
        &average_ranks(predicted),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_values() {
        let t = [1.0, 2.0, 3.0, 4.0];
        let p = [1.5, 1.5, 3.0, 6.0];
        // |−0.5| + 0.5 + 0 + 2 = 3 → 0.75; squares 0.25 + 0.25 + 0 + 4 = 4.5 → sqrt(1.125).
        assert!((mae(&t, &p).unwrap() - 0.75).abs() < 1e-15);
        assert!((rmse(&t, &p).unwrap() - 1.125f64.sqrt()).abs() < 1e-15);
        assert_eq!(average_ranks(&p), vec![1.5, 1.5, 3.0, 4.0]);
        // Ranks (1,2,3,4) vs (1.5,1.5,3,4): centred (−1.5,−.5,.5,1.5) and (−1,−1,.5,1.5);
        // Σab = 1.5 + .5 + .25 + 2.25 = 4.5, Σa² = 5, Σb² = 1 + 1 + .25 + 2.25 = 4.5;
        // ρ = 4.5 / sqrt(22.5) = 0.948683…
        assert!((spearman(&t, &p).unwrap() - 4.5 / 22.5f64.sqrt()).abs() < 1e-15);
        assert_eq!(spearman(&t, &[4.0, 3.0, 2.0, 1.0]).unwrap(), -1.0);
        assert_eq!(spearman(&t, &[7.0; 4]).unwrap(), 0.0);
    }

    /// The pair sort ranks exactly as the stable sort by `total_cmp` it replaced, ties (and ±0,
    /// which `==` ties) included, and the prepared truth gives `spearman`'s value bit for bit.
    #[test]
    fn pair_sort_ranks_as_the_stable_sort_did() {
        fn reference(values: &[f64]) -> Vec<f64> {
            let mut order: Vec<usize> = (0..values.len()).collect();
            order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
            let mut ranks = vec![0.0; values.len()];
            let mut start = 0;
            while start < order.len() {
                let mut end = start + 1;
                while end < order.len() && values[order[end]] == values[order[start]] {
                    end += 1;
                }
                let rank = (start + 1 + end) as f64 / 2.0;
                for &i in &order[start..end] {
                    ranks[i] = rank;
                }
                start = end;
            }
            ranks
        }
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in [1usize, 2, 3, 7, 20, 100, 343] {
            for _ in 0..20 {
                let v: Vec<f64> = (0..n)
                    .map(|_| match next() % 5 {
                        0 => 0.0,
                        1 => -0.0,
                        2 => ((next() % 7) as f64 - 3.0) * 0.5,
                        _ => (next() % 1_000_000) as f64 / 1e3 - 500.0,
                    })
                    .collect();
                assert_eq!(average_ranks(&v), reference(&v));
                let mut odd = v.clone();
                for (k, x) in [
                    f64::NAN,
                    -f64::NAN,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    1e-310,
                ]
                .into_iter()
                .enumerate()
                {
                    if k < n {
                        odd[(next() as usize) % n] = x;
                    }
                }
                let (a, b) = (average_ranks(&odd), reference(&odd));
                assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
                let w: Vec<f64> = v.iter().map(|x| x * 0.3 + (next() % 3) as f64).collect();
                let mut truth = SpearmanTruth::new(&v).unwrap();
                let rho = truth.rho(&w).unwrap();
                assert_eq!(rho.to_bits(), spearman(&v, &w).unwrap().to_bits());
            }
        }
        // Nearly constant (alike in the upper 32 bits): the insertion sort's bound is reached.
        let near: Vec<f64> = (0..2000)
            .map(|_| 1.0 + (next() % 1000) as f64 * 1e-12)
            .collect();
        assert_eq!(average_ranks(&near), reference(&near));
        assert!(SpearmanTruth::new(&[]).is_err());
        assert!(SpearmanTruth::new(&[1.0, f64::NAN]).is_err());
        let mut t = SpearmanTruth::new(&[1.0, 2.0]).unwrap();
        assert!(t.rho(&[1.0]).is_err() && t.rho(&[1.0, f64::INFINITY]).is_err());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(mae(&[1.0], &[1.0, 2.0]).is_err());
        assert!(mae(&[], &[]).is_err());
        assert!(spearman(&[1.0, f64::NAN], &[1.0, 2.0]).is_err());
        assert!(rmse(&[1.0], &[f64::INFINITY]).is_err());
    }
}
