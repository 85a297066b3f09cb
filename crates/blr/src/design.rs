//! The design of a regression in the data's own units: every column's public range (from a
//! codebook or a physical limit, never from the data) and an intercept.
//!
//! A record is mapped onto the unit cube before its statistics are formed: each x_j and y by the
//! affine map that sends its public range [lower, upper] onto [−1, 1] (values outside are clipped
//! to the range, which is where the sensitivity comes from), and a constant 1 is put first when
//! the model has an intercept. Clipping to a public range is asymmetric around any centre the
//! data have; the centre itself is estimated, not assumed: the intercept's column makes the
//! released statistics carry n, Σx̃ and Σỹ, and solving the normal equations with an unpenalised
//! intercept is the same as centring x̃ and ỹ by those DP means ([`crate::regression`]).
//!
//! The map is invertible inside the ranges, so coefficients, intervals and predictions are
//! reported in the data's units ([`crate::regression`]).
//!
//! **Indicator groups.** The levels of a categorical variable (R's treatment contrasts: one
//! indicator per level but the reference) are declared as a group, and a record sets at most
//! one of them — a fact of the codebook, not of the data; a record that breaks it is refused.
//! The statistics' sensitivity is bounded through ‖z‖²
//! ([`crate::block_shares::block_sensitivities`]), and how a group is coded decides what it adds
//! there. Mapped onto ±1 like any column, g indicators add g and each level moves its column by
//! 2; kept 0/1, they add at most 1 and a level moves its column by 1. Per unit of the squared
//! spread the slopes are read from, ±1 costs g/4 and 0/1 costs 1: a group of
//! [`ONE_HOT_MIN_INDICATORS`] or more indicators is kept 0/1, a smaller one mapped onto ±1 (at
//! g = 4 the two cost the same, and ±1 keeps the larger spread). On the real-data suite that
//! is what ggplot2 `diamonds` (colour and clarity, 6 and 7 indicators) gains from and ISLR
//! `Wage` (groups of 4 and fewer) would lose from, docs/src/results/real-data.md.

use projection::holders::ClientRule;
use serde::{Deserialize, Serialize};

use crate::block_shares::{BlockNoise, BlockShares, apply, block_sensitivities};
use crate::error::{Error, Result};
use crate::silo::RecordSum;
use crate::stats::SuffStats;

/// The size from which an indicator group is kept 0/1 on the design (module docs).
pub const ONE_HOT_MIN_INDICATORS: usize = 5;

/// The public range of one column, in its own units.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicRange {
    /// Smallest value the column can take (codebook or physical limit).
    pub lower: f64,
    /// Largest value the column can take.
    pub upper: f64,
}

impl PublicRange {
    /// A range; `lower < upper`, both finite.
    ///
    /// # Errors
    /// [`Error::InvalidRange`] otherwise.
    pub fn new(lower: f64, upper: f64) -> Result<Self> {
        let range = PublicRange { lower, upper };
        range.check("column")?;
        Ok(range)
    }

    fn check(&self, what: &str) -> Result<()> {
        if self.lower.is_finite() && self.upper.is_finite() && self.lower < self.upper {
            Ok(())
        } else {
            Err(Error::InvalidRange {
                what: what.to_string(),
                lower: self.lower,
                upper: self.upper,
            })
        }
    }

    /// The midpoint of the range.
    pub fn centre(&self) -> f64 {
        0.5 * (self.lower + self.upper)
    }

    /// Half the width of the range.
    pub fn half_width(&self) -> f64 {
        0.5 * (self.upper - self.lower)
    }

    /// `v` clipped to the range and mapped onto [−1, 1].
    pub fn to_unit(&self, v: f64) -> f64 {
        ((v - self.centre()) / self.half_width()).clamp(-1.0, 1.0)
    }

    /// A value on [−1, 1] in the column's units.
    pub fn from_unit(&self, u: f64) -> f64 {
        self.centre() + self.half_width() * u
    }
}

/// The public ranges of the covariates and the target, and whether the model has an intercept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Design {
    /// One range per column of x, in the column order of the rows.
    pub x: Vec<PublicRange>,
    /// The target's range.
    pub y: PublicRange,
    /// A constant column first (the default; `lm`'s `y ~ x`). Without it the model is
    /// `y ~ x - 1` through the centres of the ranges.
    pub intercept: bool,
    /// How the statistics round's budget is shared among its blocks ([`BlockShares`]).
    #[serde(default)]
    pub shares: BlockShares,
    /// Groups of columns (positions in `x`) that are the indicators of one categorical
    /// variable's levels (module docs): each column's range is [0, 1], its values 0 or 1, and a
    /// record sets at most one column of a group. Groups of [`ONE_HOT_MIN_INDICATORS`] or more
    /// are kept 0/1 on the design.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indicator_groups: Vec<Vec<usize>>,
}

