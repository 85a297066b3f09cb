//! Area under the ROC curve by the Mann–Whitney statistic (ties count ½), O(n log n).

use crate::data::{check_finite, signed_labels};
use crate::error::{Error, Result};

/// AUC of `scores` for labels in {0, 1} or {−1, +1}: the probability that a random positive
/// scores above a random negative, ties counting ½. Needs both classes; refuses NaN/inf.
pub fn auc(scores: &[f64], labels: &[f64]) -> Result<f64> {
    if scores.len() != labels.len() {
        return Err(Error::DimensionMismatch {
            what: "scores vs labels".into(),
            expected: labels.len(),
            got: scores.len(),
        });
    }
    check_finite(scores, "scores")?;
    let y = signed_labels(labels)?;
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Sum of (average, 1-based) ranks of the positives.
    let mut positive_rank_sum = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && scores[order[end]] == scores[order[start]] {
            end += 1;
        }
        let average_rank = (start + 1 + end) as f64 / 2.0;
        let positives = order[start..end].iter().filter(|&&i| y[i] > 0.0).count();
        positive_rank_sum += average_rank * positives as f64;
        start = end;
    }
    let n_pos = y.iter().filter(|&&v| v > 0.0).count() as f64;
    let n_neg = y.len() as f64 - n_pos;
    if n_pos == 0.0 || n_neg == 0.0 {
        return Err(Error::SingleClass);
    }
    Ok((positive_rank_sum - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct O(n²) count over all positive/negative pairs.
    fn pairwise(scores: &[f64], labels: &[f64]) -> f64 {
        let (mut wins, mut pairs) = (0.0, 0.0);
        for (i, &si) in scores.iter().enumerate() {
            for (j, &sj) in scores.iter().enumerate() {
                if labels[i] == 1.0 && labels[j] == 0.0 {
                    pairs += 1.0;
                    wins += if si > sj {
                        1.0
                    } else if si == sj {
                        0.5
                    } else {
                        0.0
                    };
                }
            }
        }
        wins / pairs
    }

    #[test]
    fn hand_computed_values() {
        assert_eq!(
            auc(&[0.1, 0.2, 0.3, 0.4], &[0.0, 0.0, 1.0, 1.0]).unwrap(),
            1.0
        );
        assert_eq!(
            auc(&[0.4, 0.3, 0.2, 0.1], &[0.0, 0.0, 1.0, 1.0]).unwrap(),
            0.0
        );
        // all tied: ½
        assert_eq!(auc(&[1.0; 4], &[0.0, 1.0, 0.0, 1.0]).unwrap(), 0.5);
        // pairs (pos 0.5 vs neg 0.1, 0.5): 1 + ½; (pos 0.3 vs neg 0.1, 0.5): 1 + 0 → 2.5/4
        assert_eq!(
            auc(&[0.5, 0.3, 0.1, 0.5], &[1.0, 1.0, -1.0, -1.0]).unwrap(),
            0.625
        );
    }

    #[test]
    fn matches_pairwise_count_with_many_ties() {
        let scores: Vec<f64> = (0..200).map(|i| ((i * 37) % 11) as f64).collect();
        let labels: Vec<f64> = (0..200).map(|i| ((i * 13) % 3 == 0) as u8 as f64).collect();
        let fast = auc(&scores, &labels).unwrap();
        assert!((fast - pairwise(&scores, &labels)).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_refused() {
        assert_eq!(auc(&[0.1, 0.2], &[1.0, 1.0]), Err(Error::SingleClass));
        assert!(auc(&[0.1, f64::NAN], &[0.0, 1.0]).is_err());
        assert!(auc(&[0.1], &[0.0, 1.0]).is_err());
        assert!(auc(&[0.1, 0.2], &[0.0, 2.0]).is_err());
    }
}
