//! Sufficient statistics of Bayesian linear regression: the packed upper triangle of Σ x xᵀ
//! (d(d+1)/2 entries), Σ x y (d entries) and Σ y² (DCA paper Sec. 4.2.1; robust LR paper eq. 7).
//!
//! Packed order is row-major over the upper triangle: (0,0), (0,1), …, (0,d−1), (1,1), …, (d−1,d−1).
//! The flat layout `[xx…, xy…, yy]` is what a client sends through DCA.

use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatRef, Par};

use crate::error::{Error, Result, check_xy};

/// Number of entries of the packed upper triangle of a `d × d` symmetric matrix, for a d whose
/// statistics exist in memory (use [`checked_packed_len`] for a d that comes from a caller).
pub fn packed_len(d: usize) -> usize {
    d * (d + 1) / 2
}

/// d(d+1)/2 without wrapping: `None` when it does not fit a `usize`. The halving is done on the
/// even factor first, so d = 2^32 (whose d(d+1) overflows 64 bits) is still exact.
pub fn checked_packed_len(d: usize) -> Option<usize> {
    let next = d.checked_add(1)?;
    if d.is_multiple_of(2) {
        (d / 2).checked_mul(next)
    } else {
        d.checked_mul(next / 2)
    }
}

/// Position of entry (j, k), j ≤ k, in the packed upper triangle.
pub fn packed_index(j: usize, k: usize, d: usize) -> usize {
    debug_assert!(j <= k && k < d);
    j * d - j * (j + 1) / 2 + k
}

/// Sufficient statistics of `n` records with `d` inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct SuffStats {
    /// Number of input dimensions.
    pub d: usize,
    /// Number of records (public in the replace-one neighbourhood used throughout).
    pub n: usize,
    /// Packed upper triangle of Σ x xᵀ, length d(d+1)/2.
    pub xx: Vec<f64>,
    /// Σ x y, length d.
    pub xy: Vec<f64>,
    /// Σ y².
    pub yy: f64,
}

impl SuffStats {
    /// Computes the statistics of the row-major `n × d` matrix `x` and targets `y`
    /// (XᵀX by a faer matrix product, then packed).
    pub fn compute(x: &[f64], y: &[f64], n: usize, d: usize) -> Result<Self> {
        check_xy(x, y, n, d)?;
        let xx = packed_gram(x, n, d);
        let mut xy = vec![0.0; d];
        for (row, &t) in x.chunks_exact(d).zip(y) {
            for (acc, v) in xy.iter_mut().zip(row) {
                *acc += v * t;
            }
        }
        let yy = y.iter().map(|t| t * t).sum();
        Ok(SuffStats { d, n, xx, xy, yy })
    }

    /// Length of the flat vector `[xx…, xy…]` (with `yy` appended when `with_yy`).
    /// For a d whose statistics exist in memory; [`SuffStats::checked_flat_len`] for a d that
    /// comes from a caller.
    pub fn flat_len(d: usize, with_yy: bool) -> usize {
        packed_len(d) + d + usize::from(with_yy)
    }

    /// [`SuffStats::flat_len`] for a d that comes from a caller: an error instead of a wrapped
    /// value when the length, or its size in bytes as `f64`s, does not fit the address space
    /// (so no array of that length can exist).
    ///
    /// # Errors
    /// [`Error::Projection`] with `projection::Error::SizeOverflow`.
    pub fn checked_flat_len(d: usize, with_yy: bool) -> Result<usize> {
        checked_packed_len(d)
            .and_then(|p| p.checked_add(d))
            .and_then(|p| p.checked_add(usize::from(with_yy)))
            .filter(|&len| len <= isize::MAX as usize / size_of::<f64>())
            .ok_or(Error::Projection(projection::Error::SizeOverflow {
                what: "flat BLR statistics (d(d+1)/2 + d values)",
                rows: d,
                cols: d,
            }))
    }

    /// Writes one record's statistics `[x_j x_k (j ≤ k)…, x_j y…, (y²)]` into `out`
    /// (length [`SuffStats::flat_len`]). This is the vector a client contributes to the sum.
    pub fn record_into(x_row: &[f64], y: f64, with_yy: bool, out: &mut [f64]) -> Result<()> {
        let d = x_row.len();
        let expected = Self::checked_flat_len(d, with_yy)?;
        if out.len() != expected {
            return Err(Error::LengthMismatch {
                what: "record buffer",
                expected,
                got: out.len(),
            });
        }
        let mut p = 0;
        for j in 0..d {
            for k in j..d {
                out[p] = x_row[j] * x_row[k];
                p += 1;
            }
        }
        for j in 0..d {
            out[p + j] = x_row[j] * y;
        }
        if with_yy {
            out[p + d] = y * y;
        }
        Ok(())
    }

