//! The ranges round: before the statistics round, a small share of the budget releases every
//! column's mean and second moment on its public unit scale, and each public range is narrowed to
//! the data's bulk, [mean − k·sd, mean + k·sd] ∩ the public range.
//!
//! Why: a codebook's range is usually far wider than the data (carData `SLID`: wages $0–100 an
//! hour against a mean of 15 and an sd of 8), and the statistics round's noise is fixed on the
//! range's unit scale, so the data's spread — the signal — sits in a small corner of it. Narrowing
//! spreads the data over the unit scale; values beyond k sd are clipped, as the public range
//! clips today. A two-valued column (an indicator) stays two-valued whatever its narrowed
//! range, so narrowing it changes nothing but the units of its slope, which the fit reports back
//! in the data's own units; the columns of a declared indicator group ([`crate::design`]) keep
//! their [0, 1], so that their slopes read as the levels' effects. The new ranges are post-processing of a DP release: public.
//!
//! Only the columns it narrows take part — not those of a declared indicator group, which keep
//! [0, 1] — so a design of many indicators spends the round on the few continuous columns and y.
//!
//! Sensitivity (replace-one): every narrowed column contributes (u, u²) with u ∈ [−1, 1], so one
//! record moves u by at most 2 and u² by at most 1: Δ₂² = 5 per column, Δ₂ = √(5(m + 1)) for
//! m narrowed columns and y.

use projection::holders::ClientRule;
use serde::{Deserialize, Serialize};

use crate::design::{Design, PublicRange};
use crate::error::{Error, Result};

/// How much of the fit's budget the ranges round spends, and how many sds it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Narrowing {
    /// Share of the fit's zCDP budget ρ for the ranges round, in (0, 1).
    pub share: f64,
    /// k: each range narrowed to the DP mean ± k DP sds; `None` (the default): k set by the
    /// statistics round's noise ([`adaptive_spreads`]).
    pub spreads: Option<f64>,
}

impl Default for Narrowing {
    /// Share 0.1 and k by the noise: measured on the real-data suite
    /// (docs/src/results/real-data.md).
    fn default() -> Self {
        Narrowing {
            share: 0.1,
            spreads: None,
        }
    }
}

/// k from the statistics round's noise per record: r = σ_c / n, the noise sd of one released
/// cross product on the unit scale over the records. Clipping at k sds trades a bias in the
/// tails for signal spread over the unit scale; the noisier the release, the more the spread is
/// worth: k = 3 (about 0.3% of Gaussian data clipped) while r ≤ 0.003, k = 1.5 from r = 0.02 on,
/// linear in log r between. The end points were measured on the real-data suite (its sets span
/// r = 0.001–0.05 at ε ∈ {0.5, 1, 2}): k = 3 was best where r < 0.003 (the whole `diamonds`) and
/// k = 1.5 where r > 0.02 (ISLR `Wage` at ε ≤ 1).
pub fn adaptive_spreads(relative_noise: f64) -> f64 {
    const QUIET: f64 = 0.003;
    const NOISY: f64 = 0.02;
    let t = ((relative_noise.ln() - QUIET.ln()) / (NOISY.ln() - QUIET.ln())).clamp(0.0, 1.0);
    if t.is_nan() { 3.0 } else { 3.0 - 1.5 * t }
}

impl Narrowing {
    /// Checks the share and k.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if !(self.share > 0.0 && self.share < 1.0) {
            return Err(Error::OutOfRange {
                name: "ranges round's share of the budget",
                value: self.share,
                requirement: "in (0, 1)",
            });
        }
        if let Some(k) = self.spreads
            && !(k.is_finite() && k > 0.0)
        {
            return Err(Error::OutOfRange {
                name: "ranges round's sds kept (k)",
                value: k,
                requirement: "finite and positive",
            });
        }
        Ok(())
    }
}

/// Δ₂ of the ranges round's sum (module docs).
pub fn moments_l2_sensitivity(design: &Design) -> f64 {
    (5.0 * (narrowed_columns(design).len() + 1) as f64).sqrt()
}

/// The columns the ranges round narrows: those in no indicator group.
pub fn narrowed_columns(design: &Design) -> Vec<usize> {
    let indicators = design.indicators();
    (0..design.columns()).filter(|&j| !indicators[j]).collect()
}

/// The ranges round's rule: `[u_j, u_j², …, ũ, ũ²]` of a record over the narrowed columns j
/// ([`narrowed_columns`]) and y, each value on its public range's unit scale.
#[derive(Clone, Copy, Debug)]
pub struct MomentsRule<'a> {
    /// The public design.
    pub design: &'a Design,
}

