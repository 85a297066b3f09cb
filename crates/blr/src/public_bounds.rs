//! A public bounds schema: one `column,lo,hi` line per column (header row `column,lo,hi`),
//! shipped beside a data file as `<stem>.bounds.csv` (e.g. `examples/data/diabetes.bounds.csv`).
//! With the header `column,lo,hi,group` a line may name in a fourth cell the categorical
//! variable whose level the column indicates (an indicator group of the regression's design,
//! [`crate::Design::indicator_groups`]); an empty cell is an ordinary column.
//!
//! The bounds are public knowledge — units and plausible ranges written down before anyone
//! looks at the rows — so mapping every value by them is a per-record transformation that
//! costs no privacy, unlike centring or standardising with the data's own mean, sd or range
//! (which uses every row, test rows included, outside the privacy budget). Values outside a
//! column's bounds are clipped to them (also per record).

use std::path::{Path, PathBuf};

/// (lo, hi) per column name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PublicBounds {
    /// (name, lo, hi) in the schema's order.
    pub bounds: Vec<(String, f64, f64)>,
    /// (name, group) of the columns whose `group` cell is not empty, in the schema's order.
    pub groups: Vec<(String, String)>,
}

/// Where the schema of `data` lives: `<dir>/<stem>.bounds.csv`.
pub fn schema_path(data: &Path) -> PathBuf {
    let mut name = data
        .file_stem()
        .map_or_else(Default::default, |s| s.to_os_string());
    name.push(".bounds.csv");
    data.with_file_name(name)
}