    /// The flat vector `[xx…, xy…, (yy)]`.
    pub fn to_flat(&self, with_yy: bool) -> Vec<f64> {
        let mut v = Vec::with_capacity(Self::flat_len(self.d, with_yy));
        v.extend_from_slice(&self.xx);
        v.extend_from_slice(&self.xy);
        if with_yy {
            v.push(self.yy);
        }
        v
    }

    /// Rebuilds statistics from a flat vector; without `yy` in it, `yy` is set to NaN-free 0 and
    /// must not be used (only the Gamma-prior variant needs it).
    pub fn from_flat(flat: &[f64], d: usize, n: usize, with_yy: bool) -> Result<Self> {
        let expected = Self::checked_flat_len(d, with_yy)?;
        if flat.len() != expected {
            return Err(Error::LengthMismatch {
                what: "flat statistics",
                expected,
                got: flat.len(),
            });
        }
        projection::error::check_finite(flat, flat.len().max(1), "statistics")?;
        let p = packed_len(d);
        Ok(SuffStats {
            d,
            n,
            xx: flat[..p].to_vec(),
            xy: flat[p..p + d].to_vec(),
            yy: if with_yy { flat[p + d] } else { 0.0 },
        })
    }

    /// The full symmetric `d × d` matrix Σ x xᵀ.
    pub fn xx_matrix(&self) -> Mat<f64> {
        let d = self.d;
        Mat::from_fn(d, d, |i, j| {
            let (a, b) = if i <= j { (i, j) } else { (j, i) };
            self.xx[packed_index(a, b, d)]
        })
    }

    /// Checks internal consistency (lengths, finiteness, n ≥ 1).
    pub fn validate(&self) -> Result<()> {
        if self.d == 0 {
            return Err(Error::Empty {
                what: "statistics dimension d",
            });
        }
        if self.xx.len() != packed_len(self.d) {
            return Err(Error::LengthMismatch {
                what: "packed xx statistics",
                expected: packed_len(self.d),
                got: self.xx.len(),
            });
        }
        if self.xy.len() != self.d {
            return Err(Error::LengthMismatch {
                what: "xy statistics",
                expected: self.d,
                got: self.xy.len(),
            });
        }
        projection::error::check_finite(&self.xx, self.xx.len(), "xx")?;
        projection::error::check_finite(&self.xy, self.d, "xy")?;
        projection::error::check_finite(&[self.yy], 1, "yy")?;
        Ok(())
    }
}

/// Above this many multiply-adds (n·d²/2) the Gram product runs on the rayon pool; below it
/// the threads' start-up costs more than they save.
const PARALLEL_GRAM_FLOPS: usize = 1 << 27;

