//! A small, strict reader for numeric CSV tables (header row, comma-separated, every cell a finite
//! number) and the preprocessing of the two accuracy protocols.

use crate::error::{CsvError, Error, Result};

/// `(x, y, d, input names)`: a row-major `rows × d` input matrix, the target column, the number of
/// inputs and their names.
pub type InputsAndTarget = (Vec<f64>, Vec<f64>, usize, Vec<String>);

/// A numeric table with named columns, stored row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column names from the header row.
    pub names: Vec<String>,
    /// Row-major values, `rows × names.len()`.
    pub values: Vec<f64>,
    /// Number of data rows.
    pub rows: usize,
}

fn unquote(cell: &str) -> &str {
    let c = cell.trim();
    c.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(c)
}

impl Table {
    /// Parses CSV text. Errors name the line (1-based, header = line 1) and column of the first
    /// problem: non-numeric or non-finite cells, rows with the wrong number of cells, an empty or
    /// duplicate header, no data rows. Blank lines are skipped.
    pub fn parse_csv(text: &str) -> Result<Self> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or(CsvError::NoHeader)?;
        let names: Vec<String> = header.split(',').map(|c| unquote(c).to_string()).collect();
        if let Some(j) = names.iter().position(|n| n.is_empty()) {
            return Err(CsvError::UnnamedColumn { column: j + 1 }.into());
        }
        for (j, name) in names.iter().enumerate() {
            if names[..j].contains(name) {
                return Err(CsvError::DuplicateColumn { name: name.clone() }.into());
            }
        }
        let mut values = Vec::new();
        let mut rows = 0;
        for (line, text) in lines {
            let cells: Vec<&str> = text.split(',').collect();
            if cells.len() != names.len() {
                return Err(CsvError::RaggedRow {
                    line,
                    cells: cells.len(),
                    columns: names.len(),
                }
                .into());
            }
            for (j, cell) in cells.iter().enumerate() {
                let c = unquote(cell);
                let v: f64 = c.parse().map_err(|_| CsvError::NotANumber {
                    line,
                    column: j + 1,
                    name: names[j].clone(),
                    cell: c.to_string(),
                })?;
                if !v.is_finite() {
                    return Err(CsvError::NotFinite {
                        line,
                        column: j + 1,
                        name: names[j].clone(),
                        value: v,
                    }
                    .into());
                }
                values.push(v);
            }
            rows += 1;
        }
        if rows == 0 {
            return Err(CsvError::NoRows.into());
        }
        Ok(Table {
            names,
            values,
            rows,
        })
    }

    /// Splits into a row-major `rows × (cols − 1)` input matrix and the target column `target`.
    /// Returns `(x, y, d, input names)`.
    pub fn split_target(&self, target: &str) -> Result<InputsAndTarget> {
        let t =
            self.names
                .iter()
                .position(|n| n == target)
                .ok_or_else(|| CsvError::NoSuchColumn {
                    target: target.to_string(),
                })?;
        let cols = self.names.len();
        if cols < 2 {
            return Err(CsvError::NoInputColumns.into());
        }
        let mut x = Vec::with_capacity(self.rows * (cols - 1));
        let mut y = Vec::with_capacity(self.rows);
        for row in self.values.chunks_exact(cols) {
            for (j, v) in row.iter().enumerate() {
                if j == t {
                    y.push(*v);
                } else {
                    x.push(*v);
                }
            }
        }
        let names = self
            .names
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != t)
            .map(|(_, n)| n.clone())
            .collect();
        Ok((x, y, cols - 1, names))
    }
}

/// Column means of a row-major `n × d` matrix.
pub fn column_means(x: &[f64], n: usize, d: usize) -> Result<Vec<f64>> {
    projection::error::check_matrix(x, n, d, "x")?;
    if n == 0 || d == 0 {
        return Err(Error::Empty {
            what: "matrix for column means",
        });
    }
    let mut m = vec![0.0; d];
    for row in x.chunks_exact(d) {
        m.iter_mut().zip(row).for_each(|(a, v)| *a += v);
    }
    m.iter_mut().for_each(|a| *a /= n as f64);
    Ok(m)
}

