//! Numeric CSV input through the `csv` crate: a header row, then rows whose every cell is a finite
//! number. Errors name the file, the line and the column.

use std::path::Path;

use blr::data::Table;

/// Reads a numeric CSV file with a header row into a `blr::data::Table`.
pub fn read_numeric(path: &Path) -> Result<Table, String> {
    let shown = path.display();
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let names: Vec<String> = reader
        .headers()
        .map_err(|e| format!("{shown}: header: {e}"))?
        .iter()
        .map(str::to_string)
        .collect();
    if let Some(j) = names.iter().position(String::is_empty) {
        return Err(format!("{shown}: column {} has no name", j + 1));
    }
    for (j, name) in names.iter().enumerate() {
        if names[..j].contains(name) {
            return Err(format!("{shown}: column name '{name}' appears twice"));
        }
    }
    let mut values = Vec::new();
    let mut rows = 0;
    for record in reader.records() {
        // The csv crate rejects rows with a different number of cells (its `flexible` is off).
        let record = record.map_err(|e| format!("{shown}: {e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        for (j, cell) in record.iter().enumerate() {
            let v: f64 = cell.parse().map_err(|_| {
                format!(
                    "{shown}: line {line}, column {} ('{}'): '{cell}' is not a number",
                    j + 1,
                    names[j]
                )
            })?;
            if !v.is_finite() {
                return Err(format!(
                    "{shown}: line {line}, column {} ('{}'): {v} is not finite",
                    j + 1,
                    names[j]
                ));
            }
            values.push(v);
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(format!("{shown}: no data rows"));
    }
    Ok(Table {
        names,
        values,
        rows,
    })
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