/// The packed upper triangle `[(0,0), (0,1), …, (d−1,d−1)]` of XᵀX for a row-major n×d `x`.
/// Callers have checked the shape.
///
/// A symmetric rank-n update: faer's triangular matmul computes only the lower triangle of
/// A·Aᵀ with A = Xᵀ (d × n, column-major over the same buffer, so nothing is copied), half the
/// multiply-adds of a general product; lower (j ≥ k) of XᵀX read as (k, j) is the upper
/// triangle. Multithreaded when n·d² is large.
pub(crate) fn packed_gram(x: &[f64], n: usize, d: usize) -> Vec<f64> {
    let at = MatRef::from_row_major_slice(x, n, d).transpose();
    let mut gram = Mat::<f64>::zeros(d, d);
    let par = if n.saturating_mul(d).saturating_mul(d) / 2 >= PARALLEL_GRAM_FLOPS {
        Par::rayon(0)
    } else {
        Par::Seq
    };
    triangular::matmul(
        gram.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        at,
        BlockStructure::Rectangular,
        at.transpose(),
        BlockStructure::Rectangular,
        1.0,
        par,
    );
    let mut xx = Vec::with_capacity(packed_len(d));
    for j in 0..d {
        // Column j of the lower triangle, rows j..d (contiguous in faer's storage) is row j of
        // the upper one.
        xx.extend((j..d).map(|k| gram[(k, j)]));
    }
    xx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_index_walks_the_upper_triangle() {
        let d = 4;
        let mut p = 0;
        for j in 0..d {
            for k in j..d {
                assert_eq!(packed_index(j, k, d), p);
                p += 1;
            }
        }
        assert_eq!(p, packed_len(d));
    }

    #[test]
    fn lengths_from_callers_never_wrap() {
        assert_eq!(checked_packed_len(0), Some(0));
        assert_eq!(checked_packed_len(3), Some(6));
        assert_eq!(checked_packed_len(4), Some(10));
        // d = 2^32: d(d+1) overflows 64 bits, d(d+1)/2 = 2^63 + 2^31 does not.
        assert_eq!(checked_packed_len(1 << 32), Some((1 << 63) + (1 << 31)));
        assert_eq!(checked_packed_len(usize::MAX), None);
        assert_eq!(SuffStats::checked_flat_len(3, true).unwrap(), 10);
        // The largest d whose statistics fit isize::MAX bytes of doubles: d(d+1)/2 + d + 1
        // <= 2^60 − 1 holds for d = 1518500248 and fails for d + 1.
        let d_max = 1_518_500_248;
        assert!(SuffStats::checked_flat_len(d_max, true).is_ok());
        for d in [d_max + 1, 1 << 32, usize::MAX / 2, usize::MAX] {
            let e = SuffStats::checked_flat_len(d, false).unwrap_err();
            assert!(
                matches!(e, Error::Projection(projection::Error::SizeOverflow { .. })),
                "{d}: {e:?}"
            );
        }
        // A flat vector of any length is refused for such a d instead of panicking on a slice.
        assert!(SuffStats::from_flat(&[], usize::MAX, 10, false).is_err());
    }

    #[test]
    fn matches_sums_of_record_statistics() {
        let (n, d) = (5, 3);
        let x: Vec<f64> = (0..n * d)
            .map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0)
            .collect();
        let y: Vec<f64> = (0..n).map(|i| i as f64 - 2.0).collect();
        let s = SuffStats::compute(&x, &y, n, d).unwrap();
        let mut total = vec![0.0; SuffStats::flat_len(d, true)];
        let mut rec = total.clone();
        for i in 0..n {
            SuffStats::record_into(&x[i * d..(i + 1) * d], y[i], true, &mut rec).unwrap();
            total.iter_mut().zip(&rec).for_each(|(t, r)| *t += r);
        }
        for (a, b) in s.to_flat(true).iter().zip(&total) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // Hand check of one entry: Σ x_i0 x_i2.
        let direct: f64 = (0..n).map(|i| x[i * d] * x[i * d + 2]).sum();
        assert!((s.xx[packed_index(0, 2, d)] - direct).abs() < 1e-12);
        let back = SuffStats::from_flat(&s.to_flat(true), d, n, true).unwrap();
        assert_eq!(back, s);
        let m = s.xx_matrix();
        assert_eq!(m[(2, 0)], m[(0, 2)]);
    }

    #[test]
    fn packed_gram_matches_direct_sums_on_both_sides_of_the_thread_cutoff() {
        // (n, d): small (sequential), odd sizes, and n·d²/2 above PARALLEL_GRAM_FLOPS.
        for (n, d) in [(1, 1), (3, 7), (37, 19), (7_000, 200)] {
            assert_eq!(
                n * d * d / 2 >= PARALLEL_GRAM_FLOPS,
                d == 200,
                "the cases cover the cutoff as intended"
            );
            let x: Vec<f64> = (0..n * d)
                .map(|i| ((i * 7919 % 1013) as f64 - 506.0) / 97.0)
                .collect();
            let xx = packed_gram(&x, n, d);
            assert_eq!(xx.len(), packed_len(d));
            for j in 0..d {
                for k in j..d {
                    let direct: f64 = (0..n).map(|i| x[i * d + j] * x[i * d + k]).sum();
                    let got = xx[packed_index(j, k, d)];
                    let scale = (0..n)
                        .map(|i| (x[i * d + j] * x[i * d + k]).abs())
                        .sum::<f64>()
                        .max(1.0);
                    assert!(
                        (got - direct).abs() <= 1e-12 * scale,
                        "n {n} d {d} ({j},{k}): {got} vs {direct}"
                    );
                }
            }
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(SuffStats::compute(&[1.0, 2.0], &[1.0], 1, 3).is_err());
        assert!(SuffStats::compute(&[1.0, f64::NAN], &[1.0], 1, 2).is_err());
        assert!(SuffStats::compute(&[1.0, 2.0], &[f64::INFINITY], 1, 2).is_err());
        assert!(SuffStats::compute(&[], &[], 0, 0).is_err());
        assert!(
            SuffStats::compute(&[], &[], 0, 2)
                .unwrap_err()
                .to_string()
                .contains("zero rows")
        );
        assert!(SuffStats::from_flat(&[1.0; 4], 2, 1, false).is_err());
        let mut out = [0.0; 3];
        assert!(SuffStats::record_into(&[1.0, 2.0], 1.0, false, &mut out).is_err());
    }
}
