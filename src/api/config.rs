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
    apply_set(&mut cfg, set)?;
    Ok(cfg)
}

/// `KEY=VALUE` overrides applied to `cfg` in order, then validated.
pub fn apply_set(cfg: &mut SystemConfig, set: &[(String, String)]) -> Result<(), MopedError> {
    for (key, value) in set {
        cfg.set(key, value)
            .map_err(|e| MopedError::Io(format!("--set {key}={value}: {e}")))?;
    }
    cfg.validate()?;
    Ok(())
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
        Some((path, valid)) => plain(format!(
            "unknown config key `{path}`; valid keys here: {}",
            valid.join(", ")
        )),
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

/// The first key path of `over` that `known` lacks, with the keys its table has (the
/// sections at the top, a section's keys below).
fn unknown_key(
    known: &toml::Table,
    over: &toml::Table,
    prefix: &str,
) -> Option<(String, Vec<String>)> {
    for (k, v) in over {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (known.get(k), v) {
            (None, _) => {
                let valid = known.keys().map(|k| format!("{prefix}{}{k}", dot(prefix)));
                return Some((path, valid.collect()));
            }
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

fn dot(prefix: &str) -> &'static str {
    if prefix.is_empty() {
        ""
    } else {
        "."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31: a misspelt key names the keys its section has.
    #[test]
    fn an_unknown_override_lists_the_valid_keys_of_its_section() {
        let over: toml::Table = toml::from_str("[l2]\nlatncy = 3").unwrap();
        let e = with_overrides(&SystemConfig::default(), over).unwrap_err();
        assert_eq!(
            e.msg,
            "unknown config key `l2.latncy`; valid keys here: l2.assoc, l2.latency, l2.size_bytes"
        );
        let over: toml::Table = toml::from_str("[l3]\nlatency = 3").unwrap();
        let e = with_overrides(&SystemConfig::default(), over).unwrap_err();
        assert!(
            e.msg.contains("`l3`; valid keys here: directory, l1, l2,"),
            "{e}"
        );
    }

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
