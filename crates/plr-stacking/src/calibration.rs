//! Privacy calibration of objective perturbation: ε′ and the extra ridge Δ (stacking paper
//! Alg. 1 steps 1–6 and Alg. 3 steps 3–10; Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2).
//!
//! Proof sketch (Lemma 7–8 of the stacking paper, c = 1/4 for the logistic loss). Fit K models
//! on the same n records, model k on a disjoint feature group with rows clipped to ‖x_(k)‖ ≤ q_k,
//! regulariser λ_k·g_k with g_k 1-strongly convex, noise b_k with density ∝ exp(−ε_k‖b_k‖/2).
//! Replacing one record changes, for every k,
//!
//! * the noise needed to reach the same minimiser by ‖b_k − b_k′‖ ≤ 2q_k, so the noise
//!   densities differ by at most exp(ε_k q_k);
//! * the Jacobian of w ↦ b_k by a factor at most (1 + q_k²/(4n(λ_k + Δ_k)))².
//!
//! The K models are independent given the data, so the privacy loss is
//! Σ_k ε_k q_k + Σ_k 2 log(1 + q_k²/(4n(λ_k + Δ_k))).
//!
//! Branch ε′ > 0: Δ_k = 0, ε_k = ε′ = ε − Σ_k log(1 + q_k²/(2nλ_k) + q_k⁴/(16n²λ_k²)); with
//! Σ q_k = 1 the loss is ε′ + (ε − ε′) = ε.
//!
//! Branch ε′ ≤ 0: ε_k = ε/2 and Δ_k = q_k²/(4n(e^{εq_k/4} − 1)) − λ_k makes each Jacobian factor
//! exactly e^{εq_k/2}; the loss is ε/2 + ε/2 = ε. When that Δ_k is negative (possible for
//! K > 1) we use Δ_k = 0: λ_k alone is then larger than needed and the factor only shrinks.
//! A group with q_k = 0 has all-zero rows, its model does not depend on the data; Δ_k = 0.
//!
//! PLR (Alg. 1) is the case K = 1, q = 1.
//!
//! Why clipping x_(k) into the ball of radius q_k (x_(k) · min(1, q_k/‖x_(k)‖), what the fits
//! do) leaves this calibration unchanged. The argument above uses the data only through two
//! facts about one record (x, y), y = ±1, with z = y·wᵀx_(k) and ℓ(z) = log(1 + e^{−z}):
//! (a) the record's gradient term ∇_w ℓ = −y σ(−z) x_(k) has norm ≤ |σ(−z)|·‖x_(k)‖ ≤ ‖x_(k)‖,
//!     so replacing the record moves the gradient of n·f by at most 2 max‖x_(k)‖, i.e. the
//!     noise that reaches the same minimiser moves by ‖b_k − b_k′‖ ≤ 2 max‖x_(k)‖;
//! (b) its Hessian term ℓ″(z) x_(k) x_(k)ᵀ has rank one and eigenvalue ℓ″(z)‖x_(k)‖² ≤
//!     ‖x_(k)‖²/4, which is what bounds the Jacobian factor.
//! Both need only ‖x_(k)‖ ≤ q_k for every record, not how that bound was reached. Clipping is
//! a fixed map applied to each record alone (it reads no other record and no private
//! statistic), so neighbouring data sets stay neighbours after it, and its output satisfies
//! ‖x_(k)‖ ≤ q_k exactly as the old map x_(k) · q_k / max(1, ‖x_(k)‖) did. Hence (a) and (b) hold
//! with the same q_k, and ε′, ε_k and Δ_k — functions of (ε, n, q, λ) only — are the same
//! numbers. The tests `clipped_groups_respect_their_radius` and
//! `worst_case_neighbours_stay_within_the_calibrated_bounds` check the two facts on random and
//! adversarial records.
//!
//! ε = ∞ means the non-private fit: no noise and Δ = 0.

use crate::error::{Error, Result};

/// Importances may miss 1 by this much (rounding in the caller's arithmetic); they are then
/// renormalised to sum to exactly 1, so the guarantee is exact.
pub const IMPORTANCE_TOLERANCE: f64 = 1e-6;

/// Noise and extra ridge of one low-level model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupNoise {
    /// ε_k: the noise density is ∝ exp(−ε_k‖b‖/2), so ‖b‖ ~ Gamma(d_k, 2/ε_k); ∞ = no noise.
    pub noise_epsilon: f64,
    /// Δ_k ≥ 0, added as Δ_k‖w‖²/2 to the objective.
    pub extra_ridge: f64,
    /// q_k after renormalisation: rows of this group are clipped to ‖x_(k)‖ ≤ q_k.
    pub importance: f64,
}

/// Calibration of K objective-perturbation fits on the same n records.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The total budget ε (∞ = non-private).
    pub epsilon: f64,
    /// ε′ of step 1 / step 3 (before the Δ branch); ≤ 0 means the Δ branch was taken.
    pub epsilon_prime: f64,
    /// One entry per group (one entry for plain PLR).
    pub groups: Vec<GroupNoise>,
}

