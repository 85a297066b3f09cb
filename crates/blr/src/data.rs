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

/// The column names of a header line: every one non-empty and distinct.
fn parse_header(header: &str) -> std::result::Result<Vec<String>, CsvError> {
    let names: Vec<String> = header.split(',').map(|c| unquote(c).to_string()).collect();
    if let Some(j) = names.iter().position(|n| n.is_empty()) {
        return Err(CsvError::UnnamedColumn { column: j + 1 });
    }
    for (j, name) in names.iter().enumerate() {
        if names[..j].contains(name) {
            return Err(CsvError::DuplicateColumn { name: name.clone() });
        }
    }
    Ok(names)
}

/// The finite number in `cell`, the 0-based column `j` of file line `line`.
fn parse_cell(
    cell: &str,
    line: usize,
    j: usize,
    names: &[String],
) -> std::result::Result<f64, CsvError> {
    let c = unquote(cell);
    if c.is_empty() {
        return Err(CsvError::MissingValue {
            line,
            column: j + 1,
            name: names[j].clone(),
        });
    }
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
        });
    }
    Ok(v)
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
        let names = parse_header(header)?;
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
                values.push(parse_cell(cell, line, j, &names)?);
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

/// Which columns of a participant's CSV file are its inputs x (in this order) and its target y,
/// by header name.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvSchema {
    /// Input columns, in the order of the statistics' dimensions.
    pub x: Vec<String>,
    /// Target column.
    pub y: String,
}

/// A CSV file read in chunks of rows, for files too large to hold (a silo's millions of rows):
/// memory is bounded by the chunk, not the file.
///
/// The format is [`Table::parse_csv`]'s (header row, comma-separated, quotes around a cell
/// stripped, CRLF accepted, blank lines skipped); the cells of the schema's columns must be
/// finite numbers, other columns are only counted. Every error names the file, the line (header
/// = line 1) and the column, and wraps a [`CsvError`] in [`CsvError::InFile`]. A caller that
/// must not use a bad file's rows (a participant's contribution) sums every chunk first and
/// uses the sum only once [`CsvChunks::next_chunk`] has returned 0, as
/// [`crate::silo::sum_csv`] does.
#[derive(Debug)]
pub struct CsvChunks<R> {
    file: String,
    reader: R,
    names: Vec<String>,
    /// For each column of the file: its place in a parsed row (inputs 0..dx, target dx), if used.
    slot: Vec<Option<usize>>,
    dx: usize,
    chunk_rows: usize,
    /// Lines read so far (the header included): the next line's number minus one.
    line: usize,
    /// The chunk's raw lines, back to back, and each one's (start, end, line number).
    raw: Vec<u8>,
    spans: Vec<(usize, usize, usize)>,
    rows: usize,
}

impl CsvChunks<std::io::BufReader<std::fs::File>> {
    /// Opens `path` and reads its header; `chunk_rows` rows per [`CsvChunks::next_chunk`].
    pub fn open(path: &std::path::Path, schema: &CsvSchema, chunk_rows: usize) -> Result<Self> {
        let file = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|e| in_file(&file, read_error(&e)))?;
        CsvChunks::from_reader(
            std::io::BufReader::with_capacity(1 << 20, f),
            &file,
            schema,
            chunk_rows,
        )
    }
}

fn in_file(file: &str, error: CsvError) -> Error {
    Error::Csv(CsvError::InFile {
        file: file.to_string(),
        error: Box::new(error),
    })
}

fn read_error(e: &std::io::Error) -> CsvError {
    CsvError::Read {
        message: e.to_string(),
    }
}