impl ClientRule for MomentsRule<'_> {
    fn dim(&self) -> usize {
        2 * (narrowed_columns(self.design).len() + 1)
    }

    fn record_bound(&self) -> f64 {
        1.0
    }

    fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> projection::Result<()> {
        if x_row.len() != self.design.columns() {
            return Err(projection::Error::LengthMismatch {
                what: "record (design columns)",
                expected: self.design.columns(),
                got: x_row.len(),
            });
        }
        let columns = narrowed_columns(self.design);
        let values = columns.iter().map(|&j| &x_row[j]).chain([&y]);
        let ranges = columns
            .iter()
            .map(|&j| &self.design.x[j])
            .chain([&self.design.y]);
        for ((v, r), pair) in values.zip(ranges).zip(out.chunks_exact_mut(2)) {
            let u = r.to_unit(*v);
            pair[0] = u;
            pair[1] = u * u;
        }
        Ok(())
    }
}

/// `design` with every range narrowed by the released moments `sum` (the ranges round's sum over
/// `n` records, each entry with Gaussian noise of sd `noise_sd`). The variance v = Σu²/n − m² is
/// a difference of two noisy numbers, and data far from their range's centre make it small
/// against its noise (sd ≈ (noise_sd/n)·√(1 + 4m²)); the sd used is √max(v, that noise sd), the
/// spread the release can resolve. A column whose narrowed range would be empty, or whose sd is
/// still not positive (no noise and no spread), keeps its public range.
///
/// # Errors
/// `sum` of another length.
pub fn narrowed(
    design: &Design,
    sum: &[f64],
    n: usize,
    spreads: f64,
    noise_sd: f64,
) -> Result<Design> {
    let expected = 2 * (narrowed_columns(design).len() + 1);
    if sum.len() != expected {
        return Err(Error::LengthMismatch {
            what: "released moments (two per narrowed column and y)",
            expected,
            got: sum.len(),
        });
    }
    let n = n.max(1) as f64;
    let narrow = |r: &PublicRange, pair: &[f64]| -> PublicRange {
        let mean = pair[0] / n;
        let resolvable = noise_sd / n * (1.0 + 4.0 * mean * mean).sqrt();
        let variance = (pair[1] / n - mean * mean).max(resolvable);
        if !(variance > 0.0 && mean.is_finite()) {
            return *r;
        }
        let lo = (mean - spreads * variance.sqrt()).max(-1.0);
        let hi = (mean + spreads * variance.sqrt()).min(1.0);
        PublicRange::new(r.from_unit(lo), r.from_unit(hi)).unwrap_or(*r)
    };
    let mut pairs = sum.chunks_exact(2);
    // An indicator group's columns keep [0, 1], so that their slopes stay the levels' effects;
    // the round released moments of the others only.
    let x = design
        .x
        .iter()
        .zip(design.indicators())
        .map(|(r, indicator)| {
            if indicator {
                *r
            } else {
                narrow(r, pairs.next().expect("length checked above"))
            }
        })
        .collect();
    let y = narrow(&design.y, pairs.next().expect("length checked above"));
    Ok(Design {
        x,
        y,
        ..design.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design() -> Design {
        Design::new(
            vec![
                PublicRange::new(0.0, 100.0).unwrap(),
                PublicRange::new(0.0, 1.0).unwrap(),
            ],
            PublicRange::new(-10.0, 10.0).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn a_record_contributes_each_unit_value_and_its_square() {
        let d = design();
        let rule = MomentsRule { design: &d };
        let mut out = vec![0.0; rule.dim()];
        rule.record_into(&[75.0, 1.0], -20.0, &mut out).unwrap();
        // 75 on [0, 100] is 0.5; 1 on [0, 1] is 1; −20 clipped to −10 is −1.
        assert_eq!(out, vec![0.5, 0.25, 1.0, 1.0, -1.0, 1.0]);
        assert!(rule.record_into(&[1.0], 0.0, &mut out).is_err());
        // Δ₂² = 5 per column (u moves by 2, u² by 1), three columns.
        assert_eq!(moments_l2_sensitivity(&d), 15f64.sqrt());
        // Column 1 as an indicator group: the round leaves it out (two columns, Δ₂² = 10),
        // and narrowing keeps its [0, 1] while it narrows column 0 from the shorter sum.
        let grouped = Design {
            indicator_groups: vec![vec![1]],
            ..d.clone()
        };
        let rule = MomentsRule { design: &grouped };
        let mut out = vec![0.0; rule.dim()];
        rule.record_into(&[75.0, 1.0], -20.0, &mut out).unwrap();
        assert_eq!(out, vec![0.5, 0.25, -1.0, 1.0]);
        assert_eq!(moments_l2_sensitivity(&grouped), 10f64.sqrt());
        // 100 records: column 0 with mean 0.5 and variance 0.01 → [0.2, 0.8] at k = 3, i.e.
        // [60, 90]; y with mean 0 and variance 0.04 → [−0.6, 0.6], i.e. [−6, 6].
        let sum = [50.0, 100.0 * (0.01 + 0.25), 0.0, 100.0 * 0.04];
        let n = narrowed(&grouped, &sum, 100, 3.0, 0.0).unwrap();
        assert_eq!(n.x[1], grouped.x[1]);
        assert!((n.x[0].lower - 60.0).abs() < 1e-9 && (n.x[0].upper - 90.0).abs() < 1e-9);
        assert!((n.y.lower + 6.0).abs() < 1e-9 && (n.y.upper - 6.0).abs() < 1e-9);
        assert!(narrowed(&grouped, &[0.0; 6], 100, 3.0, 0.0).is_err());
    }

    #[test]
    fn ranges_narrow_to_the_mean_plus_minus_k_sds_within_the_public_range() {
        let d = design();
        // Four records: x₁ = 10, 20, 30, 40 → u = −0.8, −0.6, −0.4, −0.2: mean −0.5, variance
        // 0.05. x₂ never varies (variance 0): kept. y: u = 0 always: kept.
        let u: [f64; 4] = [-0.8, -0.6, -0.4, -0.2];
        let sum = vec![
            u.iter().sum(),
            u.iter().map(|v| v * v).sum(),
            4.0,
            4.0,
            0.0,
            0.0,
        ];
        let k = 2.0;
        let narrowed = narrowed(&d, &sum, 4, k, 0.0).unwrap();
        let sd = 0.05f64.sqrt();
        let (lo, hi) = (
            50.0 * (1.0 + (-0.5 - k * sd)),
            50.0 * (1.0 + (-0.5 + k * sd)),
        );
        assert!(
            (narrowed.x[0].lower - lo).abs() < 1e-9,
            "{:?}",
            narrowed.x[0]
        );
        assert!(
            (narrowed.x[0].upper - hi).abs() < 1e-9,
            "{:?}",
            narrowed.x[0]
        );
        assert_eq!(narrowed.x[1], d.x[1]);
        assert_eq!(narrowed.y, d.y);
        // A wide k is cut at the public range.
        let wide = super::narrowed(&d, &sum, 4, 100.0, 0.0).unwrap();
        assert_eq!(wide.x[0], d.x[0]);
        assert!(super::narrowed(&d, &sum[1..], 4, k, 0.0).is_err());
        // With noise of sd 0.4 on each sum, x₂'s variance (0) is below what the release
        // resolves, (0.4/4)·√(1 + 4·1²) on its unit scale: its sd is the square root of that.
        let noisy = super::narrowed(&d, &sum, 4, k, 0.4).unwrap();
        let sd2 = (0.1 * 5f64.sqrt()).sqrt();
        assert!(
            (noisy.x[1].lower - 0.5 * (2.0 - k * sd2)).abs() < 1e-9,
            "{:?}",
            noisy.x[1]
        );
        assert_eq!(noisy.x[1].upper, 1.0);
    }

    #[test]
    fn bad_settings_are_refused() {
        for (share, spreads) in [
            (0.0, None),
            (1.0, Some(3.0)),
            (f64::NAN, None),
            (0.1, Some(0.0)),
        ] {
            assert!(Narrowing { share, spreads }.validate().is_err());
        }
        assert!(Narrowing::default().validate().is_ok());
    }

    #[test]
    fn k_falls_from_three_to_one_and_a_half_as_the_noise_grows() {
        assert_eq!(adaptive_spreads(0.001), 3.0);
        assert_eq!(adaptive_spreads(0.003), 3.0);
        assert_eq!(adaptive_spreads(0.02), 1.5);
        assert_eq!(adaptive_spreads(1.0), 1.5);
        // Halfway in log r: √(0.003 · 0.02).
        assert!((adaptive_spreads((0.003f64 * 0.02).sqrt()) - 2.25).abs() < 1e-12);
        assert_eq!(adaptive_spreads(f64::NAN), 3.0);
    }
}