impl Calibration {
    /// Calibration of plain PLR (Alg. 1): budget ε on n records, regularisation λ.
    pub fn plr(epsilon: f64, n: usize, lambda: f64) -> Result<Self> {
        Self::feature_groups(epsilon, n, &[1.0], &[lambda])
    }

    /// Calibration of the low level of PST-F (Alg. 3): importances q_k (from side information,
    /// ≥ 0, summing to 1) and regularisations λ_k > 0 for the K groups, n records.
    pub fn feature_groups(
        epsilon: f64,
        n: usize,
        importance: &[f64],
        lambda: &[f64],
    ) -> Result<Self> {
        check_epsilon(epsilon)?;
        if n == 0 {
            return Err(Error::Empty {
                what: "training data (no rows)".into(),
            });
        }
        if importance.len() != lambda.len() {
            return Err(Error::DimensionMismatch {
                what: "number of regularisation weights (one per group)".into(),
                expected: importance.len(),
                got: lambda.len(),
            });
        }
        for &l in lambda {
            check_lambda(l)?;
        }
        let q = normalised_importance(importance)?;
        let n = n as f64;
        let penalty: f64 = q
            .iter()
            .zip(lambda)
            // log(1 + a/2 + a²/16) with a = q²/(nλ) equals 2·log(1 + a/4); ln_1p keeps
            // precision when a is tiny.
            .map(|(&qk, &lk)| 2.0 * (qk * qk / (4.0 * n * lk)).ln_1p())
            .sum();
        let epsilon_prime = epsilon - penalty;
        let groups = if epsilon.is_infinite() {
            q.iter()
                .map(|&importance| GroupNoise {
                    noise_epsilon: f64::INFINITY,
                    extra_ridge: 0.0,
                    importance,
                })
                .collect()
        } else if epsilon_prime > 0.0 {
            q.iter()
                .map(|&importance| GroupNoise {
                    noise_epsilon: epsilon_prime,
                    extra_ridge: 0.0,
                    importance,
                })
                .collect()
        } else {
            let mut groups = Vec::with_capacity(q.len());
            for (&qk, &lk) in q.iter().zip(lambda) {
                let extra_ridge = if qk == 0.0 {
                    0.0
                } else {
                    (qk * qk / (4.0 * n * (epsilon * qk / 4.0).exp_m1()) - lk).max(0.0)
                };
                if !extra_ridge.is_finite() {
                    return Err(Error::InvalidParameter {
                        name: "epsilon",
                        value: epsilon,
                        requirement: "large enough to calibrate (Δ overflows)",
                    });
                }
                groups.push(GroupNoise {
                    noise_epsilon: epsilon / 2.0,
                    extra_ridge,
                    importance: qk,
                });
            }
            groups
        };
        Ok(Calibration {
            epsilon,
            epsilon_prime,
            groups,
        })
    }
}

/// ε must be positive (∞ allowed: non-private).
pub(crate) fn check_epsilon(epsilon: f64) -> Result<()> {
    if epsilon.is_nan() || epsilon <= 0.0 {
        return Err(Error::InvalidParameter {
            name: "epsilon",
            value: epsilon,
            requirement: "> 0 (use infinity for a non-private fit)",
        });
    }
    Ok(())
}

/// λ must be positive and finite: strong convexity is what the guarantee rests on.
pub(crate) fn check_lambda(lambda: f64) -> Result<()> {
    if !(lambda.is_finite() && lambda > 0.0) {
        return Err(Error::InvalidParameter {
            name: "lambda",
            value: lambda,
            requirement: "finite and > 0",
        });
    }
    Ok(())
}

