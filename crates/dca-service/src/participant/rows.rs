//! Where a participant's rows come from: a CSV file it re-reads in chunks whenever a round needs
//! them (`dpdist participant --data`), or a matrix a host process handed over through
//! `libdpdist_net` (a hospital's C++ system, an R session). Either way a round sees the same
//! chunks of the job's columns, so a contribution does not depend on where the rows live.

use std::path::{Path, PathBuf};

use super::files::io_at;
use crate::{Error, Result};

/// A participant's rows, checked from end to end before it answers any job.
#[derive(Debug, Clone)]
pub enum Rows {
    /// A CSV file with a header row naming the columns.
    Csv {
        /// The file.
        path: PathBuf,
        /// Its column names, in file order.
        columns: Vec<String>,
        /// Its data rows.
        rows: usize,
    },
    /// A row-major matrix, one name per column, held in this process.
    Memory {
        /// Column names.
        columns: Vec<String>,
        /// `rows × columns.len()` values, row after row.
        values: Vec<f64>,
        /// Rows.
        rows: usize,
    },
}

impl Rows {
    /// The rows of a CSV file (a header naming the columns, a number in every cell of every
    /// row), read through once to check them.
    pub fn csv(path: &Path) -> Result<Self> {
        let (columns, rows) = check_data(path)?;
        Ok(Rows::Csv {
            path: path.to_path_buf(),
            columns,
            rows,
        })
    }

    /// A host's matrix: `values` holds `values.len() / columns.len()` rows, row after row. Column
    /// names must be distinct and non-empty; a NaN (R's `NA`, a missing value) or an infinity is
    /// refused with the place it is at.
    pub fn memory(columns: Vec<String>, values: Vec<f64>) -> Result<Self> {
        let bad = |m: String| Err(Error::InvalidSpec(format!("the participant's rows: {m}")));
        if columns.is_empty() {
            return bad("no columns".into());
        }
        for (j, name) in columns.iter().enumerate() {
            if name.trim().is_empty() {
                return bad(format!("column {} has an empty name", j + 1));
            }
            if columns[..j].contains(name) {
                return bad(format!("column name {name:?} appears twice"));
            }
        }
        if !values.len().is_multiple_of(columns.len()) {
            return bad(format!(
                "{} values do not fill rows of {} columns",
                values.len(),
                columns.len()
            ));
        }
        let rows = values.len() / columns.len();
        if rows == 0 {
            return bad("no data rows".into());
        }
        if let Some(k) = values.iter().position(|v| !v.is_finite()) {
            let what = if values[k].is_nan() {
                "a missing value (NaN/NA)"
            } else {
                "an infinity"
            };
            return bad(format!(
                "row {}, column {:?} is {what}",
                k / columns.len() + 1,
                columns[k % columns.len()]
            ));
        }
        Ok(Rows::Memory {
            columns,
            values,
            rows,
        })
    }

    /// The column names.
    pub fn columns(&self) -> &[String] {
        match self {
            Rows::Csv { columns, .. } | Rows::Memory { columns, .. } => columns,
        }
    }

    /// The number of data rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Csv { rows, .. } | Rows::Memory { rows, .. } => *rows,
        }
    }

    /// Whether there are no rows (never true for rows made by [`Rows::csv`] or
    /// [`Rows::memory`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(x, y)` on chunks of at most `chunk_rows` rows of the columns `schema` names:
    /// `x` row-major `n × schema.x.len()`, `y` the target. `f` may change the chunk in place (it
    /// is a scratch copy).
    pub fn for_each_chunk(
        &self,
        schema: &blr::data::CsvSchema,
        chunk_rows: usize,
        mut f: impl FnMut(&mut Vec<f64>, &mut Vec<f64>) -> Result<()>,
    ) -> Result<()> {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        match self {
            Rows::Csv { path, .. } => {
                let mut chunks = blr::data::CsvChunks::open(path, schema, chunk_rows)?;
                while chunks.next_chunk(&mut x, &mut y)? > 0 {
                    f(&mut x, &mut y)?;
                }
            }
            Rows::Memory {
                columns, values, ..
            } => {
                let index = |name: &String| {
                    columns.iter().position(|c| c == name).ok_or_else(|| {
                        Error::InvalidSpec(format!(
                            "the participant's rows have no column {name:?}"
                        ))
                    })
                };
                let xi = schema.x.iter().map(index).collect::<Result<Vec<_>>>()?;
                let yi = index(&schema.y)?;
                for chunk in values.chunks(chunk_rows.max(1) * columns.len()) {
                    x.clear();
                    y.clear();
                    for row in chunk.chunks_exact(columns.len()) {
                        x.extend(xi.iter().map(|&j| row[j]));
                        y.push(row[yi]);
                    }
                    f(&mut x, &mut y)?;
                }
            }
        }
        Ok(())
    }
}

