//! System configurations from the doors' inputs: a TOML text or file, `KEY=VALUE`
//! overrides (the CLI's `--set`), or a table of overrides (Python's nested dicts).

use std::path::Path;

use crate::config::{ConfigError, SystemConfig};
use crate::error::MopedError;

/// Loads a config file, or the defaults (the paper's Table 1) when `path` is None.
pub fn load_config(path: Option<&Path>) -> Result<SystemConfig, MopedError> {
    Ok(match path {
        Some(p) => SystemConfig::from_file(p)?,
        None => SystemConfig::default(),
    })
}

/// A config file (or the defaults) with `KEY=VALUE` overrides applied in order, validated.
pub fn config_with(
    path: Option<&Path>,
    set: &[(String, String)],
) -> Result<SystemConfig, MopedError> {
    let mut cfg = load_config(path)?;
    for (key, value) in set {
        cfg.set(key, value)
            .map_err(|e| MopedError::Io(format!("--set {key}={value}: {e}")))?;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// A config from TOML text (`file` names it in errors; missing fields take their
/// defaults), validated.
pub fn parse_config(text: &str, file: &str) -> Result<SystemConfig, ConfigError> {
    let cfg = SystemConfig::from_toml_str(text, file)?;
    cfg.validate()?;
    Ok(cfg)
}

/// `cfg` with `over` (a nested table of fields) merged in, validated. A key no section
/// has is named as such, before any error of the merged config.
pub fn with_overrides(cfg: &SystemConfig, over: toml::Table) -> Result<SystemConfig, ConfigError> {
    let plain = |msg: String| ConfigError {
        file: String::new(),
        line: None,
        col: None,
        key_path: String::new(),
        msg,
    };
    let mut table: toml::Table =
        toml::from_str(&cfg.to_toml_string()).map_err(|e| plain(e.to_string()))?;
    let unknown = unknown_key(&table, &over, "");
    merge(&mut table, over);
    let merged = toml::to_string(&table).map_err(|e| plain(e.to_string()))?;
    parse_config(&merged, "<overrides>").map_err(|e| match unknown {
        Some(path) => plain(format!("unknown config key `{path}`")),
        None => e,
    })
}

/// Merges `over` into `base`, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// The first key path of `over` that `known` lacks.
fn unknown_key(known: &toml::Table, over: &toml::Table, prefix: &str) -> Option<String> {
    for (k, v) in over {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (known.get(k), v) {
            (None, _) => return Some(path),
            (Some(toml::Value::Table(kt)), toml::Value::Table(ot)) => {
                if let Some(p) = unknown_key(kt, ot, &path) {
                    return Some(p);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a section given as an array in Python's override tables is refused at
    /// its key, as it is in a file.
    #[test]
    fn an_override_section_that_is_not_a_table_is_refused() {
        let mut over = toml::Table::new();
        over.insert("l1".into(), toml::Value::Array(vec![1.into(), 2.into()]));
        let e = with_overrides(&SystemConfig::default(), over).unwrap_err();
        assert_eq!(e.key_path, "l1", "{e}");
    }
}
