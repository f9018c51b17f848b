//! The configuration gem5 writes beside its statistics (`config.ini`, `config.json`),
//! read far enough to find an object's parameters, and the Ruby clock period from them.
//!
//! `config.ini` has one `[path]` section per SimObject with `key=value` lines; references
//! to other objects are their paths and vector parameters are blank-separated.
//! `config.json` nests the same objects as children by name, each with its `path`;
//! children that are also parameters (a `clk_domain` created for its owner) appear as nested
//! objects, shared ones as path strings. Both are reduced here to the same table of
//! parameters per object path, with values as `config.ini` would spell them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::textparse::{FileError, PosError};

/// An error reading gem5's configuration: `file:line:col: msg`, or `file: msg` when the file
/// could not be read at all.
pub type ConfigFileError = FileError;

/// The parameters of every object of one configuration file.
#[derive(Clone, Debug, Default)]
pub struct Gem5Config {
    /// The file they came from.
    pub file: String,
    objects: BTreeMap<String, BTreeMap<String, String>>,
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Gem5Config {
    /// Reads `config.ini` text; `file` names it in errors.
    pub fn parse_ini(text: &str, file: &str) -> Result<Gem5Config, ConfigFileError> {
        let mut objects: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut section: Option<String> = None;
        for (n, raw) in text.split('\n').enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let err = |col: usize, msg: &str| -> ConfigFileError {
                PosError::new(file, (to_u32(n + 1), to_u32(col)), msg).into()
            };
            let body = line.trim_start();
            let indent = line.chars().count() - body.chars().count();
            if body.is_empty() || body.starts_with(';') || body.starts_with('#') {
                continue;
            }
            if let Some(rest) = body.strip_prefix('[') {
                let Some(name) = rest.trim_end().strip_suffix(']') else {
                    let col = indent + 1 + rest.trim_end().chars().count() + 1;
                    return Err(err(col, "expected `]` closing the section name"));
                };
                let name = name.trim().to_string();
                objects.entry(name.clone()).or_default();
                section = Some(name);
                continue;
            }
            let Some((key, value)) = body.split_once('=') else {
                return Err(err(indent + 1, "expected `[section]` or `key=value`"));
            };
            let Some(sec) = &section else {
                return Err(err(
                    indent + 1,
                    "expected a `[section]` line before `key=value`",
                ));
            };
            if key.trim().is_empty() {
                return Err(err(indent + 1, "expected a key before `=`"));
            }
            objects
                .entry(sec.clone())
                .or_default()
                .insert(key.trim().to_string(), value.trim().to_string());
        }
        Ok(Gem5Config {
            file: file.to_string(),
            objects,
        })
    }

