//! Per-step RDP of the subsampled Gaussian: Mironov–Talwar–Zhang (Poisson, continuous), Zhu–Wang
//! (Poisson, any base mechanism), Wang–Balle–Kasiviswanathan (fixed size without replacement).

use crate::discrete::distributed_zcdp_rho;
use crate::error::positive_finite;
use crate::special::ln_normal_cdf;
use crate::{Error, Result};

/// How the records (clients) of one step are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Each record independently with probability `rate` (the batch size is random). Guarantee
    /// for **add/remove-one** neighbours. `rate = 1` is no subsampling (every record every step).
    Poisson {
        /// q ∈ [0, 1].
        rate: f64,
    },
    /// A uniformly random batch of exactly m of the n records, γ = m/n. Guarantee for
    /// **replace-one** neighbours (n and m are public).
    WithoutReplacement {
        /// γ = m/n ∈ [0, 1].
        fraction: f64,
    },
}

impl Sampling {
    fn probability(&self) -> f64 {
        match *self {
            Sampling::Poisson { rate } => rate,
            Sampling::WithoutReplacement { fraction } => fraction,
        }
    }

    fn replace_one(&self) -> bool {
        matches!(self, Sampling::WithoutReplacement { .. })
    }
}

/// The noise of one step, for a sum of records each clipped to ℓ2 norm C.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BaseNoise {
    /// A continuous Gaussian N(0, (zC)²) per coordinate; z = `noise_multiplier`.
    Continuous {
        /// z = σ/C > 0.
        noise_multiplier: f64,
    },
    /// The distributed discrete Gaussian of a DCA round.
    DistributedDiscrete(DiscreteSum),
}

/// A DCA round's noise in integer grid units: `honest_clients` clients each add
/// N_ℤ(0, `sigma_client_units`²) to every coordinate of a `dim`-vector; every record's vector
/// has ℓ2 norm ≤ C before rounding, `clip_units` = C·2^f.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiscreteSum {
    /// C·2^f: the clipping bound in grid units.
    pub clip_units: f64,
    /// σ_client·2^f (≥ ½, the KLS theorem's assumption).
    pub sigma_client_units: f64,
    /// n: the clients whose noise is guaranteed to be in the release (N − T − 1 in DCA: at most
    /// T drop out or collude, and the observer's own noise does not count).
    pub honest_clients: usize,
    /// d, the vector length.
    pub dim: usize,
}

impl DiscreteSum {
    /// ℓ2 sensitivity in grid units after rounding each coordinate (±½ each): C·2^f + √d/2 for
    /// add/remove, 2C·2^f + √d for replace-one.
    pub fn sensitivity_units(&self, replace_one: bool) -> f64 {
        let rounding = (self.dim as f64).sqrt() / 2.0;
        if replace_one {
            2.0 * (self.clip_units + rounding)
        } else {
            self.clip_units + rounding
        }
    }

    /// The KLS 2021 Thm 1 zCDP ρ of the unsampled sum (so ε(α) = αρ).
    pub fn rho(&self, replace_one: bool) -> Result<f64> {
        positive_finite("clip_units", self.clip_units)?;
        distributed_zcdp_rho(
            self.sensitivity_units(replace_one),
            self.sigma_client_units,
            self.honest_clients,
            self.dim,
        )
    }

    /// The noise multiplier of the same total variance as a continuous Gaussian, ignoring
    /// rounding and KLS: σ_client·√n / (C·2^f).
    pub fn nominal_noise_multiplier(&self) -> f64 {
        self.sigma_client_units * (self.honest_clients as f64).sqrt() / self.clip_units
    }

    /// (ρ of a continuous Gaussian of the nominal multiplier, ρ charged by KLS): the explicit
    /// price of rounding and of summing discrete Gaussians, add/remove sensitivity.
    pub fn adjustment(&self) -> Result<(f64, f64)> {
        let z = self.nominal_noise_multiplier();
        Ok((0.5 / (z * z), self.rho(false)?))
    }
}

/// One step: sampling then a Gaussian sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubsampledGaussian {
    /// How the step's records are chosen.
    pub sampling: Sampling,
    /// The noise added to their clipped sum.
    pub noise: BaseNoise,
}

