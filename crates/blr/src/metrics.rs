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
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their average:
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Spearman's ρ: Pearson correlation of the average ranks. A constant vector carries no ranking
/// information and gives 0 (the correlation itself is undefined there).
pub fn spearman(truth: &[f64], predicted: &[f64]) -> Result<f64> {
    check_pair(truth, predicted)?;
    let (a, b) = (average_ranks(truth), average_ranks(predicted));
    let mean = (truth.len() as f64 + 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(&b) {
        sab += (x - mean) * (y - mean);
        saa += (x - mean).powi(2);
        sbb += (y - mean).powi(2);
    }
    if saa == 0.0 || sbb == 0.0 {
        return Ok(0.0);
    }
    Ok(sab / (saa * sbb).sqrt())
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

    #[test]
    fn rejects_bad_input() {
        assert!(mae(&[1.0], &[1.0, 2.0]).is_err());
        assert!(mae(&[], &[]).is_err());
        assert!(spearman(&[1.0, f64::NAN], &[1.0, 2.0]).is_err());
        assert!(rmse(&[1.0], &[f64::INFINITY]).is_err());
    }
}