/// Centres every column and scales it to a range (max − min) of `range` (DCA paper Sec. 5: the
/// UCI data were scaled to a range of 10). Constant columns are only centred.
pub fn centre_and_scale_to_range(x: &mut [f64], n: usize, d: usize, range: f64) -> Result<()> {
    let means = column_means(x, n, d)?;
    if !(range.is_finite() && range > 0.0) {
        return Err(Error::OutOfRange {
            name: "range",
            value: range,
            requirement: "finite and > 0",
        });
    }
    for (j, mean) in means.iter().enumerate() {
        let (lo, hi) = x
            .iter()
            .skip(j)
            .step_by(d)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let scale = if hi > lo { range / (hi - lo) } else { 1.0 };
        for v in x.iter_mut().skip(j).step_by(d) {
            *v = (*v - mean) * scale;
        }
    }
    Ok(())
}

/// Centres every column and divides it by its (population) standard deviation.
pub fn standardise(x: &mut [f64], n: usize, d: usize) -> Result<()> {
    let means = column_means(x, n, d)?;
    for (j, mean) in means.iter().enumerate() {
        let var = x
            .iter()
            .skip(j)
            .step_by(d)
            .map(|v| (v - mean).powi(2))
            .sum::<f64>()
            / n as f64;
        let sd = if var > 0.0 { var.sqrt() } else { 1.0 };
        for v in x.iter_mut().skip(j).step_by(d) {
            *v = (*v - mean) / sd;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_splits() {
        let t = Table::parse_csv("a,\"b\",y\r\n1,2,3\n\n4, 5e-1 ,-6\n").unwrap();
        assert_eq!(t.names, vec!["a", "b", "y"]);
        assert_eq!(t.rows, 2);
        let (x, y, d, names) = t.split_target("y").unwrap();
        assert_eq!(
            (x, y, d, names),
            (
                vec![1.0, 2.0, 4.0, 0.5],
                vec![3.0, -6.0],
                2,
                vec!["a".to_string(), "b".to_string()]
            )
        );
    }

    #[test]
    fn bad_files_get_clear_errors() {
        let msg = |s: &str| Table::parse_csv(s).unwrap_err().to_string();
        assert!(msg("a,b\n1,x\n").contains("line 2, column 2 ('b'): 'x' is not a number"));
        assert!(msg("a,b\n1,2\n3\n").contains("line 3 has 1 cells, the header has 2"));
        assert!(msg("a,b\n").contains("zero data rows"));
        assert!(msg("").contains("empty"));
        assert!(msg("a,b\n1,NaN\n").contains("not finite"));
        assert!(msg("a,b\n1,inf\n").contains("not finite"));
        assert!(msg("a,a\n1,2\n").contains("twice"));
        assert!(msg("a,,c\n1,2,3\n").contains("no name"));
        let t = Table::parse_csv("a,b\n1,2\n").unwrap();
        assert!(
            t.split_target("target")
                .unwrap_err()
                .to_string()
                .contains("no column named 'target'")
        );
    }

    #[test]
    fn preprocessing() {
        let mut x = vec![0.0, 1.0, 2.0, 1.0, 4.0, 1.0];
        centre_and_scale_to_range(&mut x, 3, 2, 10.0).unwrap();
        // Column 0: mean 2, range 4 → scale 2.5: (−5, 0, 5). Column 1 constant: centred to 0.
        assert_eq!(x, vec![-5.0, 0.0, 0.0, 0.0, 5.0, 0.0]);
        let mut z = vec![1.0, 3.0];
        standardise(&mut z, 2, 1).unwrap();
        assert_eq!(z, vec![-1.0, 1.0]);
    }
}
