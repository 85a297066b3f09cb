//! Projection of data into a box (robust LR paper eq. 9, DCA paper suppl. eq. 14) and L2 row
//! normalisation. Both act on one record at a time, so each client can apply them to its own data
//! without seeing anyone else's.

use crate::error::{Error, Result, check_bounds, check_matrix};

/// Clips `v` into `[-bound, bound]`.
#[inline]
pub fn clip(v: f64, bound: f64) -> f64 {
    v.clamp(-bound, bound)
}

/// Clips column `j` of the row-major `n × d` matrix `x` into `[-bounds[j], bounds[j]]`, in place.
///
/// Validates everything first; on error `x` is unchanged.
pub fn clip_columns(x: &mut [f64], n: usize, d: usize, bounds: &[f64]) -> Result<()> {
    check_matrix(x, n, d, "x")?;
    if bounds.len() != d {
        return Err(Error::LengthMismatch {
            what: "bounds (one per column)",
            expected: d,
            got: bounds.len(),
        });
    }
    check_bounds(bounds, "bounds")?;
    for row in x.chunks_exact_mut(d.max(1)) {
        for (v, &b) in row.iter_mut().zip(bounds) {
            *v = clip(*v, b);
        }
    }
    Ok(())
}

/// Clips every entry of `y` into `[-bound, bound]`, in place (validates first).
pub fn clip_vector(y: &mut [f64], bound: f64) -> Result<()> {
    check_matrix(y, y.len(), 1, "y")?;
    check_bounds(&[bound], "bound")?;
    for v in y.iter_mut() {
        *v = clip(*v, bound);
    }
    Ok(())
}

/// Scales every row of the row-major `n × d` matrix `x` to unit L2 norm, in place. All-zero rows
/// stay zero. After this every coordinate lies in `[-1, 1]`, which is what makes 1 a valid public
/// bound for the x dimensions (robust LR protocol; DCA paper suppl. Sec. 11).
pub fn normalize_rows(x: &mut [f64], n: usize, d: usize) -> Result<()> {
    check_matrix(x, n, d, "x")?;
    for row in x.chunks_exact_mut(d.max(1)) {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            for v in row.iter_mut() {
                *v /= norm;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_each_column_to_its_own_bound() {
        let mut x = vec![3.0, -0.5, -4.0, 9.0, 0.1, -0.1];
        clip_columns(&mut x, 3, 2, &[2.0, 1.0]).unwrap();
        assert_eq!(x, vec![2.0, -0.5, -2.0, 1.0, 0.1, -0.1]);
    }

    #[test]
    fn bad_input_leaves_data_unchanged() {
        let mut x = vec![3.0, f64::NAN, 1.0, 2.0];
        let before = x.clone();
        let err = clip_columns(&mut x, 2, 2, &[1.0, 1.0]).unwrap_err();
        assert!(err.to_string().contains("row 0, column 1"), "{err}");
        assert!(x[0] == before[0] && x[1].is_nan() && x[2..] == before[2..]);

        let mut x = vec![3.0, 5.0];
        assert!(clip_columns(&mut x, 1, 2, &[1.0]).is_err());
        assert!(clip_columns(&mut x, 1, 2, &[1.0, 0.0]).is_err());
        assert!(clip_columns(&mut x, 1, 2, &[1.0, f64::INFINITY]).is_err());
        assert!(clip_columns(&mut x, 2, 2, &[1.0, 1.0]).is_err());
        assert_eq!(x, vec![3.0, 5.0]);
        assert!(clip_vector(&mut x, -1.0).is_err());
        assert_eq!(x, vec![3.0, 5.0]);
    }

    #[test]
    fn rows_get_unit_norm_and_zero_rows_stay_zero() {
        let mut x = vec![3.0, 4.0, 0.0, 0.0, -1.0, 0.0];
        normalize_rows(&mut x, 3, 2).unwrap();
        assert_eq!(x, vec![0.6, 0.8, 0.0, 0.0, -1.0, 0.0]);
    }
}