impl Design {
    /// A design with an intercept.
    ///
    /// # Errors
    /// [`Error::InvalidRange`] for a range that is empty, reversed or not finite;
    /// [`Error::Empty`] without columns.
    pub fn new(x: Vec<PublicRange>, y: PublicRange) -> Result<Self> {
        let design = Design {
            x,
            y,
            intercept: true,
            shares: BlockShares::default(),
            indicator_groups: Vec::new(),
        };
        design.validate()?;
        Ok(design)
    }

    /// Checks every range.
    ///
    /// # Errors
    /// As [`Design::new`].
    pub fn validate(&self) -> Result<()> {
        if self.x.is_empty() {
            return Err(Error::Empty {
                what: "covariate ranges",
            });
        }
        for (j, r) in self.x.iter().enumerate() {
            r.check(&format!("x column {j}"))?;
        }
        self.shares.validate()?;
        self.check_groups()?;
        self.y.check("y")
    }

    fn check_groups(&self) -> Result<()> {
        let mut seen = vec![false; self.columns()];
        for (g, group) in self.indicator_groups.iter().enumerate() {
            let refuse = |reason: String| Err(Error::IndicatorGroup { group: g, reason });
            if group.is_empty() {
                return refuse("has no columns".into());
            }
            for &j in group {
                if j >= self.columns() {
                    return refuse(format!(
                        "column {j} is not among the {} columns",
                        self.columns()
                    ));
                }
                if std::mem::replace(&mut seen[j], true) {
                    return refuse(format!("column {j} is in more than one group"));
                }
                let r = self.x[j];
                if r.lower != 0.0 || r.upper != 1.0 {
                    return refuse(format!(
                        "column {j}'s public range is [{}, {}]; an indicator's is [0, 1]",
                        r.lower, r.upper
                    ));
                }
            }
        }
        Ok(())
    }

    /// The indicator groups kept 0/1 on the design: those of [`ONE_HOT_MIN_INDICATORS`] or
    /// more columns (module docs).
    pub fn one_hot_groups(&self) -> impl Iterator<Item = &Vec<usize>> {
        self.indicator_groups
            .iter()
            .filter(|g| g.len() >= ONE_HOT_MIN_INDICATORS)
    }

    /// Which columns are kept 0/1 on the design ([`Design::one_hot_groups`]).
    pub fn one_hot_columns(&self) -> Vec<bool> {
        flags(self.columns(), self.one_hot_groups())
    }

    /// Which columns are in an indicator group (however coded).
    pub fn indicators(&self) -> Vec<bool> {
        flags(self.columns(), self.indicator_groups.iter())
    }

    /// Column `j`'s map onto the design, u = (v − offset)/scale: the centre and half-width of
    /// its range, or (0, 1) for a column kept 0/1.
    pub fn column_map(&self, j: usize) -> (f64, f64) {
        if self.one_hot_groups().flatten().any(|&k| k == j) {
            (0.0, 1.0)
        } else {
            (self.x[j].centre(), self.x[j].half_width())
        }
    }

    /// Columns of x.
    pub fn columns(&self) -> usize {
        self.x.len()
    }

    /// Columns of the mapped design: x's, plus one for the intercept.
    pub fn width(&self) -> usize {
        self.x.len() + usize::from(self.intercept)
    }

    /// One raw row of x mapped onto the design (the constant first when there is one); an
    /// indicator keeps its value clipped to [0, 1] ([`Design::check_rows`] refuses others).
    pub fn row_into(&self, raw: &[f64], out: &mut [f64]) {
        self.map_row(&self.one_hot_columns(), raw, out);
    }

    fn map_row(&self, one_hot: &[bool], raw: &[f64], out: &mut [f64]) {
        let offset = usize::from(self.intercept);
        if self.intercept {
            out[0] = 1.0;
        }
        let columns = out[offset..].iter_mut().zip(raw).zip(&self.x);
        for (((o, v), r), &kept) in columns.zip(one_hot) {
            *o = if kept {
                v.clamp(0.0, 1.0)
            } else {
                r.to_unit(*v)
            };
        }
    }