impl SubsampledGaussian {
    /// Poisson sampling at `rate` with a continuous Gaussian of `noise_multiplier`.
    pub fn poisson(rate: f64, noise_multiplier: f64) -> Self {
        SubsampledGaussian {
            sampling: Sampling::Poisson { rate },
            noise: BaseNoise::Continuous { noise_multiplier },
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        let p = self.sampling.probability();
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::InvalidParameter {
                name: "sampling probability",
                value: p,
                requirement: "in [0, 1]",
            });
        }
        match self.noise {
            BaseNoise::Continuous { noise_multiplier } => {
                positive_finite("noise_multiplier", noise_multiplier)?;
            }
            BaseNoise::DistributedDiscrete(sum) => {
                sum.rho(false)?;
            }
        }
        Ok(())
    }

    /// The RDP ε(α) of one step at order α > 1.
    ///
    /// # Errors
    /// Invalid parameters, or a numerical failure of the fractional-order series.
    pub fn rdp(&self, order: f64) -> Result<f64> {
        self.validate()?;
        super::conversion::check_orders(&[order])?;
        let p = self.sampling.probability();
        if p == 0.0 {
            return Ok(0.0);
        }
        let replace_one = self.sampling.replace_one();
        // The unsampled mechanism's RDP: ε(j) = j·ρ with ρ = Δ²/(2σ²) (ρ from KLS for DCA).
        let rho = match self.noise {
            BaseNoise::Continuous {
                noise_multiplier: z,
            } => {
                let sens = if replace_one { 2.0 } else { 1.0 };
                sens * sens / (2.0 * z * z)
            }
            BaseNoise::DistributedDiscrete(sum) => sum.rho(replace_one)?,
        };
        let base = |alpha: f64| alpha * rho;
        if p == 1.0 {
            return Ok(base(order));
        }
        let bound = match (self.sampling, self.noise) {
            (Sampling::Poisson { rate }, BaseNoise::Continuous { noise_multiplier }) => {
                if order.fract() == 0.0 {
                    ln_a_integer(rate, noise_multiplier, order as u64) / (order - 1.0)
                } else {
                    ln_a_fractional(rate, noise_multiplier, order)? / (order - 1.0)
                }
            }
            (Sampling::Poisson { rate }, BaseNoise::DistributedDiscrete(_)) => {
                let alpha = order.ceil();
                zhu_wang_ln(rate, alpha as u64, rho) / (alpha - 1.0)
            }
            (Sampling::WithoutReplacement { fraction }, _) => {
                let alpha = order.ceil();
                wbk_ln(fraction, alpha as u64, rho) / (alpha - 1.0)
            }
        };
        // Subsampling never costs more than the unsampled mechanism (joint quasi-convexity of
        // the Rényi divergence, van Erven & Harremoës 2014, Thm 13).
        Ok(bound.min(base(order)).max(0.0))
    }

    /// ε(α) for every order of `orders`.
    pub fn rdp_orders(&self, orders: &[f64]) -> Result<Vec<f64>> {
        orders.iter().map(|&a| self.rdp(a)).collect()
    }
}

/// ln(e^a + e^b).
fn ln_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// ln(e^a − e^b), a > b.
fn ln_sub(a: f64, b: f64) -> Result<f64> {
    if b == f64::NEG_INFINITY {
        return Ok(a);
    }
    if a <= b {
        return Err(Error::CalibrationFailed {
            reason: "fractional-order RDP series lost precision (negative partial sum)",
        });
    }
    Ok(a + (-(b - a).exp()).ln_1p())
}

/// ln Σ_k terms(k) for k = 0..=alpha, each given as a log.
fn ln_sum(alpha: u64, mut term: impl FnMut(u64, f64) -> f64) -> f64 {
    let mut acc = f64::NEG_INFINITY;
    let mut ln_binom = 0.0; // ln C(α, 0)
    for k in 0..=alpha {
        if k > 0 {
            ln_binom += ((alpha - k + 1) as f64).ln() - (k as f64).ln();
        }
        acc = ln_add(acc, term(k, ln_binom));
    }
    acc
}

/// MTZ 2019, integer α: ln A_α = ln Σ_k C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2z²)).
fn ln_a_integer(q: f64, z: f64, alpha: u64) -> f64 {
    let (ln_q, ln_1q) = (q.ln(), (-q).ln_1p());
    ln_sum(alpha, |k, ln_binom| {
        let kf = k as f64;
        ln_binom + kf * ln_q + (alpha as f64 - kf) * ln_1q + (kf * kf - kf) / (2.0 * z * z)
    })
}

