//! The public form of what a data holder contributes to each DCA round of Alg. 2, as a job
//! publishes it to its participants: they read it, compute their own vectors with exactly the
//! functions the in-process pipeline uses, and check the round's noise against its sensitivity.

use projection::holders::ClientRule;
use projection::marginal_std::{SquaresRule, StdMode, std_sensitivity};
use serde::{Deserialize, Serialize};

use crate::clipping::{CLIPPED_COUNTS_L2_SENSITIVITY, ClippedCountsRule};
use crate::design::Design;
use crate::error::{Error, Result};
use crate::sensitivity::stats_l2_sensitivity;
use crate::ssp::StatisticsRule;

/// One round's contribution rule (JSON: `{"kind": "squares", …}`, `{"kind": "statistics", …}`
/// or `{"kind": "clipped_counts", …}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Contribution {
    /// The DP marginal-std round: clipped squares of every x (summed over x when `pooled_x`)
    /// and of y.
    Squares {
        /// Public assumed bounds c_j.
        assumed_x: Vec<f64>,
        /// Public assumed bound of y.
        assumed_y: f64,
        /// One σ for all x (the pipeline's default) or one per column.
        pooled_x: bool,
    },
    /// The statistics round: every record projected into the bounds, its statistics vector
    /// `[x_j x_k (j ≤ k)…, x_j y…, (y²)]`.
    Statistics {
        /// Projection bounds B_j.
        bounds_x: Vec<f64>,
        /// Projection bound of y.
        bound_y: f64,
        /// Σy² released too.
        with_yy: bool,
    },
    /// The statistics round of a [`Design`] (the regression with an intercept in the data's
    /// units): every record mapped onto the design's unit scale, its statistics vector with Σỹ².
    DesignStatistics {
        /// Public ranges and intercept.
        design: Design,
    },
    /// The ranges round of a [`Design`]: every column's unit value and its square
    /// ([`crate::narrowing`]), to narrow the public ranges before the statistics round.
    DesignMoments {
        /// Public ranges and intercept.
        design: Design,
    },
    /// The clipped-share round: per record, whether the bounds clip its y and whether they
    /// clip some x (`[1{|y| > B_y}, 1{∃j |x_j| > B_j}]`, [`crate::ClippedCountsRule`]).
    ClippedCounts {
        /// Projection bounds B_j.
        bounds_x: Vec<f64>,
        /// Projection bound of y.
        bound_y: f64,
    },
}

impl Contribution {
    /// The std round's rule.
    pub fn squares(rule: &SquaresRule<'_>) -> Self {
        Contribution::Squares {
            assumed_x: rule.assumed_x.to_vec(),
            assumed_y: rule.assumed_y,
            pooled_x: rule.mode == StdMode::PooledX,
        }
    }

    /// The statistics round's rule.
    pub fn statistics(rule: &StatisticsRule<'_>) -> Self {
        Contribution::Statistics {
            bounds_x: rule.bounds_x.to_vec(),
            bound_y: rule.bound_y,
            with_yy: rule.with_yy,
        }
    }