/// Checks a participant's data file from end to end (a header naming the columns, a number in
/// every cell of every row) in chunks, before it answers any job; its column names and rows.
fn check_data(path: &Path) -> Result<(Vec<String>, usize)> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| io_at(e, "--data", path))?;
    let mut header = String::new();
    std::io::BufReader::new(file)
        .read_line(&mut header)
        .map_err(|e| io_at(e, "--data", path))?;
    let columns: Vec<String> = header
        .trim_end_matches(['\r', '\n'])
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    let (y, x) = columns
        .split_last()
        .ok_or_else(|| Error::InvalidSpec(format!("--data {}: no header", path.display())))?;
    let schema = blr::data::CsvSchema {
        x: x.to_vec(),
        y: y.clone(),
    };
    let mut chunks = blr::data::CsvChunks::open(path, &schema, 1 << 14)?;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    while chunks.next_chunk(&mut xs, &mut ys)? > 0 {}
    if chunks.rows() == 0 {
        return Err(Error::InvalidSpec(format!(
            "--data {}: no data rows",
            path.display()
        )));
    }
    Ok((columns, chunks.rows()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_matrix_gives_the_same_chunks_as_the_same_rows_in_a_file() {
        let dir = crate::scratch_dir("rows-chunks");
        let path = dir.join("rows.csv");
        std::fs::write(&path, "a,b,y\n1,2,3\n4.5,-5,6\n7,8,9.25\n").unwrap();
        let file = Rows::csv(&path).unwrap();
        let matrix = Rows::memory(
            names(&["a", "b", "y"]),
            vec![1.0, 2.0, 3.0, 4.5, -5.0, 6.0, 7.0, 8.0, 9.25],
        )
        .unwrap();
        // The job reads its columns in its own order, not the holder's.
        let schema = blr::data::CsvSchema {
            x: names(&["b", "a"]),
            y: "y".into(),
        };
        let collect = |rows: &Rows| {
            let mut seen = Vec::new();
            rows.for_each_chunk(&schema, 2, |x, y| {
                seen.push((x.clone(), y.clone()));
                Ok(())
            })
            .unwrap();
            seen
        };
        let expected = vec![
            (vec![2.0, 1.0, -5.0, 4.5], vec![3.0, 6.0]),
            (vec![8.0, 7.0], vec![9.25]),
        ];
        assert_eq!(collect(&file), expected);
        assert_eq!(collect(&matrix), expected);
        assert_eq!((file.len(), matrix.len()), (3, 3));
        assert_eq!(file.columns(), matrix.columns());
    }

    #[test]
    fn a_bad_matrix_is_refused_with_its_place() {
        let err = |c: &[&str], v: Vec<f64>| Rows::memory(names(c), v).unwrap_err().to_string();
        assert!(err(&["a", "y"], vec![1.0, 2.0, f64::NAN, 4.0]).contains("row 2, column \"a\""));
        assert!(err(&["a", "y"], vec![1.0, f64::INFINITY]).contains("infinity"));
        assert!(err(&["a", "y"], vec![1.0, 2.0, 3.0]).contains("do not fill rows"));
        assert!(err(&["a", "a"], vec![1.0, 2.0]).contains("appears twice"));
        assert!(err(&["a", " "], vec![1.0, 2.0]).contains("empty name"));
        assert!(err(&["a", "y"], vec![]).contains("no data rows"));
        assert!(err(&[], vec![]).contains("no columns"));
        let rows = Rows::memory(names(&["a", "y"]), vec![1.0, 2.0]).unwrap();
        let schema = blr::data::CsvSchema {
            x: names(&["bmi"]),
            y: "y".into(),
        };
        let missing = rows.for_each_chunk(&schema, 8, |_, _| Ok(()));
        assert!(missing.unwrap_err().to_string().contains("\"bmi\""));
    }
}
