//! Who holds the rows of a release, and how rows make DCA clients.
//!
//! A client of DCA is a data holder: a device with one record, or a hospital with many. Its
//! vector is the sum over its rows of each record's contribution, so the sensitivity of the sum
//! stays per record (replace-one record) whatever the grouping; only the bound on a client's
//! entries grows with its row count, which widens the fixed-point grid, never the noise.
//!
//! The rows are either in this process ([`Holders::Here`], the in-process pipeline and
//! simulations) or stay with remote parties ([`Holders::Remote`]) that compute their own vectors
//! from a public rule with [`ClientRule::client_vector`] — the same function as here, so a
//! networked job releases what the in-process pipeline releases, bit for bit.

use crate::error::{Error, Result, check_matrix};

/// What one record contributes to a round.
pub trait ClientRule {
    /// Length of the vector.
    fn dim(&self) -> usize;
    /// Largest |entry| of one record's contribution.
    fn record_bound(&self) -> f64;
    /// Writes one record's contribution (`x_row` raw, `y` raw) into `out` (length [`Self::dim`]).
    fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> Result<()>;

    /// A client's vector: the sum over its rows (row-major `x`, one `y` per row) in row order.
    fn client_vector(&self, x: &[f64], y: &[f64], d: usize) -> Result<Vec<f64>> {
        let mut sum = vec![0.0; self.dim()];
        self.add_rows(x, y, d, &mut sum)?;
        Ok(sum)
    }

    /// Adds the rows' contributions to `sum` in row order.
    fn add_rows(&self, x: &[f64], y: &[f64], d: usize, sum: &mut [f64]) -> Result<()> {
        check_matrix(x, y.len(), d, "x")?;
        check_matrix(y, y.len(), 1, "y")?;
        let mut record = vec![0.0; self.dim()];
        for (row, &t) in x.chunks_exact(d.max(1)).zip(y) {
            self.record_into(row, t, &mut record)?;
            sum.iter_mut().zip(&record).for_each(|(s, r)| *s += r);
        }
        Ok(())
    }
}

/// How the rows in this process make clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping<'a> {
    /// Every row is a client (one record per data holder).
    OneRowEach,
    /// Client i holds rows `starts[i]..starts[i + 1]`; `starts` begins at 0, ends at the row
    /// count and strictly increases (no client without rows).
    Starts(&'a [usize]),
}

/// Who holds the rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Holders<'a> {
    /// Every row in this process: `x` row-major `records × d`, `y` one per row.
    Here {
        /// Raw inputs.
        x: &'a [f64],
        /// Raw targets.
        y: &'a [f64],
        /// Columns of x.
        d: usize,
        /// Rows of each client.
        grouping: Grouping<'a>,
    },
    /// The rows stay with remote parties: party i holds `rows[i]` rows (public, as n is in
    /// the papers' replace-one setting), none more than `max_rows` (public: the grid of the
    /// round is sized by it).
    Remote {
        /// Rows of each data holder taking part.
        rows: &'a [usize],
        /// The most rows one holder may contribute.
        max_rows: usize,
    },
}

