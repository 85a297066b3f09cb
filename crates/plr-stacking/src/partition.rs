//! Feature groups with importances (PST-F, PST-H) and random row splits (D^l / D^h, PST-S).
//!
//! Importance must come from side information — expert opinion, a public data set, the known
//! design of an experiment — never from the private training data: the guarantee treats q_k as
//! a constant independent of the data (stacking paper, footnote 4). Nothing here looks at rows.

use rand_core::RngCore;

use crate::calibration::normalised_importance;
use crate::error::{Error, Result};

/// K disjoint, non-empty groups of feature indices with importances q_k ≥ 0, Σ q_k = 1.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureGroups {
    groups: Vec<Vec<usize>>,
    importance: Vec<f64>,
    n_features: usize,
}

impl FeatureGroups {
    /// Groups with importances supplied from side information (never computed from the private
    /// data). Indices must be < `n_features`, appear at most once, and no group may be empty;
    /// importances must be ≥ 0 and sum to 1 (within `calibration::IMPORTANCE_TOLERANCE`).
    /// Features in no group are ignored by the low-level models.
    pub fn new(groups: Vec<Vec<usize>>, importance: Vec<f64>, n_features: usize) -> Result<Self> {
        if groups.is_empty() {
            return Err(Error::Empty {
                what: "feature groups".into(),
            });
        }
        if groups.len() != importance.len() {
            return Err(Error::DimensionMismatch {
                what: "number of importances (one per group)".into(),
                expected: groups.len(),
                got: importance.len(),
            });
        }
        let mut used = vec![false; n_features];
        for (k, group) in groups.iter().enumerate() {
            if group.is_empty() {
                return Err(Error::Empty {
                    what: format!("feature group {k}"),
                });
            }
            for &j in group {
                match used.get_mut(j) {
                    None => {
                        return Err(Error::BadFeatureIndex {
                            index: j,
                            reason: "out of range",
                        });
                    }
                    Some(seen) if *seen => {
                        return Err(Error::BadFeatureIndex {
                            index: j,
                            reason: "listed in more than one place (groups must be disjoint)",
                        });
                    }
                    Some(seen) => *seen = true,
                }
            }
        }
        let importance = normalised_importance(&importance)?;
        Ok(FeatureGroups {
            groups,
            importance,
            n_features,
        })
    }

    /// Groups with equal importance q_k = 1/K (the paper's choice when importance is unknown).
    pub fn uniform(groups: Vec<Vec<usize>>, n_features: usize) -> Result<Self> {
        let k = groups.len();
        Self::new(groups, vec![1.0 / k.max(1) as f64; k], n_features)
    }

    /// PST-F(U): a uniformly random partition of all features into K groups of sizes differing
    /// by at most one, q_k = 1/K. The randomness is independent of the data.
    pub fn random_uniform(n_features: usize, k: usize, rng: &mut impl RngCore) -> Result<Self> {
        check_group_count(n_features, k)?;
        let order = permutation(n_features, rng);
        Self::uniform(contiguous_blocks(&order, k), n_features)
    }

    /// PST-F(W): features sorted by decreasing side-information `scores` (ties by index), cut
    /// into K contiguous blocks of sizes differing by at most one; q_k by eq. 6.
    pub fn sorted_blocks(scores: &[f64], k: usize) -> Result<Self> {
        let n_features = scores.len();
        check_group_count(n_features, k)?;
        check_scores(scores)?;
        let mut order: Vec<usize> = (0..n_features).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let groups = contiguous_blocks(&order, k);
        let importance = importance_from_scores(&groups, scores)?;
        Self::new(groups, importance, n_features)
    }

    /// The groups' feature indices.
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// The importances q_k (summing to exactly 1).
    pub fn importance(&self) -> &[f64] {
        &self.importance
    }