    /// Reads `config.json` text; `file` names it in errors.
    pub fn parse_json(text: &str, file: &str) -> Result<Gem5Config, ConfigFileError> {
        let root: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            let at = json_offset(text, e.line(), e.column());
            PosError::at(
                file,
                text,
                at,
                format!("expected gem5's config.json (JSON): {e}"),
            )
        })?;
        let mut cfg = Gem5Config {
            file: file.to_string(),
            objects: BTreeMap::new(),
        };
        cfg.add_json_object(&root);
        Ok(cfg)
    }

    /// Records one object (a JSON object with a `path`) and, depth first, its children.
    fn add_json_object(&mut self, obj: &serde_json::Value) {
        use serde_json::Value;
        let Some(map) = obj.as_object() else { return };
        let Some(path) = map.get("path").and_then(Value::as_str) else {
            return;
        };
        let mut params = BTreeMap::new();
        for (key, value) in map {
            let text = match value {
                Value::Object(m) if m.contains_key("path") => {
                    self.add_json_object(value);
                    m.get("path").and_then(Value::as_str).map(str::to_string)
                }
                Value::Array(items) => {
                    let words: Vec<String> = items
                        .iter()
                        .filter_map(|item| match item {
                            Value::Object(m) if m.contains_key("path") => {
                                self.add_json_object(item);
                                m.get("path").and_then(Value::as_str).map(str::to_string)
                            }
                            other => json_word(other),
                        })
                        .collect();
                    Some(words.join(" "))
                }
                other => json_word(other),
            };
            if let Some(text) = text {
                params.insert(key.clone(), text);
            }
        }
        self.objects.insert(path.to_string(), params);
    }

    /// The parameters of the object at `path` (`system.ruby`).
    pub fn object(&self, path: &str) -> Option<&BTreeMap<String, String>> {
        self.objects.get(path)
    }

    /// One parameter of one object.
    pub fn param(&self, path: &str, key: &str) -> Option<&str> {
        self.object(path)?.get(key).map(String::as_str)
    }

    /// The clock period in ticks of the clock domain at `domain`: a source domain's `clock`
    /// at its `init_perf_level`, or a derived domain's parent period times `clk_divider`.
    pub fn domain_period(&self, domain: &str) -> Result<u64, String> {
        let mut at = domain.to_string();
        let mut factor = 1u64;
        // A chain of derived domains ends at a source domain; a loop would be a broken file.
        for _ in 0..16 {
            let Some(obj) = self.object(&at) else {
                return Err(format!("{}: no object `{at}`", self.file));
            };
            if let Some(clock) = obj.get("clock") {
                let level: usize = match obj.get("init_perf_level") {
                    Some(l) => l.parse().map_err(|_| {
                        format!(
                            "{}: `{at}.init_perf_level` is `{l}`, not a level",
                            self.file
                        )
                    })?,
                    None => 0,
                };
                let periods: Vec<&str> = clock.split_whitespace().collect();
                let Some(text) = periods.get(level).or(periods.first()) else {
                    return Err(format!("{}: `{at}.clock` is empty", self.file));
                };
                let ticks: u64 = text.parse().map_err(|_| {
                    format!(
                        "{}: `{at}.clock` is `{clock}`, not a period in ticks",
                        self.file
                    )
                })?;
                return ticks
                    .checked_mul(factor)
                    .filter(|&t| t > 0)
                    .ok_or_else(|| format!("{}: `{at}.clock` gives no usable period", self.file));
            }
            match (obj.get("clk_divider"), obj.get("clk_domain")) {
                (Some(div), Some(parent)) => {
                    let div: u64 = div.parse().map_err(|_| {
                        format!("{}: `{at}.clk_divider` is `{div}`, not a number", self.file)
                    })?;
                    factor = factor.saturating_mul(div);
                    at = parent.clone();
                }
                _ => {
                    return Err(format!(
                        "{}: `{at}` has neither `clock` nor `clk_divider` and `clk_domain`",
                        self.file
                    ))
                }
            }
        }
        Err(format!(
            "{}: the clock domains from `{domain}` do not end at a clock",
            self.file
        ))
    }

    /// The period in ticks of the Ruby clock: `system.ruby`'s `clk_domain`.
    pub fn ruby_clock_period(&self) -> Result<u64, String> {
        let Some(domain) = self.param("system.ruby", "clk_domain") else {
            return Err(format!(
                "{}: no `clk_domain` for `system.ruby` (is this a Ruby run?)",
                self.file
            ));
        };
        self.domain_period(domain)
    }
}

/// The byte offset of serde_json's error place: lines from 1, and the column counts bytes
/// from 1 up to the byte that failed, so a newline that failed is column 0 of the next line.
fn json_offset(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text
        .split('\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    (start + col).saturating_sub(1)
}

fn json_word(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_string()),
        _ => None,
    }
}