impl<R: std::io::BufRead> CsvChunks<R> {
    /// Reads the header from `reader`; `file` names the source in error messages.
    pub fn from_reader(
        mut reader: R,
        file: &str,
        schema: &CsvSchema,
        chunk_rows: usize,
    ) -> Result<Self> {
        if chunk_rows == 0 {
            return Err(Error::Empty {
                what: "rows per CSV chunk",
            });
        }
        if schema.x.is_empty() {
            return Err(in_file(file, CsvError::NoInputColumns));
        }
        let mut buf = Vec::new();
        let mut line = 0;
        let header = loop {
            buf.clear();
            let got = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| in_file(file, read_error(&e)))?;
            line += 1;
            if got == 0 {
                return Err(in_file(file, CsvError::NoHeader));
            }
            let text =
                std::str::from_utf8(&buf).map_err(|_| in_file(file, CsvError::NotUtf8 { line }))?;
            let text = text.trim_end_matches(['\n', '\r']);
            if !text.trim().is_empty() {
                break text.to_string();
            }
        };
        let names = parse_header(&header).map_err(|e| in_file(file, e))?;
        let mut slot = vec![None; names.len()];
        let wanted = schema.x.iter().chain([&schema.y]);
        for (place, name) in wanted.enumerate() {
            let j = names.iter().position(|n| n == name).ok_or_else(|| {
                in_file(
                    file,
                    CsvError::NoSuchColumn {
                        target: name.clone(),
                    },
                )
            })?;
            if slot[j].is_some() {
                return Err(in_file(
                    file,
                    CsvError::SchemaRepeats { name: name.clone() },
                ));
            }
            slot[j] = Some(place);
        }
        Ok(CsvChunks {
            file: file.to_string(),
            reader,
            names,
            slot,
            dx: schema.x.len(),
            chunk_rows,
            line,
            raw: Vec::new(),
            spans: Vec::new(),
            rows: 0,
        })
    }

    /// The source as named in error messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The header's column names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of inputs (the schema's x columns).
    pub fn d(&self) -> usize {
        self.dx
    }

    /// Data rows returned so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Replaces `x` (row-major, `rows × d`) and `y` with the next at most `chunk_rows` rows and
    /// returns how many; 0 at the end of the file.
    ///
    /// # Errors
    /// The first bad line of the chunk (a wrong number of cells, a missing, non-numeric or
    /// non-finite value in a used column, text that is not UTF-8) or a read error; `x` and `y`
    /// then hold nothing to be used.
    pub fn next_chunk(&mut self, x: &mut Vec<f64>, y: &mut Vec<f64>) -> Result<usize> {
        use rayon::prelude::*;
        x.clear();
        y.clear();
        self.raw.clear();
        self.spans.clear();
        while self.spans.len() < self.chunk_rows {
            let start = self.raw.len();
            let got = self
                .reader
                .read_until(b'\n', &mut self.raw)
                .map_err(|e| in_file(&self.file, read_error(&e)))?;
            if got == 0 {
                break;
            }
            self.line += 1;
            let mut end = self.raw.len();
            while end > start && matches!(self.raw[end - 1], b'\n' | b'\r') {
                end -= 1;
            }
            if self.raw[start..end].iter().all(u8::is_ascii_whitespace) {
                self.raw.truncate(start);
                continue;
            }
            self.spans.push((start, end, self.line));
        }
        let rows = self.spans.len();
        let (dx, columns) = (self.dx, self.names.len());
        x.resize(rows * dx, 0.0);
        y.resize(rows, 0.0);
        let (raw, names, slot) = (&self.raw, &self.names, &self.slot);
        // Parsing the numbers is most of a streamed sum's time, and lines are independent: they
        // are parsed on the pool; the first bad line in file order is the one reported.
        let bad = x
            .par_chunks_mut(dx)
            .zip(y.par_iter_mut())
            .zip(self.spans.par_iter())
            .with_min_len(64)
            .map(|((xr, yv), &(start, end, line))| {
                let text = std::str::from_utf8(&raw[start..end])
                    .map_err(|_| CsvError::NotUtf8 { line })?;
                let mut cells = 0;
                for (j, cell) in text.split(',').enumerate() {
                    cells += 1;
                    match slot.get(j).copied().flatten() {
                        Some(p) if p < dx => xr[p] = parse_cell(cell, line, j, names)?,
                        Some(_) => *yv = parse_cell(cell, line, j, names)?,
                        None => {}
                    }
                }
                if cells != columns {
                    return Err(CsvError::RaggedRow {
                        line,
                        cells,
                        columns,
                    });
                }
                Ok(())
            })
            .find_first(|r| r.is_err());
        if let Some(Err(e)) = bad {
            x.clear();
            y.clear();
            return Err(in_file(&self.file, e));
        }
        self.rows += rows;
        Ok(rows)
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
        assert!(msg("a,b\n1,\n").contains("line 2, column 2 ('b'): missing value"));
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
    fn streamed_chunks_read_what_the_whole_file_reader_reads() {
        // Generated tables (integers, decimals, exponents, quotes, CRLF, blank lines) read by
        // `Table` and by `CsvChunks` in several chunk sizes give the same inputs and targets.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..20 {
            let (rows, cols) = (1 + next() as usize % 40, 2 + next() as usize % 5);
            let names: Vec<String> = (0..cols).map(|j| format!("c{j}")).collect();
            let mut text = names.join(",") + "\n";
            for _ in 0..rows {
                let cells: Vec<String> = (0..cols)
                    .map(|_| match next() % 4 {
                        0 => format!("{}", next() as i64 % 1000),
                        1 => format!("{:.17e}", (next() % 100_000) as f64 / 7.0 - 5000.0),
                        2 => format!("\"{}\"", (next() % 1000) as f64 / 8.0),
                        _ => format!(" {} ", -((next() % 97) as f64) / 3.0),
                    })
                    .collect();
                text += &cells.join(",");
                text += if next() % 3 == 0 { "\r\n" } else { "\n" };
                if next() % 5 == 0 {
                    text += "\n";
                }
            }
            let target = &names[case % cols];
            let (want_x, want_y, d, xnames) = Table::parse_csv(&text)
                .unwrap()
                .split_target(target)
                .unwrap();
            let schema = CsvSchema {
                x: xnames,
                y: target.clone(),
            };
            for chunk in [1, 3, 1000] {
                let mut c =
                    CsvChunks::from_reader(text.as_bytes(), "t.csv", &schema, chunk).unwrap();
                assert_eq!(c.d(), d);
                let (mut x, mut y, mut all_x, mut all_y) = (vec![], vec![], vec![], vec![]);
                while c.next_chunk(&mut x, &mut y).unwrap() > 0 {
                    all_x.extend_from_slice(&x);
                    all_y.extend_from_slice(&y);
                }
                assert_eq!(
                    (&all_x, &all_y),
                    (&want_x, &want_y),
                    "case {case}, chunk {chunk}"
                );
                assert_eq!(c.rows(), rows);
            }
        }
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