/// MTZ 2019 Sec. 3.3, fractional α: A_α = A₁ + A₂ with z₀ = z² ln(1/q − 1) + ½ and
/// A₁ = Σ_i C(α,i) (1−q)^{α−i} q^i exp((i²−i)/(2z²)) Φ((z₀−i)/z),
/// A₂ = Σ_i C(α,i) (1−q)^i q^{α−i} exp(((α−i)²−(α−i))/(2z²)) Φ((α−i−z₀)/z),
/// with generalised binomial coefficients (their sign alternates once i > α).
fn ln_a_fractional(q: f64, z: f64, alpha: f64) -> Result<f64> {
    const MAX_TERMS: usize = 1 << 20;
    let (ln_q, ln_1q) = (q.ln(), (-q).ln_1p());
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let (mut pos0, mut neg0) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let (mut pos1, mut neg1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut ln_binom = 0.0;
    let mut positive = true;
    for i in 0..MAX_TERMS {
        let fi = i as f64;
        if i > 0 {
            let factor = (alpha - fi + 1.0) / fi;
            ln_binom += factor.abs().ln();
            if factor < 0.0 {
                positive = !positive;
            }
        }
        let j = alpha - fi;
        let s0 = ln_binom
            + fi * ln_q
            + j * ln_1q
            + (fi * fi - fi) / (2.0 * z * z)
            + ln_normal_cdf((z0 - fi) / z);
        let s1 = ln_binom
            + j * ln_q
            + fi * ln_1q
            + (j * j - j) / (2.0 * z * z)
            + ln_normal_cdf((j - z0) / z);
        if positive {
            pos0 = ln_add(pos0, s0);
            pos1 = ln_add(pos1, s1);
        } else {
            neg0 = ln_add(neg0, s0);
            neg1 = ln_add(neg1, s1);
        }
        if fi > alpha && s0.max(s1) < -30.0 {
            let a0 = ln_sub(pos0, neg0)?;
            let a1 = ln_sub(pos1, neg1)?;
            return Ok(ln_add(a0, a1));
        }
    }
    Err(Error::CalibrationFailed {
        reason: "fractional-order RDP series did not converge",
    })
}

/// Zhu & Wang 2019, Thm 6 (Poisson, any base mechanism with ε(l) = lρ), integer α ≥ 2:
/// ln[(1−q)^{α−1}(αq − q + 1) + C(α,2) q²(1−q)^{α−2} e^{ε(2)}
///    + 3 Σ_{l=3}^{α} C(α,l) (1−q)^{α−l} q^l e^{(l−1)ε(l)}].
fn zhu_wang_ln(q: f64, alpha: u64, rho: f64) -> f64 {
    let (ln_q, ln_1q) = (q.ln(), (-q).ln_1p());
    let af = alpha as f64;
    let head = (af - 1.0) * ln_1q + (af * q - q + 1.0).ln();
    let rest = ln_sum(alpha, |l, ln_binom| {
        let lf = l as f64;
        let t = ln_binom + lf * ln_q + (af - lf) * ln_1q + (lf - 1.0) * lf * rho;
        match l {
            0 | 1 => f64::NEG_INFINITY,
            2 => t,
            _ => t + 3f64.ln(),
        }
    });
    ln_add(head, rest)
}

/// Wang, Balle & Kasiviswanathan 2019, Thm 9 (without replacement, replace-one, a base
/// mechanism with ε(j) = jρ and ε(∞) = ∞), integer α ≥ 2:
/// ln[1 + γ² C(α,2) min(4(e^{ε(2)} − 1), 2e^{ε(2)}) + 2 Σ_{j=3}^{α} γ^j C(α,j) e^{(j−1)ε(j)}].
fn wbk_ln(gamma: f64, alpha: u64, rho: f64) -> f64 {
    let ln_g = gamma.ln();
    let eps2 = 2.0 * rho;
    // ln min(4(e^{ε2} − 1), 2e^{ε2}).
    let ln_min2 = (4f64.ln() + eps2.exp_m1().ln()).min(2f64.ln() + eps2);
    ln_sum(alpha, |j, ln_binom| {
        let jf = j as f64;
        match j {
            0 => 0.0,
            1 => f64::NEG_INFINITY,
            2 => 2.0 * ln_g + ln_binom + ln_min2,
            _ => 2f64.ln() + jf * ln_g + ln_binom + (jf - 1.0) * jf * rho,
        }
    })
}