    /// The published form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("finite numbers and strings always serialise")
    }

    /// Reads a published rule and checks it (finite, positive bounds; at least one column).
    pub fn from_json(text: &str) -> Result<Self> {
        let rule: Contribution = serde_json::from_str(text).map_err(|e| Error::InvalidRule {
            reason: e.to_string(),
        })?;
        rule.l2_sensitivity()?;
        Ok(rule)
    }

    /// Columns of x the rule reads.
    pub fn columns(&self) -> usize {
        match self {
            Contribution::Squares { assumed_x, .. } => assumed_x.len(),
            Contribution::Statistics { bounds_x, .. }
            | Contribution::ClippedCounts { bounds_x, .. } => bounds_x.len(),
            Contribution::DesignStatistics { design } | Contribution::DesignMoments { design } => {
                design.columns()
            }
        }
    }

    /// Δ₂ of the sum under replace-one record: what the round's noise must be calibrated for.
    pub fn l2_sensitivity(&self) -> Result<f64> {
        if self.columns() == 0 {
            return Err(Error::InvalidRule {
                reason: "a rule must read at least one column".into(),
            });
        }
        match self {
            Contribution::Squares {
                assumed_x,
                assumed_y,
                pooled_x,
            } => Ok(std_sensitivity(assumed_x, *assumed_y, mode(*pooled_x))?.0),
            Contribution::Statistics {
                bounds_x,
                bound_y,
                with_yy,
            } => stats_l2_sensitivity(bounds_x, *bound_y, *with_yy),
            Contribution::DesignStatistics { design } => {
                design.validate()?;
                design.l2_sensitivity()
            }
            Contribution::DesignMoments { design } => {
                design.validate()?;
                Ok(crate::narrowing::moments_l2_sensitivity(design))
            }
            Contribution::ClippedCounts { bounds_x, bound_y } => {
                projection::error::check_bounds(bounds_x, "clipping bounds of x")?;
                projection::error::check_bounds(&[*bound_y], "clipping bound of y")?;
                Ok(CLIPPED_COUNTS_L2_SENSITIVITY)
            }
        }
    }

    /// Length of a client's vector.
    pub fn dim(&self) -> usize {
        self.with_rule(|r| r.dim())
    }

    /// Largest |entry| of one record's contribution.
    pub fn record_bound(&self) -> f64 {
        self.with_rule(|r| r.record_bound())
    }

    /// A data holder's vector: the sum over its rows (row-major `x` with [`Self::columns`]
    /// columns, one `y` per row), as the in-process pipeline computes it.
    pub fn client_vector(&self, x: &[f64], y: &[f64]) -> Result<Vec<f64>> {
        let d = self.columns();
        Ok(self.with_rule(|r| r.client_vector(x, y, d))?)
    }

    /// A running sum of this rule's contributions over rows pushed in chunks: the same bits as
    /// [`Self::client_vector`] over all the rows at once.
    pub fn accumulator(&self) -> Result<RowSum<'_>> {
        Ok(match self {
            Contribution::Statistics {
                bounds_x,
                bound_y,
                with_yy,
            } => RowSum::Statistics(crate::silo::RecordSum::new(
                bounds_x.len(),
                *with_yy,
                Some((bounds_x, *bound_y)),
            )?),
            Contribution::DesignStatistics { design } => RowSum::Design {
                design,
                sum: crate::silo::RecordSum::new(design.width(), true, None)?,
            },
            rule => RowSum::Rows {
                rule,
                sum: vec![0.0; rule.dim()],
            },
        })
    }

    pub(crate) fn with_rule<T>(&self, f: impl FnOnce(&dyn ClientRule) -> T) -> T {
        match self {
            Contribution::Squares {
                assumed_x,
                assumed_y,
                pooled_x,
            } => f(&SquaresRule {
                assumed_x,
                assumed_y: *assumed_y,
                mode: mode(*pooled_x),
            }),
            Contribution::Statistics {
                bounds_x,
                bound_y,
                with_yy,
            } => f(&StatisticsRule {
                bounds_x,
                bound_y: *bound_y,
                with_yy: *with_yy,
            }),
            Contribution::DesignStatistics { design } => f(&design.rule()),
            Contribution::DesignMoments { design } => f(&crate::narrowing::MomentsRule { design }),
            Contribution::ClippedCounts { bounds_x, bound_y } => f(&ClippedCountsRule {
                bounds_x,
                bound_y: *bound_y,
            }),
        }
    }
}

/// See [`Contribution::accumulator`].
pub enum RowSum<'a> {
    /// The statistics rule's blocked Gram ([`crate::silo::RecordSum`]).
    Statistics(crate::silo::RecordSum),
    /// A design's statistics: its records mapped onto the design, in one blocked Gram (as
    /// [`crate::design::DesignRule`] sums a holder's rows), the blocks' weights applied at the
    /// end.
    Design {
        /// The design.
        design: &'a Design,
        /// The unweighted sum so far.
        sum: crate::silo::RecordSum,
    },
    /// Any other rule: its records added in row order.
    Rows {
        /// The rule.
        rule: &'a Contribution,
        /// The sum so far.
        sum: Vec<f64>,
    },
}

impl RowSum<'_> {
    /// Adds rows (row-major `x`, one `y` per row; raw values, the rule projects them).
    pub fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        match self {
            RowSum::Statistics(sum) => sum.push_rows(x, y),
            RowSum::Design { design, sum } => {
                projection::error::check_finite(y, y.len(), "y")?;
                let z = design.rows(x)?;
                let t: Vec<f64> = y.iter().map(|v| design.y.to_unit(*v)).collect();
                sum.push_rows(&z, &t)
            }
            RowSum::Rows { rule, sum } => {
                let d = rule.columns();
                Ok(rule.with_rule(|r| r.add_rows(x, y, d, sum))?)
            }
        }
    }

    /// The sum over every row pushed.
    pub fn finish(self) -> Result<Vec<f64>> {
        match self {
            RowSum::Statistics(sum) => Ok(sum.finish()?.0),
            RowSum::Design { design, sum } => {
                let mut flat = sum.finish()?.0;
                crate::block_shares::apply(&mut flat, design.width(), design.weights(), false);
                Ok(flat)
            }
            RowSum::Rows { sum, .. } => Ok(sum),
        }
    }
}

