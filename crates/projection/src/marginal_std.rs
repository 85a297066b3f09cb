//! The DP marginal-std round (DCA paper Alg. 2 steps 1–2): every client clips its record to the
//! public assumed bounds c_j, contributes the squares x_ij² (and y_i²), and the noisy sum gives
//! σ̂_j² = (Σ_i x_ij² + η_j)/N for zero-mean data. An estimate that comes out ≤ 0 is replaced by
//! a floor (0.5 in the DCA paper).
//!
//! Sensitivity (replace-one): x_ij² ∈ [0, c_j²], so replacing one record moves coordinate j by at
//! most c_j² (attained by x_j = ±c_j against x_j = 0). Per-dimension vector (x_1², …, x_d², y²):
//! Δ₂ = sqrt(Σ_j c_j⁴ + c_y⁴), Δ₁ = Σ_j c_j² + c_y². Pooled vector (Σ_j x_j², y²), one σ for all x
//! dimensions as in the robust LR paper: Δ₂ = sqrt((Σ_j c_j²)² + c_y⁴), Δ₁ the same as before.

use dp_noise::accountant::RoundCost;

use crate::clip::clip;
use crate::error::{Error, Result, check_bounds, check_matrix};
use crate::holders::{ClientRule, Grouping, Holders};
use crate::release::{DcaTransport, InProcess, Noise, ReleaseContext, release_held};

/// Which standard deviations the round estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdMode {
    /// One σ per x dimension (DCA paper).
    PerDimension,
    /// One σ shared by all x dimensions (robust LR paper); d + 1 → 2 released numbers, less noise.
    PooledX,
}

/// The privacy budget of the round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StdBudget {
    /// Gaussian noise, ρ-zCDP (TA, DCA or input perturbation).
    Gaussian {
        /// zCDP ρ of this round.
        rho: f64,
    },
    /// Laplace noise, ε-DP (TA or input perturbation).
    Laplace {
        /// ε of this round.
        epsilon: f64,
    },
}

/// Released standard deviations.
#[derive(Clone, Debug, PartialEq)]
pub struct StdEstimate {
    /// σ̂ for every x dimension (equal entries in pooled mode).
    pub x: Vec<f64>,
    /// σ̂ of y.
    pub y: f64,
    /// How many of the d + 1 (or 2) estimates were non-positive and replaced by the floor.
    pub floored: usize,
    /// Cost of the round.
    pub cost: RoundCost,
}

/// Sensitivities (Δ₂, Δ₁) of the squared-value vector under replace-one.
pub fn std_sensitivity(assumed_x: &[f64], assumed_y: f64, mode: StdMode) -> Result<(f64, f64)> {
    check_bounds(assumed_x, "assumed x bounds")?;
    check_bounds(&[assumed_y], "assumed y bound")?;
    let cy4 = assumed_y.powi(4);
    let sum_c2: f64 = assumed_x.iter().map(|c| c * c).sum();
    let l1 = sum_c2 + assumed_y * assumed_y;
    let l2 = match mode {
        StdMode::PerDimension => (assumed_x.iter().map(|c| c.powi(4)).sum::<f64>() + cy4).sqrt(),
        StdMode::PooledX => (sum_c2 * sum_c2 + cy4).sqrt(),
    };
    Ok((l2, l1))
}

/// Settings of the round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StdRound<'a> {
    /// Public assumed bounds c_j of the x dimensions.
    pub assumed_x: &'a [f64],
    /// Public assumed bound of y.
    pub assumed_y: f64,
    /// Per-dimension or pooled.
    pub mode: StdMode,
    /// Replacement for a non-positive estimate (0.5 in the DCA paper).
    pub floor: f64,
    /// Budget of this round.
    pub budget: StdBudget,
}

/// Runs the round on raw (unclipped) data: x is row-major `n × d`.
pub fn dp_marginal_std(
    x: &[f64],
    y: &[f64],
    n: usize,
    settings: &StdRound<'_>,
    ctx: ReleaseContext<'_>,
) -> Result<StdEstimate> {
    dp_marginal_std_via(x, y, n, settings, ctx, &mut InProcess)
}

/// [`dp_marginal_std`] with a DCA round run by `transport`.
pub fn dp_marginal_std_via(
    x: &[f64],
    y: &[f64],
    n: usize,
    settings: &StdRound<'_>,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<StdEstimate> {
    let d = settings.assumed_x.len();
    if d == 0 || n == 0 {
        return Err(Error::Empty {
            what: if n == 0 {
                "marginal std rows"
            } else {
                "marginal std columns"
            },
        });
    }
    check_matrix(x, n, d, "x")?;
    check_matrix(y, n, 1, "y")?;
    let holders = Holders::Here {
        x,
        y,
        d,
        grouping: Grouping::OneRowEach,
    };
    dp_marginal_std_held(&holders, "", settings, ctx, transport)
}

