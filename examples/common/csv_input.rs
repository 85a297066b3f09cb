//! Numeric CSV input: the one reader of every tool, `blr::data::Table::parse_csv` (the `dpdist`
//! CLI reads with it too): a header row, then rows whose every cell is a finite number; CRLF
//! line ends accepted. Errors name the file, the line (header = line 1) and the column.

use std::path::Path;

use blr::data::Table;

/// Reads a numeric CSV file with a header row into a `blr::data::Table`.
pub fn read_numeric(path: &Path) -> Result<Table, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    Table::parse_csv(&text).map_err(|e| format!("{shown}: {e}"))
}

/// Reads a numeric CSV whose column `label` holds 0/1 class labels: the row-major inputs (every
/// other column, in file order), the labels and the number of inputs.
pub fn read_binary_labelled(
    path: &Path,
    label: &str,
) -> Result<(Vec<f64>, Vec<f64>, usize), String> {
    let table = read_numeric(path)?;
    let (x, y, d, _) = table
        .split_target(label)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(row) = y.iter().position(|&v| v != 0.0 && v != 1.0) {
        return Err(format!(
            "{}: data row {}: label {} is not 0 or 1",
            path.display(),
            row + 1,
            y[row]
        ));
    }
    Ok((x, y, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CRLF files: the line named is the file's line (header = 1), as `dpdist blr` reports it.
    #[test]
    fn errors_name_the_right_line_in_crlf_files() {
        let path = std::env::temp_dir().join(format!("dpdist-csv-crlf-{}.csv", std::process::id()));
        std::fs::write(&path, "a,b\r\n1,2\r\n3,x\r\n5,6\r\n").unwrap();
        let e = read_numeric(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(e.contains("line 3") && e.contains("'x'"), "{e}");
        assert!(e.starts_with(&path.display().to_string()), "{e}");
    }
}