fn mode(pooled_x: bool) -> StdMode {
    if pooled_x {
        StdMode::PooledX
    } else {
        StdMode::PerDimension
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_reads_back_and_computes_by_hand_values() {
        let rule = Contribution::Statistics {
            bounds_x: vec![1.0, 2.0],
            bound_y: 3.0,
            with_yy: true,
        };
        let text = rule.to_json();
        assert_eq!(
            text,
            r#"{"kind":"statistics","bounds_x":[1.0,2.0],"bound_y":3.0,"with_yy":true}"#
        );
        assert_eq!(Contribution::from_json(&text).unwrap(), rule);
        // Rows (5, −1, y = 4) → clipped (1, −1, 3): xx = 1, −1, 1; xy = 3, −3; yy = 9.
        // Rows (0.5, 1, y = 1): xx = 0.25, 0.5, 1; xy = 0.5, 1; yy = 1.
        let v = rule
            .client_vector(&[5.0, -1.0, 0.5, 1.0], &[4.0, 1.0])
            .unwrap();
        assert_eq!(v, vec![1.25, -0.5, 2.0, 3.5, -2.0, 10.0]);
        // Δ₂² = 1 + 16 + (2·1·2)² + (2·1·3)² + (2·2·3)² + 81 = 1 + 16 + 16 + 36 + 144 + 81.
        assert_eq!(rule.l2_sensitivity().unwrap(), 294f64.sqrt());
        let squares = Contribution::Squares {
            assumed_x: vec![1.0, 2.0],
            assumed_y: 3.0,
            pooled_x: true,
        };
        // (5, −1, 4) → 1 + 1, 9; (0.5, 1, 1) → 0.25 + 1, 1.
        assert_eq!(
            squares
                .client_vector(&[5.0, -1.0, 0.5, 1.0], &[4.0, 1.0])
                .unwrap(),
            vec![3.25, 10.0]
        );
        // Pooled: Δ₂ = sqrt((1 + 4)² + 3⁴).
        assert_eq!(squares.l2_sensitivity().unwrap(), (25.0f64 + 81.0).sqrt());
        let clipped = Contribution::ClippedCounts {
            bounds_x: vec![1.0, 2.0],
            bound_y: 3.0,
        };
        let text = clipped.to_json();
        assert_eq!(
            text,
            r#"{"kind":"clipped_counts","bounds_x":[1.0,2.0],"bound_y":3.0}"#
        );
        assert_eq!(Contribution::from_json(&text).unwrap(), clipped);
        // (5, −1, 4): y clipped, x clipped (|5| > 1); (0.5, 1, 1): neither; (0.5, −2.5, −3):
        // y not (|−3| is not > 3), x clipped (|−2.5| > 2).
        assert_eq!(
            clipped
                .client_vector(&[5.0, -1.0, 0.5, 1.0, 0.5, -2.5], &[4.0, 1.0, -3.0])
                .unwrap(),
            vec![1.0, 2.0]
        );
        // Two indicators, each moved by at most 1 by replacing a record: Δ₂ = √2.
        assert_eq!(clipped.l2_sensitivity().unwrap(), 2f64.sqrt());
    }

    #[test]
    fn pushing_rows_in_chunks_gives_the_bits_of_one_pass() {
        let (n, d) = (1000, 3);
        let x: Vec<f64> = (0..n * d)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.3)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| ((i * 53 % 89) as f64 - 44.0) / 5.1)
            .collect();
        for rule in [
            Contribution::Statistics {
                bounds_x: vec![3.0, 4.0, 5.0],
                bound_y: 6.0,
                with_yy: true,
            },
            Contribution::Squares {
                assumed_x: vec![3.0, 4.0, 5.0],
                assumed_y: 6.0,
                pooled_x: false,
            },
            Contribution::DesignStatistics {
                design: Design::new(
                    vec![crate::design::PublicRange::new(-5.0, 6.0).unwrap(); 3],
                    crate::design::PublicRange::new(-7.0, 8.0).unwrap(),
                )
                .unwrap(),
            },
        ] {
            let whole = rule.client_vector(&x, &y).unwrap();
            for chunk in [1, 7, 333, 1000] {
                let mut sum = rule.accumulator().unwrap();
                for (xc, yc) in x.chunks(chunk * d).zip(y.chunks(chunk)) {
                    sum.push_rows(xc, yc).unwrap();
                }
                let streamed = sum.finish().unwrap();
                let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&streamed), bits(&whole), "chunks of {chunk}");
            }
        }
    }

    #[test]
    fn bad_rules_are_refused() {
        for text in [
            r#"{"kind":"statistics","bounds_x":[],"bound_y":3.0,"with_yy":true}"#,
            r#"{"kind":"statistics","bounds_x":[-1.0],"bound_y":3.0,"with_yy":true}"#,
            r#"{"kind":"statistics","bounds_x":[1.0],"bound_y":0.0,"with_yy":true}"#,
            r#"{"kind":"squares","assumed_x":[1.0],"assumed_y":1.0}"#,
            r#"{"kind":"squares","assumed_x":[1.0],"assumed_y":1.0,"pooled_x":true,"x":1}"#,
            r#"{"kind":"gradient"}"#,
            r#"{"kind":"clipped_counts","bounds_x":[1.0,-2.0],"bound_y":3.0}"#,
            r#"{"kind":"clipped_counts","bounds_x":[1.0],"bound_y":0.0}"#,
            r#"{"kind":"clipped_counts","bounds_x":[],"bound_y":1.0}"#,
            "not json",
        ] {
            assert!(Contribution::from_json(text).is_err(), "{text}");
        }
        let rule = Contribution::from_json(
            r#"{"kind":"squares","assumed_x":[1.0],"assumed_y":1.0,"pooled_x":false}"#,
        )
        .unwrap();
        // A row of the wrong width is refused, not read past.
        assert!(rule.client_vector(&[1.0, 2.0], &[1.0]).is_err());
    }
}