/// The configuration of the gem5 output folder `dir`: `config.ini` if present, else
/// `config.json`. `Ok(None)` when it has neither.
pub fn read_config(dir: &Path) -> Result<Option<Gem5Config>, ConfigFileError> {
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).map_err(|e| {
            ConfigFileError::unreadable(p.display().to_string(), format!("cannot read: {e}"))
        })
    };
    let ini = dir.join("config.ini");
    if ini.is_file() {
        return Gem5Config::parse_ini(&read(&ini)?, &ini.display().to_string()).map(Some);
    }
    let json = dir.join("config.json");
    if json.is_file() {
        return Gem5Config::parse_json(&read(&json)?, &json.display().to_string()).map(Some);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INI: &str = "[root]\ntype=Root\nchildren=system\n\n[system.ruby]\ntype=RubySystem\n\
                       clk_domain=system.ruby.clk_domain\n\n[system.ruby.clk_domain]\n\
                       type=SrcClockDomain\nclock=1000 2000\ninit_perf_level=1\n\n\
                       [system.cpu_clk]\ntype=DerivedClockDomain\nclk_divider=4\n\
                       clk_domain=system.ruby.clk_domain\n";

    #[test]
    fn ini_clock_and_derived_domains() {
        let c = Gem5Config::parse_ini(INI, "config.ini").unwrap();
        assert_eq!(c.param("system.ruby", "type"), Some("RubySystem"));
        assert_eq!(c.ruby_clock_period(), Ok(2000));
        assert_eq!(c.domain_period("system.cpu_clk"), Ok(8000));
        assert!(c
            .domain_period("system.nothing")
            .unwrap_err()
            .contains("no object `system.nothing`"));
    }

    #[test]
    fn json_nested_and_shared_domains() {
        let nested = r#"{"type": "Root", "path": "root", "name": null,
            "system": {"type": "System", "path": "system",
              "clk_domain": {"type": "SrcClockDomain", "path": "system.clk_domain", "clock": [1000]},
              "ruby": {"type": "RubySystem", "path": "system.ruby",
                "clk_domain": {"type": "SrcClockDomain", "path": "system.ruby.clk_domain", "clock": [500]}}}}"#;
        let c = Gem5Config::parse_json(nested, "config.json").unwrap();
        assert_eq!(
            c.param("system.ruby", "clk_domain"),
            Some("system.ruby.clk_domain")
        );
        assert_eq!(c.ruby_clock_period(), Ok(500));
        let shared = nested.replace(
            r#"{"type": "SrcClockDomain", "path": "system.ruby.clk_domain", "clock": [500]}"#,
            r#""system.clk_domain""#,
        );
        let c = Gem5Config::parse_json(&shared, "config.json").unwrap();
        assert_eq!(c.ruby_clock_period(), Ok(1000));
    }

    /// Found by fuzzing: a newline inside a string was reported at column 0; it is the end
    /// of the line it closes. Columns count characters, not serde_json's bytes.
    #[test]
    fn json_errors_point_at_the_failing_character() {
        let e = Gem5Config::parse_json("{\"path\": \"a\nb\"}", "c.json").unwrap_err();
        assert_eq!((e.line, e.col), (1, 12));
        let e = Gem5Config::parse_json("{\"\u{e9}\u{e9}\": x}", "c.json").unwrap_err();
        assert_eq!((e.line, e.col), (1, 8));
    }

    #[test]
    fn errors_name_the_file_and_position() {
        let e = Gem5Config::parse_ini("[system\nclock=1\n", "c.ini").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.ini:1:8: expected `]` closing the section name"
        );
        let e = Gem5Config::parse_ini("[a]\n  just words\n", "c.ini").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.ini:2:3: expected `[section]` or `key=value`"
        );
        let e = Gem5Config::parse_ini("clock=1\n", "c.ini").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.ini:1:1: expected a `[section]` line before `key=value`"
        );
        let e = Gem5Config::parse_json("{\n  \"path\": 1,\n  oops\n}", "c.json").unwrap_err();
        assert_eq!((e.line, e.col), (3, 3));
        assert!(e
            .to_string()
            .starts_with("c.json:3:3: expected gem5's config.json"));
        let c = Gem5Config::parse_ini("[system.ruby]\nclk_domain=d\n[d]\nclock=fast\n", "c.ini")
            .unwrap();
        assert_eq!(
            c.ruby_clock_period().unwrap_err(),
            "c.ini: `d.clock` is `fast`, not a period in ticks"
        );
        let c = Gem5Config::parse_ini("[x]\na=1\n", "c.ini").unwrap();
        assert!(c
            .ruby_clock_period()
            .unwrap_err()
            .contains("is this a Ruby run?"));
        let c = Gem5Config::parse_ini(
            "[system.ruby]\nclk_domain=a\n[a]\nclk_divider=2\nclk_domain=a\n",
            "c.ini",
        )
        .unwrap();
        assert!(c
            .ruby_clock_period()
            .unwrap_err()
            .contains("do not end at a clock"));
    }
}