    /// Number of features of the data the groups index into.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Number of groups K.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Always false (a `FeatureGroups` has at least one group); present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

/// Eq. 6: q_k = Σ_{i∈F_k} v_i / Σ_j v_j, with v the side-information scores of all features
/// (e.g. variances known from the data's design, or experts' weights). Features outside every
/// group count in the denominator, as in eq. 6; the resulting Σq < 1 is then refused by
/// `FeatureGroups::new`, so groups must cover every feature with a positive score.
pub fn importance_from_scores(groups: &[Vec<usize>], scores: &[f64]) -> Result<Vec<f64>> {
    check_scores(scores)?;
    let total: f64 = scores.iter().sum();
    if total <= 0.0 {
        return Err(Error::InvalidParameter {
            name: "sum of scores",
            value: total,
            requirement: "> 0",
        });
    }
    let mut importance = Vec::with_capacity(groups.len());
    for group in groups {
        let mut sum = 0.0;
        for &j in group {
            sum += *scores.get(j).ok_or(Error::BadFeatureIndex {
                index: j,
                reason: "out of range",
            })?;
        }
        importance.push(sum / total);
    }
    Ok(importance)
}

fn check_scores(scores: &[f64]) -> Result<()> {
    for (index, &s) in scores.iter().enumerate() {
        if !s.is_finite() {
            return Err(Error::NonFinite {
                what: "scores".into(),
                index,
            });
        }
        if s < 0.0 {
            return Err(Error::NegativeEntry {
                what: "scores",
                index,
                value: s,
            });
        }
    }
    Ok(())
}

fn check_group_count(n: usize, k: usize) -> Result<()> {
    if k == 0 || k > n {
        return Err(Error::BadGroupCount {
            groups: k,
            items: n,
        });
    }
    Ok(())
}

/// Uniform random permutation of 0..n (Fisher–Yates with unbiased bounded draws).
pub(crate) fn permutation(n: usize, rng: &mut impl RngCore) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = uniform_below(rng, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// Uniform integer in [0, bound) by rejection (no modulo bias).
fn uniform_below(rng: &mut impl RngCore, bound: u64) -> u64 {
    let zone = u64::MAX - u64::MAX % bound;
    loop {
        let v = rng.next_u64();
        if v < zone {
            return v % bound;
        }
    }
}

/// Cuts `items` into k contiguous blocks whose sizes differ by at most one (k ≤ len).
pub(crate) fn contiguous_blocks(items: &[usize], k: usize) -> Vec<Vec<usize>> {
    let n = items.len();
    (0..k)
        .map(|b| items[b * n / k..(b + 1) * n / k].to_vec())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn eq6_importance_from_scores() {
        // scores 4, 3, 2, 1 in two blocks {0,1}, {2,3}: q = 7/10, 3/10.
        let g = FeatureGroups::sorted_blocks(&[1.0, 2.0, 3.0, 4.0], 2).unwrap();
        assert_eq!(g.groups(), &[vec![3, 2], vec![1, 0]]);
        assert!((g.importance()[0] - 0.7).abs() < 1e-15);
        assert!((g.importance()[1] - 0.3).abs() < 1e-15);
    }

    #[test]
    fn random_partition_covers_every_feature_once() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let g = FeatureGroups::random_uniform(23, 5, &mut rng).unwrap();
        let mut all: Vec<usize> = g.groups().concat();
        all.sort();
        assert_eq!(all, (0..23).collect::<Vec<_>>());
        assert!(g.groups().iter().all(|b| b.len() == 4 || b.len() == 5));
        assert!(g.importance().iter().all(|&q| (q - 0.2).abs() < 1e-15));
    }

    #[test]
    fn bad_groups_are_refused() {
        assert!(matches!(
            FeatureGroups::new(vec![vec![0], vec![]], vec![0.5, 0.5], 3),
            Err(Error::Empty { .. })
        ));
        assert!(matches!(
            FeatureGroups::new(vec![vec![0], vec![0]], vec![0.5, 0.5], 3),
            Err(Error::BadFeatureIndex { index: 0, .. })
        ));
        assert!(matches!(
            FeatureGroups::new(vec![vec![0], vec![3]], vec![0.5, 0.5], 3),
            Err(Error::BadFeatureIndex { index: 3, .. })
        ));
        assert!(matches!(
            FeatureGroups::new(vec![vec![0], vec![1]], vec![0.5, 0.6], 3),
            Err(Error::ImportanceSum { .. })
        ));
        assert!(matches!(
            FeatureGroups::new(vec![vec![0], vec![1]], vec![0.5], 3),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(FeatureGroups::new(vec![], vec![], 3).is_err());
        assert!(FeatureGroups::sorted_blocks(&[1.0, f64::NAN], 1).is_err());
        assert!(FeatureGroups::sorted_blocks(&[1.0, 2.0], 3).is_err());
    }
}
