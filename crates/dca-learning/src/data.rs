//! The clients' records: one (x, y) per client, validated once.

use crate::{Error, Result};

/// N records of d finite features and a finite label, row-major; record i is client i's.
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    x: Vec<f64>,
    y: Vec<f64>,
    dim: usize,
}

impl Records {
    /// Validates `x` (N·d values, row-major) and `y` (N labels). Refuses empty data, d = 0,
    /// wrong lengths and NaN/inf.
    pub fn new(x: Vec<f64>, dim: usize, y: Vec<f64>) -> Result<Self> {
        if y.is_empty() || dim == 0 {
            return Err(Error::InvalidParameter {
                name: if dim == 0 { "dim" } else { "n_records" },
                value: 0.0,
                requirement: ">= 1",
            });
        }
        let expected = y.len().checked_mul(dim).ok_or(Error::InvalidParameter {
            name: "n_records * dim",
            value: f64::INFINITY,
            requirement: "to fit in memory",
        })?;
        if x.len() != expected {
            return Err(Error::LengthMismatch {
                what: "features (n_records * dim)",
                expected,
                actual: x.len(),
            });
        }
        if let Some(index) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "features",
                index,
            });
        }
        if let Some(index) = y.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "labels",
                index,
            });
        }
        Ok(Records { x, y, dim })
    }

    /// N.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Always false (construction refuses empty data).
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// d.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Record i's features.
    pub fn x(&self, i: usize) -> &[f64] {
        &self.x[i * self.dim..(i + 1) * self.dim]
    }

    /// Record i's label.
    pub fn y(&self, i: usize) -> f64 {
        self.y[i]
    }

    /// All labels.
    pub fn labels(&self) -> &[f64] {
        &self.y
    }
}