impl Holders<'_> {
    /// Checks the shapes and the grouping.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Holders::Here { x, y, d, grouping } => {
                check_matrix(x, y.len(), d, "x")?;
                check_matrix(y, y.len(), 1, "y")?;
                if y.is_empty() {
                    return Err(Error::Empty { what: "rows" });
                }
                if let Grouping::Starts(s) = grouping {
                    let ok = s.first() == Some(&0)
                        && s.last() == Some(&y.len())
                        && s.windows(2).all(|w| w[0] < w[1]);
                    if !ok {
                        return Err(Error::InvalidGrouping {
                            rows: y.len(),
                            starts: s.len(),
                        });
                    }
                }
                Ok(())
            }
            Holders::Remote { rows, max_rows } => {
                if rows.is_empty() || rows.iter().any(|&r| r == 0 || r > max_rows) {
                    return Err(Error::InvalidGrouping {
                        rows: self.records(),
                        starts: rows.len() + 1,
                    });
                }
                Ok(())
            }
        }
    }

    /// Number of DCA clients.
    pub fn clients(&self) -> usize {
        match *self {
            Holders::Here { y, grouping, .. } => match grouping {
                Grouping::OneRowEach => y.len(),
                Grouping::Starts(s) => s.len().saturating_sub(1),
            },
            Holders::Remote { rows, .. } => rows.len(),
        }
    }

    /// Number of records (rows) over all clients.
    pub fn records(&self) -> usize {
        match *self {
            Holders::Here { y, .. } => y.len(),
            Holders::Remote { rows, .. } => rows.iter().sum(),
        }
    }

    /// Records held by the clients in `included` (all of them for `None`): the n of a release
    /// some clients dropped out of.
    pub fn records_in(&self, included: Option<&fixedpoint_shares::ClientSet>) -> usize {
        let Some(set) = included else {
            return self.records();
        };
        (0..self.clients())
            .filter(|&i| set.contains(fixedpoint_shares::ClientId(i as u64)))
            .map(|i| self.rows_of(i))
            .sum()
    }

    fn rows_of(&self, client: usize) -> usize {
        match *self {
            Holders::Here { grouping, .. } => match grouping {
                Grouping::OneRowEach => 1,
                Grouping::Starts(s) => s[client + 1] - s[client],
            },
            Holders::Remote { rows, .. } => rows[client],
        }
    }

    /// The most rows one client holds (or may hold, for remote parties).
    pub fn max_rows(&self) -> usize {
        match *self {
            Holders::Here { grouping, .. } => match grouping {
                Grouping::OneRowEach => 1,
                Grouping::Starts(s) => s.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0),
            },
            Holders::Remote { max_rows, .. } => max_rows,
        }
    }

    /// Bound on a client's entries under `rule`: a record's bound times the most rows a
    /// client holds.
    ///
    /// A sum of k records rounds at each of its k − 1 additions, so it may exceed k·b by up to
    /// (k − 1)·u·k·b (u = 2⁻⁵³, Higham, *Accuracy and Stability of Numerical Algorithms*,
    /// eq. 4.4): the bound gets that headroom (one ulp per row, rounded up), and stays exactly
    /// b for one row per client.
    pub fn client_bound(&self, rule: &dyn ClientRule) -> f64 {
        let k = self.max_rows() as f64;
        let b = rule.record_bound();
        if k <= 1.0 {
            b
        } else {
            b * k * (1.0 + (k + 1.0) * f64::EPSILON)
        }
    }

    /// Every client's vector, row-major `clients × dim`, for rows held here; `None` for
    /// remote holders (they compute their own).
    pub fn client_vectors(&self, rule: &dyn ClientRule) -> Result<Option<Vec<f64>>> {
        let Holders::Here { x, y, d, grouping } = *self else {
            return Ok(None);
        };
        let dim = rule.dim();
        let mut out = vec![0.0; self.clients() * dim];
        match grouping {
            Grouping::OneRowEach => {
                for ((row, &t), o) in x
                    .chunks_exact(d.max(1))
                    .zip(y)
                    .zip(out.chunks_exact_mut(dim))
                {
                    rule.record_into(row, t, o)?;
                }
            }
            Grouping::Starts(s) => {
                for (w, o) in s.windows(2).zip(out.chunks_exact_mut(dim)) {
                    rule.add_rows(&x[w[0] * d..w[1] * d], &y[w[0]..w[1]], d, o)?;
                }
            }
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixedpoint_shares::ClientId;

    /// (x, x·y): a rule simple enough to check by hand.
    struct Product;
    impl ClientRule for Product {
        fn dim(&self) -> usize {
            2
        }
        fn record_bound(&self) -> f64 {
            4.0
        }
        fn record_into(&self, x_row: &[f64], y: f64, out: &mut [f64]) -> Result<()> {
            out[0] = x_row[0];
            out[1] = x_row[0] * y;
            Ok(())
        }
    }

    #[test]
    fn groups_sum_their_rows_and_size_the_bound() {
        let (x, y) = ([1.0, 2.0, 3.0, -1.0], [1.0, 2.0, -1.0, 0.5]);
        let starts = [0, 1, 4];
        let h = Holders::Here {
            x: &x,
            y: &y,
            d: 1,
            grouping: Grouping::Starts(&starts),
        };
        h.validate().unwrap();
        assert_eq!((h.clients(), h.records(), h.max_rows()), (2, 4, 3));
        // 3 rows of bound 4, with the rounding headroom of a 3-term sum.
        assert_eq!(h.client_bound(&Product), 12.0 * (1.0 + 4.0 * f64::EPSILON));
        assert_eq!(
            Holders::Here {
                x: &x,
                y: &y,
                d: 1,
                grouping: Grouping::OneRowEach
            }
            .client_bound(&Product),
            4.0
        );
        // Client 0: (1, 1); client 1: (2 + 3 − 1, 4 − 3 − 0.5).
        assert_eq!(
            h.client_vectors(&Product).unwrap().unwrap(),
            vec![1.0, 1.0, 4.0, 0.5]
        );
        let each = Holders::Here {
            x: &x,
            y: &y,
            d: 1,
            grouping: Grouping::OneRowEach,
        };
        assert_eq!(
            each.client_vectors(&Product).unwrap().unwrap(),
            vec![1.0, 1.0, 2.0, 4.0, 3.0, -3.0, -1.0, -0.5]
        );
        assert_eq!(
            Product.client_vector(&x[1..], &y[1..], 1).unwrap(),
            [4.0, 0.5]
        );
    }

    #[test]
    fn bad_groupings_are_refused() {
        let (x, y) = ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]);
        for starts in [&[0, 3][..], &[1, 3], &[0, 2], &[0, 2, 2, 3], &[0]] {
            let h = Holders::Here {
                x: &x,
                y: &y,
                d: 1,
                grouping: Grouping::Starts(starts),
            };
            if starts == [0, 3] {
                h.validate().unwrap();
            } else {
                assert!(
                    matches!(h.validate(), Err(Error::InvalidGrouping { .. })),
                    "{starts:?}"
                );
            }
        }
        let remote = |rows, max_rows| Holders::Remote { rows, max_rows };
        assert!(remote(&[3, 5, 2], 5).validate().is_ok());
        assert!(remote(&[], 5).validate().is_err());
        assert!(remote(&[3, 0, 2], 5).validate().is_err());
        assert!(remote(&[3, 6, 2], 5).validate().is_err());
        let held = remote(&[3, 5, 2], 5);
        assert_eq!((held.clients(), held.records()), (3, 10));
        let without_1 =
            fixedpoint_shares::ClientSet::from_ids(3, &[ClientId(0), ClientId(2)]).unwrap();
        assert_eq!(held.records_in(Some(&without_1)), 5);
        assert_eq!(held.records_in(None), 10);
        assert_eq!(held.client_vectors(&Product).unwrap(), None);
    }
}