    /// Raw rows (row-major, [`Design::columns`] wide) mapped onto the design.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `x` is not a whole number of rows; non-finite values are
    /// refused.
    pub fn rows(&self, x: &[f64]) -> Result<Vec<f64>> {
        let d = self.columns();
        self.check_rows(x)?;
        let w = self.width();
        let one_hot = self.one_hot_columns();
        let mut out = vec![0.0; x.len() / d * w];
        for (raw, row) in x.chunks_exact(d).zip(out.chunks_exact_mut(w)) {
            self.map_row(&one_hot, raw, row);
        }
        Ok(out)
    }

    /// Checks that `x` is whole rows of [`Design::columns`] finite values, with every
    /// indicator 0 or 1 and at most one level of each group set.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], a non-finite value's error, or [`Error::IndicatorGroup`]
    /// naming the row and columns.
    pub fn check_rows(&self, x: &[f64]) -> Result<()> {
        let d = self.columns();
        if !x.len().is_multiple_of(d) {
            return Err(Error::LengthMismatch {
                what: "x (whole rows of the design's columns)",
                expected: x.len().div_ceil(d) * d,
                got: x.len(),
            });
        }
        projection::error::check_finite(x, x.len(), "x")?;
        for (i, row) in x.chunks_exact(d).enumerate() {
            for (g, group) in self.indicator_groups.iter().enumerate() {
                let refuse = |reason: String| Err(Error::IndicatorGroup { group: g, reason });
                let mut set = None;
                for &j in group {
                    match row[j] {
                        0.0 => {}
                        1.0 => match set.replace(j) {
                            None => {}
                            Some(k) => {
                                return refuse(format!(
                                    "row {i}: columns {k} and {j} are both 1; a record has at \
                                     most one level of a categorical variable"
                                ));
                            }
                        },
                        v => {
                            return refuse(format!(
                                "row {i}: column {j} is {v}; an indicator is 0 or 1"
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Δ₂ of the sum of the design's weighted statistics `[w₁ z_j z_k (j ≤ k), w₂ z_j ỹ, w₃ ỹ²]`
    /// under replace-one record: the blocks' sensitivities ([`Design::block_sensitivities`])
    /// weighted by the shares' weights, √(Σ_B w_B² Δ_B²) = √(Σ_B s_B) = 1.
    ///
    /// # Errors
    /// Shares that are not valid.
    pub fn l2_sensitivity(&self) -> Result<f64> {
        self.shares.validate()?;
        let w = self.weights();
        let s = self.block_sensitivities();
        Ok((0..3).map(|b| (w[b] * s[b]).powi(2)).sum::<f64>().sqrt())
    }

    /// Δ₂ of each block ([`block_sensitivities`] with this design's indicator groups).
    pub fn block_sensitivities(&self) -> [f64; 3] {
        let sizes: Vec<usize> = self.one_hot_groups().map(Vec::len).collect();
        block_sensitivities(self.width(), self.intercept, &sizes)
    }

    /// The blocks' weights ([`BlockShares::weights`]).
    pub fn weights(&self) -> [f64; 3] {
        self.shares.weights(self.block_sensitivities())
    }

    /// Each block's noise sd when the weighted vector was released with noise sd `joint`.
    pub fn block_noise(&self, joint: f64) -> BlockNoise {
        self.shares.noise(self.block_sensitivities(), joint)
    }

    /// The rule every data holder follows in the statistics round.
    pub fn rule(&self) -> DesignRule<'_> {
        DesignRule { design: self }
    }
}

/// Columns grouped by their labels (`None`: in no group), groups in order of first appearance,
/// with each group's label: [`Design::indicator_groups`] from a codebook's or a host's labels.
pub fn groups_by_label<T: PartialEq>(
    labels: impl IntoIterator<Item = Option<T>>,
) -> (Vec<Vec<usize>>, Vec<T>) {
    let mut seen: Vec<T> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (j, label) in labels.into_iter().enumerate() {
        let Some(label) = label else { continue };
        match seen.iter().position(|l| *l == label) {
            Some(g) => groups[g].push(j),
            None => {
                seen.push(label);
                groups.push(vec![j]);
            }
        }
    }
    (groups, seen)
}

fn flags<'a>(columns: usize, groups: impl Iterator<Item = &'a Vec<usize>>) -> Vec<bool> {
    let mut flags = vec![false; columns];
    for &j in groups.flatten() {
        if let Some(f) = flags.get_mut(j) {
            *f = true;
        }
    }
    flags
}

/// The statistics round's rule of a [`Design`]: each record mapped onto the design, then its
/// statistics vector with Σỹ² (the DP R² needs it).
#[derive(Clone, Copy, Debug)]
pub struct DesignRule<'a> {
    design: &'a Design,
}

impl ClientRule for DesignRule<'_> {
    fn dim(&self) -> usize {
        SuffStats::flat_len(self.design.width(), true)
    }

    fn record_bound(&self) -> f64 {
        self.design.weights().into_iter().fold(0.0, f64::max)
    }

    fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> projection::Result<()> {
        if x_row.len() != self.design.columns() {
            return Err(projection::Error::LengthMismatch {
                what: "record (design columns)",
                expected: self.design.columns(),
                got: x_row.len(),
            });
        }
        self.design
            .check_rows(x_row)
            .map_err(|e| projection::Error::Contribution(e.to_string()))?;
        let mut z = vec![0.0; self.design.width()];
        self.design.row_into(x_row, &mut z);
        SuffStats::record_into(&z, self.design.y.to_unit(y), true, out)
            .map_err(|e| projection::Error::Contribution(e.to_string()))?;
        apply(out, self.design.width(), self.design.weights(), false);
        Ok(())
    }

    /// Many rows of one holder in one streaming pass, as [`crate::ssp::StatisticsRule`] does:
    /// rows are mapped a block at a time, so memory stays bounded.
    fn add_rows(&self, x: &[f64], y: &[f64], d: usize, sum: &mut [f64]) -> projection::Result<()> {
        const BLOCK: usize = 4096;
        projection::error::check_matrix(x, y.len(), d, "x")?;
        projection::error::check_finite(y, y.len(), "y")?;
        let contribution = || -> Result<Vec<f64>> {
            let w = self.design.width();
            let mut rows = RecordSum::new(w, true, None)?;
            for (xs, ys) in x.chunks(BLOCK * d.max(1)).zip(y.chunks(BLOCK)) {
                let z = self.design.rows(xs)?;
                let t: Vec<f64> = ys.iter().map(|v| self.design.y.to_unit(*v)).collect();
                rows.push_rows(&z, &t)?;
            }
            let mut flat = rows.finish()?.0;
            apply(&mut flat, w, self.design.weights(), false);
            Ok(flat)
        };
        let flat = contribution().map_err(|e| projection::Error::Contribution(e.to_string()))?;
        if flat.len() != sum.len() {
            return Err(projection::Error::LengthMismatch {
                what: "client statistics",
                expected: sum.len(),
                got: flat.len(),
            });
        }
        sum.iter_mut().zip(&flat).for_each(|(s, v)| *s += v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design() -> Design {
        Design::new(
            vec![
                PublicRange::new(0.0, 10.0).unwrap(),
                PublicRange::new(-1.0, 3.0).unwrap(),
            ],
            PublicRange::new(100.0, 300.0).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn rows_map_each_public_range_onto_the_unit_interval_with_the_constant_first() {
        let z = design().rows(&[5.0, 3.0, 0.0, -1.0, 12.0, 1.0]).unwrap();
        assert_eq!(z, vec![1.0, 0.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 0.0]);
        let r = PublicRange::new(100.0, 300.0).unwrap();
        assert_eq!(r.to_unit(150.0), -0.5);
        assert_eq!(r.from_unit(-0.5), 150.0);
        assert_eq!(r.to_unit(1e9), 1.0);
    }

    #[test]
    fn bad_ranges_and_rows_are_refused_with_their_cause() {
        for (lo, hi) in [
            (1.0, 1.0),
            (2.0, 1.0),
            (f64::NAN, 1.0),
            (0.0, f64::INFINITY),
        ] {
            let e = PublicRange::new(lo, hi).unwrap_err().to_string();
            assert!(e.contains("range"), "{e}");
        }
        assert!(Design::new(vec![], PublicRange::new(0.0, 1.0).unwrap()).is_err());
        assert!(design().rows(&[1.0, 2.0, 3.0]).is_err());
        assert!(design().rows(&[1.0, f64::NAN]).is_err());
    }

    /// A column on [0, 10], five indicators of one variable (columns 1–5), and two of another
    /// (6–7).
    fn grouped() -> Design {
        let unit = PublicRange::new(0.0, 1.0).unwrap();
        let mut x = vec![PublicRange::new(0.0, 10.0).unwrap()];
        x.extend([unit; 7]);
        Design {
            x,
            indicator_groups: vec![vec![1, 2, 3, 4, 5], vec![6, 7]],
            ..design()
        }
    }

    #[test]
    fn an_indicator_group_keeps_its_levels_0_or_1_and_refuses_two_at_once() {
        let d = grouped();
        d.validate().unwrap();
        // Five indicators are kept 0/1, two are mapped onto ±1 like any column.
        let z = d.rows(&[5.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]).unwrap();
        assert_eq!(z, vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, -1.0]);
        assert_eq!(d.column_map(0), (5.0, 5.0));
        assert_eq!(d.column_map(2), (0.0, 1.0));
        assert_eq!(d.column_map(6), (0.5, 0.5));
        let e = d
            .rows(&[5.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "indicator group 0: row 0: columns 1 and 3 are both 1; a record has at most one \
             level of a categorical variable"
        );
        // The small group's levels exclude each other too (a codebook fact whatever the coding).
        let e = d
            .rows(&[5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("indicator group 1: row 0: columns 6 and 7"),
            "{e}"
        );
        let e = d
            .rows(&[5.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("column 1 is 0.5; an indicator is 0 or 1"), "{e}");
        let mut one = vec![0.0; d.rule().dim()];
        let two_levels = [5.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!(d.rule().record_into(&two_levels, 150.0, &mut one).is_err());
        // Badly declared groups are refused, naming the cause.
        for (groups, cause) in [
            (vec![vec![]], "has no columns"),
            (vec![vec![1, 8]], "column 8 is not among the 8 columns"),
            (
                vec![vec![1, 2], vec![2, 3]],
                "column 2 is in more than one group",
            ),
            (vec![vec![0, 1]], "column 0's public range is [0, 10]"),
        ] {
            let bad = Design {
                indicator_groups: groups,
                ..grouped()
            };
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(cause), "{e}");
        }
        // Width 9. The five-indicator group adds 1 to ‖z‖², not 5: B = 1 + 3 + 1 = 5,
        // D = 3 + 2 → Δ_G² = 25 + 2.5, Δ_c² = 20 (entrywise 8 + 2·9·8 = 152 and 36).
        let s = d.block_sensitivities();
        assert_eq!(s, [27.5f64.sqrt(), 20f64.sqrt(), 1.0]);
        assert!((d.l2_sensitivity().unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_weighted_statistics_have_sensitivity_one() {
        // Width 3 (1, x̃₁, x̃₂): Gram Δ² = min(2 + 3·4, 3² + 2/2) = 10, cross 3·4 = 12, yy 1
        // (block_shares).
        for intercept in [true, false] {
            let d = Design {
                intercept,
                ..design()
            };
            let s = d.l2_sensitivity().unwrap();
            assert!((s - 1.0).abs() < 1e-12, "{s}");
        }
        let w = design().weights();
        assert_eq!(w[0], 0.45f64.sqrt() / 10f64.sqrt());
        assert_eq!(design().rule().record_bound(), w[2]);
    }

    #[test]
    fn a_holders_streamed_vector_equals_the_sum_of_its_records() {
        let d = design();
        let rule = d.rule();
        let x = [1.0, 2.0, 9.0, -0.5, 4.0, 0.0];
        let y = [120.0, 290.0, 400.0];
        let streamed = rule.client_vector(&x, &y, 2).unwrap();
        let mut by_record = vec![0.0; rule.dim()];
        let mut one = vec![0.0; rule.dim()];
        for (row, t) in x.chunks(2).zip(y) {
            rule.record_into(row, t, &mut one).unwrap();
            by_record.iter_mut().zip(&one).for_each(|(s, v)| *s += v);
        }
        for (a, b) in streamed.iter().zip(&by_record) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // The (0, 0) entry counts the records; Σỹ² of ỹ = (−0.8, 0.9, 1 clipped).
        // Each block carries its weight (block_shares).
        let w = d.weights();
        assert!((streamed[0] - 3.0 * w[0]).abs() < 1e-15);
        let yy = *streamed.last().unwrap();
        assert!((yy - (0.64 + 0.81 + 1.0) * w[2]).abs() < 1e-12, "{yy}");
    }
}