/// Checks q_k ≥ 0 finite, |Σq − 1| ≤ tolerance, and renormalises to sum exactly 1.
pub(crate) fn normalised_importance(importance: &[f64]) -> Result<Vec<f64>> {
    if importance.is_empty() {
        return Err(Error::Empty {
            what: "feature groups".into(),
        });
    }
    for (index, &q) in importance.iter().enumerate() {
        if !q.is_finite() {
            return Err(Error::NonFinite {
                what: "importance".into(),
                index,
            });
        }
        if q < 0.0 {
            return Err(Error::NegativeEntry {
                what: "importance",
                index,
                value: q,
            });
        }
    }
    let sum: f64 = importance.iter().sum();
    if (sum - 1.0).abs() > IMPORTANCE_TOLERANCE {
        return Err(Error::ImportanceSum { sum });
    }
    Ok(importance.iter().map(|q| q / sum).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn plr_without_extra_ridge() {
        // ε = 1, n = 100, λ = 0.01: nλ = 1, 1/(2nλ) = 0.5, 1/(16n²λ²) = 0.0625,
        // log(1.5625) = 2·log(1.25) = 0.44628710262841953, ε′ = 0.5537128973715805 > 0, Δ = 0.
        let c = Calibration::plr(1.0, 100, 0.01).unwrap();
        assert!(close(c.epsilon_prime, 0.5537128973715805));
        assert_eq!(c.groups.len(), 1);
        assert!(close(c.groups[0].noise_epsilon, 0.5537128973715805));
        assert_eq!(c.groups[0].extra_ridge, 0.0);
    }

    #[test]
    fn plr_with_extra_ridge() {
        // ε = 0.4, n = 100, λ = 0.01: ε′ = 0.4 − 0.44628710262841953 = −0.0462871... ≤ 0, so
        // Δ = 1/(4n(e^{ε/4} − 1)) − λ = 1/(400 · 0.10517091807564771) − 0.01
        //   = 0.023770829861937605 − 0.01 = 0.013770829861937605, and the noise uses ε/2 = 0.2.
        let c = Calibration::plr(0.4, 100, 0.01).unwrap();
        assert!(close(c.epsilon_prime, 0.4 - 0.44628710262841953));
        assert!(close(c.groups[0].extra_ridge, 0.013770829861937605));
        assert!(close(c.groups[0].noise_epsilon, 0.2));
    }

    #[test]
    fn feature_groups_without_extra_ridge() {
        // ε = 1, n = 50, q = (0.75, 0.25), λ = (0.01, 0.02):
        // group 1: 1 + 0.5625/1 + 0.31640625/4 = 1.6416015625
        // group 2: 1 + 0.0625/2 + 0.00390625/16 = 1.031494140625
        // ε′ = 1 − log(1.6416015625) − log(1.031494140625) = 0.4733192991189069.
        let c = Calibration::feature_groups(1.0, 50, &[0.75, 0.25], &[0.01, 0.02]).unwrap();
        assert!(close(c.epsilon_prime, 0.4733192991189069));
        for g in &c.groups {
            assert!(close(g.noise_epsilon, 0.4733192991189069));
            assert_eq!(g.extra_ridge, 0.0);
        }
    }

    #[test]
    fn feature_groups_with_extra_ridge() {
        // ε = 0.3, same groups: ε′ = 0.3 − 0.5266807008810931 = −0.22668070088109304 ≤ 0.
        // Δ_1 = 0.5625/(200(e^{0.05625} − 1)) − 0.01 = 0.5625/(200·0.0578621162102273) − 0.01
        //     = 0.03860693289857384;
        // Δ_2 = 0.0625/(200(e^{0.01875} − 1)) − 0.02 = −0.003489095054944425 < 0 → 0 (λ_2 alone
        //     already bounds the Jacobian factor by e^{εq_2/2}).
        // Both noises use ε/2 = 0.15.
        let c = Calibration::feature_groups(0.3, 50, &[0.75, 0.25], &[0.01, 0.02]).unwrap();
        assert!(close(c.epsilon_prime, -0.22668070088109304));
        assert!(close(c.groups[0].extra_ridge, 0.03860693289857384));
        assert_eq!(c.groups[1].extra_ridge, 0.0);
        assert!(c.groups.iter().all(|g| close(g.noise_epsilon, 0.15)));
    }

    #[test]
    fn privacy_loss_bound_is_exactly_epsilon() {
        // Recompute the loss of the proof sketch from the calibration: Σ ε_k q_k +
        // Σ 2 log(1 + q_k²/(4n(λ_k + Δ_k))) must not exceed ε (equality when no clamp).
        for &(eps, n) in &[(0.3, 50usize), (1.0, 50), (0.05, 1000), (5.0, 10)] {
            let q = [0.5, 0.3, 0.2];
            let l = [0.01, 0.003, 0.02];
            let c = Calibration::feature_groups(eps, n, &q, &l).unwrap();
            let loss: f64 = c
                .groups
                .iter()
                .zip(&l)
                .map(|(g, lk)| {
                    g.noise_epsilon * g.importance
                        + 2.0
                            * (g.importance * g.importance
                                / (4.0 * n as f64 * (lk + g.extra_ridge)))
                                .ln_1p()
                })
                .sum();
            assert!(loss <= eps * (1.0 + 1e-12), "eps {eps} n {n}: loss {loss}");
        }
    }

    #[test]
    fn infinite_epsilon_means_no_noise() {
        let c = Calibration::plr(f64::INFINITY, 10, 1e-3).unwrap();
        assert_eq!(c.groups[0].noise_epsilon, f64::INFINITY);
        assert_eq!(c.groups[0].extra_ridge, 0.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Calibration::plr(0.0, 10, 1e-3).is_err());
        assert!(Calibration::plr(f64::NAN, 10, 1e-3).is_err());
        assert!(Calibration::plr(1.0, 10, 0.0).is_err());
        assert!(Calibration::plr(1.0, 10, -1.0).is_err());
        assert!(Calibration::plr(1.0, 0, 1e-3).is_err());
        assert_eq!(
            Calibration::feature_groups(1.0, 10, &[0.5, 0.4], &[1e-3, 1e-3]),
            Err(Error::ImportanceSum { sum: 0.9 })
        );
        assert!(Calibration::feature_groups(1.0, 10, &[1.5, -0.5], &[1e-3, 1e-3]).is_err());
        assert!(Calibration::feature_groups(1.0, 10, &[0.5, 0.5], &[1e-3]).is_err());
        // tiny ε makes Δ overflow: refused rather than returning inf
        assert!(Calibration::plr(1e-320, 10, 1e-3).is_err());
    }
}