/// What each record contributes to the round: its clipped squares (per dimension, or summed
/// over x in pooled mode) and its clipped y².
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SquaresRule<'a> {
    /// Public assumed bounds c_j of the x dimensions.
    pub assumed_x: &'a [f64],
    /// Public assumed bound of y.
    pub assumed_y: f64,
    /// Per-dimension or pooled.
    pub mode: StdMode,
}

impl ClientRule for SquaresRule<'_> {
    fn dim(&self) -> usize {
        match self.mode {
            StdMode::PerDimension => self.assumed_x.len() + 1,
            StdMode::PooledX => 2,
        }
    }

    fn record_bound(&self) -> f64 {
        let c2 = self.assumed_x.iter().map(|c| c * c);
        match self.mode {
            StdMode::PerDimension => c2.fold(0.0f64, f64::max),
            StdMode::PooledX => c2.sum(),
        }
        .max(self.assumed_y.powi(2))
    }

    fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> Result<()> {
        let d = self.assumed_x.len();
        if x_row.len() != d || out.len() != self.dim() {
            return Err(Error::LengthMismatch {
                what: "record (assumed bounds, output)",
                expected: d,
                got: x_row.len(),
            });
        }
        let sq = x_row
            .iter()
            .zip(self.assumed_x)
            .map(|(v, c)| clip(*v, *c).powi(2));
        match self.mode {
            StdMode::PerDimension => out[..d].iter_mut().zip(sq).for_each(|(o, s)| *o = s),
            StdMode::PooledX => out[0] = sq.sum(),
        }
        out[out.len() - 1] = clip(y, self.assumed_y).powi(2);
        Ok(())
    }
}

