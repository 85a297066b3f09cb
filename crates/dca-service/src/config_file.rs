//! `--config FILE` for the servers: a TOML file whose keys are the subcommand's long options
//! (`max_connections = 512` for `--max-connections 512`). Options given on the command line win;
//! the file only fills in the others. Secrets never sit in it: tokens and keys are named by
//! their files (`admin_token_file`, `key`), and a key that looks like a secret itself is refused.

use std::ffi::OsString;
use std::path::Path;

use crate::{Error, Result};

/// Keys refused in a config file: they would put a secret in it.
const SECRET_KEYS: &[&str] = &[
    "admin_token",
    "analyst_token",
    "token",
    "secret",
    "password",
];

/// The command line `args` with the options of the TOML file named by `--config FILE` (or
/// `--config=FILE`) added after it for every key not given on the command line; `args`
/// unchanged without `--config`.
///
/// # Errors
/// The file cannot be read or is not TOML; a value is not a string, number, boolean or array of
/// them; a key names a secret.
pub fn merge_config_file(args: Vec<OsString>) -> Result<Vec<OsString>> {
    let Some((at, path)) = config_path(&args) else {
        return Ok(args);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::InvalidSpec(format!("--config {}: {e}", path.display())))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| Error::InvalidSpec(format!("--config {}: {e}", path.display())))?;
    let given: Vec<String> = args
        .iter()
        .filter_map(|a| a.to_str())
        .filter_map(|a| a.strip_prefix("--"))
        .map(|a| a.split('=').next().unwrap_or(a).to_string())
        .collect();
    let mut out: Vec<OsString> = args.iter().filter(|a| !is_config(a)).cloned().collect();
    // The config's own value is dropped with it (`--config FILE`: two words).
    if at + 1 < args.len() && args[at] == "--config" {
        out.remove(at);
    }
    let mut added = Vec::new();
    for (key, value) in table {
        if SECRET_KEYS.contains(&key.as_str()) {
            return Err(Error::InvalidSpec(format!(
                "--config {}: `{key}` would put a secret in the file; name the file that holds \
                 it instead (e.g. `{key}_file`)",
                path.display()
            )));
        }
        let flag = key.replace('_', "-");
        if given.contains(&flag) {
            continue;
        }
        let text = match value {
            toml::Value::Boolean(true) => {
                added.push(OsString::from(format!("--{flag}")));
                continue;
            }
            toml::Value::Boolean(false) => continue,
            toml::Value::Array(items) => items
                .iter()
                .map(scalar)
                .collect::<Option<Vec<_>>>()
                .map(|v| v.join(",")),
            other => scalar(&other),
        }
        .ok_or_else(|| {
            Error::InvalidSpec(format!(
                "--config {}: `{key}` must be a string, number, boolean or array of them",
                path.display()
            ))
        })?;
        added.push(OsString::from(format!("--{flag}")));
        added.push(OsString::from(text));
    }
    out.extend(added);
    Ok(out)
}

fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

fn is_config(arg: &OsString) -> bool {
    arg.to_str()
        .is_some_and(|a| a == "--config" || a.starts_with("--config="))
}

/// Where `--config` is in `args`, and the file it names.
fn config_path(args: &[OsString]) -> Option<(usize, std::path::PathBuf)> {
    let at = args.iter().position(is_config)?;
    let arg = args[at].to_str()?;
    let path = match arg.strip_prefix("--config=") {
        Some(p) => p.into(),
        None => Path::new(args.get(at + 1)?).to_path_buf(),
    };
    Some((at, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_file_fills_in_what_the_command_line_leaves_out() {
        let dir = crate::scratch_dir("config-file");
        let file = dir.join("node.toml");
        std::fs::write(
            &file,
            "index = 2\nlisten = \"127.0.0.1:8443\"\nmax_connections = 64\n\
             nodes = [\"https://a\", \"https://b\"]\nverbose = true\nquiet = false\n",
        )
        .unwrap();
        let merged = merge_config_file(args(&[
            "dpdist",
            "node",
            "--config",
            file.to_str().unwrap(),
            "--index",
            "0",
        ]))
        .unwrap();
        let merged: Vec<&str> = merged.iter().map(|a| a.to_str().unwrap()).collect();
        // The command line's --index wins; the others come from the file; --config is gone.
        assert_eq!(&merged[..4], ["dpdist", "node", "--index", "0"]);
        let rest = merged[4..].join(" ");
        for expect in [
            "--listen 127.0.0.1:8443",
            "--max-connections 64",
            "--nodes https://a,https://b",
            "--verbose",
        ] {
            assert!(rest.contains(expect), "{rest}");
        }
        assert!(
            !rest.contains("--index") && !rest.contains("quiet"),
            "{rest}"
        );
        // A secret in the file is refused; so is a file that is not TOML.
        std::fs::write(&file, "admin_token = \"hunter2\"\n").unwrap();
        let refused = merge_config_file(args(&[
            "dpdist",
            "node",
            "--config",
            file.to_str().unwrap(),
        ]));
        assert!(matches!(refused, Err(Error::InvalidSpec(m)) if m.contains("secret")));
        std::fs::write(&file, "index = [\n").unwrap();
        assert!(
            merge_config_file(args(&[
                "dpdist",
                "node",
                "--config",
                file.to_str().unwrap()
            ]))
            .is_err()
        );
        // Without --config nothing changes.
        assert_eq!(
            merge_config_file(args(&["dpdist", "node"])).unwrap(),
            args(&["dpdist", "node"])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