impl PublicBounds {
    /// Parses a schema. Errors name the line (1-based, counting the header as line 1) and say
    /// what is wrong; CRLF line ends are accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        let with_groups = match lines.next() {
            Some((_, header)) if header.split(',').map(str::trim).eq(["column", "lo", "hi"]) => {
                false
            }
            Some((_, header))
                if header
                    .split(',')
                    .map(str::trim)
                    .eq(["column", "lo", "hi", "group"]) =>
            {
                true
            }
            Some((_, header)) => {
                return Err(format!(
                    "line 1: header must be `column,lo,hi` or `column,lo,hi,group`, got `{header}`"
                ));
            }
            None => return Err("empty schema: expected a header row `column,lo,hi`".into()),
        };
        let mut bounds: Vec<(String, f64, f64)> = Vec::new();
        let mut groups: Vec<(String, String)> = Vec::new();
        for (line, text) in lines.filter(|(_, l)| !l.is_empty()) {
            let cells: Vec<&str> = text.split(',').map(str::trim).collect();
            let (name, lo, hi) = match (with_groups, &cells[..]) {
                (false, [name, lo, hi]) | (true, [name, lo, hi]) => (*name, *lo, *hi),
                (true, [name, lo, hi, group]) => {
                    if !group.is_empty() {
                        groups.push((name.to_string(), group.to_string()));
                    }
                    (*name, *lo, *hi)
                }
                _ => {
                    return Err(format!(
                        "line {line}: expected {} cells `column,lo,hi{}`, got {}",
                        if with_groups { "3 or 4" } else { "3" },
                        if with_groups { "[,group]" } else { "" },
                        cells.len()
                    ));
                }
            };
            let number = |cell: &str| {
                cell.parse::<f64>()
                    .map_err(|_| format!("line {line}: '{cell}' is not a number"))
            };
            let (lo, hi) = (number(lo)?, number(hi)?);
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(format!(
                    "line {line}: column '{name}': bounds [{lo}, {hi}] must be finite with lo < hi"
                ));
            }
            if bounds.iter().any(|(n, _, _)| n == name) {
                return Err(format!("line {line}: column '{name}' appears twice"));
            }
            bounds.push((name.to_string(), lo, hi));
        }
        Ok(Self { bounds, groups })
    }

    /// The indicator group `column` belongs to, if its line names one.
    pub fn group_of(&self, column: &str) -> Option<&str> {
        self.groups
            .iter()
            .find(|(n, _)| n == column)
            .map(|(_, g)| g.as_str())
    }

    /// The positions in `names` of each group's columns, groups in order of first appearance
    /// ([`crate::Design::indicator_groups`]).
    pub fn indicator_groups(&self, names: &[String]) -> Vec<Vec<usize>> {
        crate::design::groups_by_label(names.iter().map(|n| self.group_of(n))).0
    }

    /// (lo, hi) of `column`.
    pub fn of(&self, column: &str) -> Result<(f64, f64), String> {
        self.bounds
            .iter()
            .find(|(n, _, _)| n == column)
            .map(|&(_, lo, hi)| (lo, hi))
            .ok_or_else(|| format!("no public bounds for column '{column}' (add `{column},lo,hi`)"))
    }

    /// Maps row-major data (rows of `names.len()` values, column j named `names[j]`) onto
    /// [−half, half] per column: (clip(v, lo, hi) − (lo + hi)/2) / (hi − lo) · 2·half. Returns
    /// how many values were clipped.
    pub fn scale(&self, x: &mut [f64], names: &[String], half: f64) -> Result<usize, String> {
        if names.is_empty() {
            return Err("no columns to scale".into());
        }
        let ranges = names
            .iter()
            .map(|c| self.of(c))
            .collect::<Result<Vec<_>, _>>()?;
        let mut clipped = 0;
        for row in x.chunks_mut(names.len()) {
            for (v, &(lo, hi)) in row.iter_mut().zip(&ranges) {
                if *v < lo || *v > hi {
                    clipped += 1;
                }
                *v = (v.clamp(lo, hi) - (lo + hi) / 2.0) / (hi - lo) * 2.0 * half;
            }
        }
        Ok(clipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_maps_the_public_range_onto_plus_minus_half_and_clips() {
        let b = PublicBounds::parse("column,lo,hi\r\na,0,10\r\nb,-2,2\r\n").unwrap();
        let names = vec!["a".to_string(), "b".to_string()];
        let mut x = vec![0.0, 2.0, 5.0, -1.0, 20.0, 0.0];
        assert_eq!(b.scale(&mut x, &names, 1.0).unwrap(), 1);
        assert_eq!(x, vec![-1.0, 1.0, 0.0, -0.5, 1.0, 0.0]);
        assert!(b.of("c").unwrap_err().contains("'c'"));
    }

    #[test]
    fn bad_schemas_name_the_line() {
        for (text, needle) in [
            ("", "header"),
            ("name,lo,hi\n", "line 1"),
            ("column,lo,hi\na,1\n", "line 2: expected 3 cells"),
            ("column,lo,hi\na,0,1\nb,x,1\n", "line 3: 'x'"),
            ("column,lo,hi\na,1,1\n", "lo < hi"),
            ("column,lo,hi\na,0,1\na,0,2\n", "twice"),
        ] {
            let e = PublicBounds::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_fourth_cell_names_an_indicators_group() {
        let text =
            "column,lo,hi,group\nage,0,100\nred,0,1,colour\nm,0,1,size\nblue,0,1,colour\nw,0,1,\n";
        let b = PublicBounds::parse(text).unwrap();
        assert_eq!(b.bounds.len(), 5);
        assert_eq!(b.group_of("blue"), Some("colour"));
        assert_eq!(b.group_of("w"), None);
        let names: Vec<String> = ["blue", "age", "m", "red"].map(String::from).to_vec();
        assert_eq!(b.indicator_groups(&names), vec![vec![0, 3], vec![2]]);
        let e = PublicBounds::parse("column,lo,hi\nred,0,1,colour\n").unwrap_err();
        assert!(
            e.contains("line 2: expected 3 cells `column,lo,hi`, got 4"),
            "{e}"
        );
        let e = PublicBounds::parse("column,lo,hi,group\nred,0,1,colour,x\n").unwrap_err();
        assert!(e.contains("expected 3 or 4 cells"), "{e}");
    }

    #[test]
    fn the_schema_sits_beside_the_data() {
        assert_eq!(
            schema_path(Path::new("examples/data/diabetes.csv")),
            Path::new("examples/data/diabetes.bounds.csv")
        );
    }
}