/// The round over any [`Holders`]: rows here, or rows kept by remote parties that compute
/// their [`SquaresRule`] vectors from `published_rule`. σ̂ divides by the holders' record count.
pub fn dp_marginal_std_held(
    holders: &Holders<'_>,
    published_rule: &str,
    settings: &StdRound<'_>,
    ctx: ReleaseContext<'_>,
    transport: &mut dyn DcaTransport,
) -> Result<StdEstimate> {
    let d = settings.assumed_x.len();
    let n = holders.records();
    if d == 0 || n == 0 {
        return Err(Error::Empty {
            what: if n == 0 {
                "marginal std rows"
            } else {
                "marginal std columns"
            },
        });
    }
    check_bounds(&[settings.floor], "std floor")?;
    let (l2, l1) = std_sensitivity(settings.assumed_x, settings.assumed_y, settings.mode)?;
    let rule = SquaresRule {
        assumed_x: settings.assumed_x,
        assumed_y: settings.assumed_y,
        mode: settings.mode,
    };
    let dim = rule.dim();
    let noise = match settings.budget {
        StdBudget::Gaussian { rho } => Noise::Gaussian {
            l2_sensitivity: l2,
            rho,
        },
        StdBudget::Laplace { epsilon } => {
            if !(epsilon.is_finite() && epsilon > 0.0) {
                return Err(Error::NotPositive {
                    what: "marginal std ε",
                    index: 0,
                    value: epsilon,
                });
            }
            // Equal scales b = Δ₁/ε: Σ_k Δ_k/b = Δ₁/b = ε.
            Noise::Laplace {
                scales: vec![l1 / epsilon; dim],
                epsilon,
            }
        }
    };
    let released = release_held(holders, &rule, published_rule, &noise, ctx, transport)?;
    // The sum holds the rows of the clients that took part (all but ≤ T dropouts).
    let n = holders.records_in(released.included.as_ref());
    let mut floored = 0;
    let mut std_of = |sum_sq: f64, count: f64| {
        let var = sum_sq / count;
        if var > 0.0 {
            var.sqrt()
        } else {
            floored += 1;
            settings.floor
        }
    };
    let (xs, ys) = match settings.mode {
        StdMode::PerDimension => {
            let xs = released.sum[..d]
                .iter()
                .map(|s| std_of(*s, n as f64))
                .collect();
            (xs, std_of(released.sum[d], n as f64))
        }
        StdMode::PooledX => {
            let sx = std_of(released.sum[0], (n * d) as f64);
            (vec![sx; d], std_of(released.sum[1], n as f64))
        }
    };
    Ok(StdEstimate {
        x: xs,
        y: ys,
        floored,
        cost: released.cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::{Aggregation, DcaSettings};
    use dp_noise::accountant::Accountant;
    use dp_noise::rng::RngSource;

    fn run(
        x: &[f64],
        y: &[f64],
        n: usize,
        s: &StdRound<'_>,
        aggregation: Aggregation,
        seed: u64,
    ) -> StdEstimate {
        let mut accountant = Accountant::new(dp_noise::PrivacyLoss {
            epsilon: 1e9,
            delta: 1e-5,
        })
        .unwrap();
        let ctx = ReleaseContext {
            aggregation,
            round: 7,
            rng: RngSource::InsecureFixedSeed(seed),
            accountant: &mut accountant,
        };
        dp_marginal_std(x, y, n, s, ctx).unwrap()
    }

    /// Brute force over records on a grid containing the corners and 0: the largest change of
    /// the squared-value vector equals the stated sensitivities.
    #[test]
    fn sensitivity_equals_brute_force_maximum() {
        let (cx, cy) = ([1.5, 0.5], 2.0);
        let grid = |c: f64| [-c, -c / 2.0, 0.0, c / 3.0, c];
        let mut records = Vec::new();
        for a in grid(cx[0]) {
            for b in grid(cx[1]) {
                for t in grid(cy) {
                    records.push([a, b, t]);
                }
            }
        }
        for mode in [StdMode::PerDimension, StdMode::PooledX] {
            let f = |r: &[f64; 3]| -> Vec<f64> {
                match mode {
                    StdMode::PerDimension => vec![r[0] * r[0], r[1] * r[1], r[2] * r[2]],
                    StdMode::PooledX => vec![r[0] * r[0] + r[1] * r[1], r[2] * r[2]],
                }
            };
            let (mut m2, mut m1) = (0.0f64, 0.0f64);
            for p in &records {
                for q in &records {
                    let (fp, fq) = (f(p), f(q));
                    let diff: Vec<f64> = fp.iter().zip(&fq).map(|(a, b)| a - b).collect();
                    m2 = m2.max(diff.iter().map(|v| v * v).sum::<f64>().sqrt());
                    m1 = m1.max(diff.iter().map(|v| v.abs()).sum());
                }
            }
            let (l2, l1) = std_sensitivity(&cx, cy, mode).unwrap();
            assert!(
                (l2 - m2).abs() < 1e-12 && (l1 - m1).abs() < 1e-12,
                "{mode:?}: {l2} {m2} {l1} {m1}"
            );
        }
        // Hand values, per-dimension: sqrt(1.5⁴ + 0.5⁴ + 2⁴) = sqrt(5.0625 + 0.0625 + 16).
        let (l2, l1) = std_sensitivity(&cx, cy, StdMode::PerDimension).unwrap();
        assert!((l2 - 21.125f64.sqrt()).abs() < 1e-12 && (l1 - 6.5).abs() < 1e-12);
    }

    #[test]
    fn recovers_the_std_with_little_noise_and_floors_negative_estimates() {
        let n = 400;
        // x column 0 alternates ±1 (σ = 1), column 1 alternates ±3 but is clipped to 2; y = ±0.5.
        let x: Vec<f64> = (0..n)
            .flat_map(|i| {
                let s = if i % 2 == 0 { 1.0 } else { -1.0 };
                [s, 3.0 * s]
            })
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| if i % 2 == 0 { 0.5 } else { -0.5 })
            .collect();
        for aggregation in [
            Aggregation::Trusted,
            Aggregation::Distributed(DcaSettings {
                n_nodes: 2,
                ..DcaSettings::default()
            }),
        ] {
            let settings = StdRound {
                assumed_x: &[4.0, 2.0],
                assumed_y: 1.0,
                mode: StdMode::PerDimension,
                floor: 0.5,
                budget: StdBudget::Gaussian { rho: 100.0 },
            };
            let est = run(&x, &y, n, &settings, aggregation, 5);
            // Δ₂ = sqrt(256 + 16 + 1) ≈ 16.5, σ = 16.5/sqrt(200) ≈ 1.17 on sums 400, 1600, 100:
            // relative error of the variances < 1.2% (≈ 1 sd); 5% tolerance on the std.
            assert!(
                (est.x[0] - 1.0).abs() < 0.05
                    && (est.x[1] - 2.0).abs() < 0.05
                    && (est.y - 0.5).abs() < 0.05,
                "{est:?}"
            );
            assert_eq!(est.floored, 0);
        }
        // With a tiny budget the noise (σ ≈ 16.5/sqrt(2e-8) ≈ 1.2e5) swamps the sums: some
        // estimates come out ≤ 0 and must be the floor.
        let settings = StdRound {
            assumed_x: &[4.0, 2.0],
            assumed_y: 1.0,
            mode: StdMode::PerDimension,
            floor: 0.25,
            budget: StdBudget::Gaussian { rho: 1e-8 },
        };
        let mut seen_floor = false;
        for seed in 0..10 {
            let est = run(&x, &y, n, &settings, Aggregation::Trusted, seed);
            let all: Vec<f64> = est.x.iter().copied().chain([est.y]).collect();
            assert_eq!(all.iter().filter(|v| **v == 0.25).count(), est.floored);
            seen_floor |= est.floored > 0;
        }
        // P(no negative among 30 symmetric draws around sums ≪ σ) ≈ 2^-30.
        assert!(seen_floor);
    }
}
