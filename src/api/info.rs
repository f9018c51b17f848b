//! The catalogue of what the simulator declares, without a simulation of the user's
//! (`moped info config`, `moped info stats`, `moped.info_config()`, `moped.info_stats()`).
//!
//! - Parameters come from the declarations a config file is read with: the keys and
//!   defaults from [`SystemConfig::default`], each key's type, allowed values and
//!   description from the serde structs' schema (schemars reads their doc comments).
//! - Statistics come from the registries of small runs of every kind (an MPI schedule and
//!   a program, under each design): whatever code registers a statistic, the catalogue
//!   has it. Indices (`cpu3`, `moped0.engine1`, `vnet2`) and the names of protocol
//!   states, events and message types become placeholders, so one entry stands for all
//!   the names a larger system or another workload writes.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;
use crate::stats::{Accrual, StatValue, StatsRegistry};

/// One key of the configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    /// Dotted key, as `--set` and Python's override tables name it (`l2.latency`).
    pub key: String,
    /// `integer`, `float`, `boolean` or `string`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The paper's Table 1 value, as TOML writes it.
    pub default: String,
    /// The values the type admits: the names of a choice, or an integer's range.
    pub allowed: String,
    pub description: String,
}

/// The configuration's JSON schema: its serde structs' fields, types and doc comments.
fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(SystemConfig))
        .expect("the configuration's schema serializes")
}

/// Every key of the configuration, sorted by key.
pub fn params() -> Vec<Param> {
    let schema = schema();
    let defaults: toml::Table = toml::from_str(&SystemConfig::default().to_toml_string())
        .expect("the default configuration reads back");
    let mut out = Vec::new();
    collect(&schema, &schema, &defaults, "", &mut out);
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

fn collect(root: &Value, node: &Value, table: &toml::Table, prefix: &str, out: &mut Vec<Param>) {
    for (name, value) in table {
        let key = format!("{prefix}{name}");
        let field = node
            .get("properties")
            .and_then(|p| p.get(name))
            .unwrap_or(&Value::Null);
        let ty = resolve(root, field);
        if let toml::Value::Table(inner) = value {
            let at = out.len();
            collect(root, ty, inner, &format!("{key}."), out);
            // A table of one key (an engine's clock) is described by its field in the
            // table above: what the key is for there comes first.
            if let (1, Some(whose)) = (inner.len(), text(field, "description")) {
                for p in &mut out[at..] {
                    p.description = one_line(&format!("{whose} {}", p.description));
                }
            }
            continue;
        }
        let description = text(field, "description")
            .or_else(|| text(ty, "description"))
            .unwrap_or_default();
        out.push(Param {
            key,
            kind: kind_of(value).into(),
            default: value.to_string(),
            allowed: allowed(ty),
            description: one_line(&description),
        });
    }
}

/// The schema a field's schema stands for: its `$ref` followed, an `Option`'s
/// `anyOf [T, null]` unwrapped.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return root
            .get("$defs")
            .and_then(|d| d.get(name))
            .map_or(node, |n| resolve(root, n));
    }
    if let Some(any) = node.get("anyOf").and_then(Value::as_array) {
        let not_null = any
            .iter()
            .find(|v| v.get("type").and_then(Value::as_str) != Some("null"));
        if let Some(v) = not_null {
            return resolve(root, v);
        }
    }
    node
}

fn text(node: &Value, field: &str) -> Option<String> {
    node.get(field).and_then(Value::as_str).map(str::to_string)
}

/// A doc comment's lines joined into one.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn kind_of(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::Integer(_) => "integer",
        toml::Value::Float(_) => "float",
        toml::Value::Boolean(_) => "boolean",
        _ => "string",
    }
}

/// A choice's names (`a | b`); for a number, what its type admits (the description gives
/// narrower ranges where the checks of a loaded config make them).
fn allowed(ty: &Value) -> String {
    if let Some(choices) = ty.get("oneOf").or_else(|| ty.get("enum")) {
        let names: Vec<String> = choices
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("const").unwrap_or(c).as_str().map(str::to_string))
            .collect();
        return names.join(" | ");
    }
    match (ty.get("type").and_then(Value::as_str), ty.get("minimum")) {
        (Some("boolean"), _) => "true | false".into(),
        (Some("integer"), Some(_)) => "whole number >= 0".into(),
        (Some("integer"), None) => "whole number".into(),
        (Some("number"), _) => "number".into(),
        _ => String::new(),
    }
}

/// The choices of a string key with their descriptions, for the Markdown page.
fn choices(ty: &Value) -> Vec<(String, String)> {
    ty.get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c.get("const")?.as_str()?.to_string();
            Some((name, one_line(&text(c, "description").unwrap_or_default())))
        })
        .collect()
}

/// One statistic, or one pattern of statistics (`system.cpu{N}.l2.hits`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatInfo {
    pub name: String,
    /// `counter` (a whole number), `number` (a float: a ratio, an average, seconds) or
    /// `distribution` (written as gem5's Distribution: `name::samples`, `name::mean`, ...).
    pub kind: &'static str,
    pub unit: String,
    pub description: String,
    /// The kinds of run that wrote it: `mpi:<design>` (`moped mpi`, `moped figure10`,
    /// sweeps), `mpi:baseline+nic` (an MPI run through the NICs of `[nic]`, `moped lhs`),
    /// `run:<design>` (`moped run` of a program file).
    pub runs: Vec<String>,
    /// What counts the same in a gem5 run of the MOPED protocol (the statistics
    /// `moped compare` reads there), where something does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gem5: Option<String>,
}

/// The gem5 counterpart of the statistic `pattern`, from `moped compare`'s table: a
/// metric read from one embedded statistic, or summed over the cores (then the total's
/// statistic has it too).
fn gem5_counterpart(pattern: &str) -> Option<String> {
    use crate::analysis::sources::{Source, METRIC_SOURCES};
    let glob = pattern.replace("{N}", "*");
    let total = pattern
        .strip_prefix("system.total.")
        .map(|rest| format!("system.cpu*.{rest}"));
    METRIC_SOURCES.iter().find_map(|m| {
        let own = match m.embedded {
            Source::Stat(s) | Source::Sum(s) => s,
            // A counter read where the run has it, else 0 (a run without MOPEDs).
            Source::FirstOf(&[Source::Stat(s) | Source::Sum(s), ..]) => s,
            _ => return None,
        };
        (own == glob || Some(own) == total.as_deref()).then(|| gem5_text(&m.gem5))?
    })
}

/// How a gem5 run's value is read, in words; `None` for a value derived from others.
fn gem5_text(s: &crate::analysis::sources::Source) -> Option<String> {
    use crate::analysis::sources::Source::*;
    Some(match s {
        Stat(name) => format!("`{name}`"),
        Sum(glob) => format!("sum of `{glob}`"),
        Max(glob) => format!("largest of `{glob}`"),
        Samples(h) => format!("samples of `{h}`"),
        RubyCycles => "`simTicks` / the Ruby clock's period".into(),
        FirstOf(list) => {
            let each: Vec<String> = list.iter().filter_map(gem5_text).collect();
            each.join(", else ")
        }
        NoMoped(name) => format!("0 without `{name}` (no MOPED)"),
        Remainder(..) | Total(..) => return None,
    })
}

/// A 16-rank MPI schedule whose sends take both the eager and the rendezvous path and
/// whose receives wait in both queues, so every statistic of an MPI run is written.
const PROBE_GOAL: &str = "num_ranks 16
rank 0 {
  a: recv 64b from -1 tag 1
  b: recv 16384b from 1 tag 2
  c: send 64b to 1 tag 3
  c requires a
}
rank 1 {
  a: send 64b to 0 tag 1
  b: calc 2000
  c: send 16384b to 0 tag 2
  c requires b
  d: recv 64b from 0 tag 3
}
";

/// A program that misses, hits, shares and writes back on every core.
const PROBE_PROGRAM: &str = r#"
[[core]]
cores = "all"
offset_per_core = 0x10000
ops = '''
sweep load 0x100000 65536 64 repeat=2
sweep store 0x100000 65536 64
'''
[[core]]
cores = "all"
offset_per_core = 8
ops = '''
store 0x800000 8 0x5a5a
compute 100
sweep load 0x800000 128 8
'''
"#;

/// The registries of the probe runs, each named as [`StatInfo::runs`] names it.
fn probe_runs() -> Result<Vec<(String, StatsRegistry)>, MopedError> {
    let cfg = SystemConfig::default();
    let goal = crate::workload::goal::parse_goal(PROBE_GOAL, "<probe>")
        .map_err(|e| MopedError::Io(format!("the statistics probe's schedule: {e}")))?;
    let program = crate::core::Program::from_toml_str(PROBE_PROGRAM, "<probe>", cfg.system.cores)
        .map_err(|e| MopedError::Io(format!("the statistics probe's program: {e}")))?;
    let mut runs = Vec::new();
    for design in Design::ALL {
        let mpi = crate::mpi::run_workload(&cfg, &goal, design, 1, (&cfg.mpi).into())?;
        runs.push((format!("mpi:{design}"), mpi.stats));
        let run = super::run::run_program(&cfg, &program, design, 1)?;
        runs.push((format!("run:{design}"), run.stats));
    }
    // The LHS paper's setting: messages through NICs (`[nic]`), with LHS.
    let mut nic = cfg.clone();
    nic.nic.enabled = true;
    nic.mpi.unexpected_queue = crate::config::UnexpectedQueue::Lhs;
    let mpi = crate::mpi::run_workload(&nic, &goal, Design::Baseline, 1, (&nic.mpi).into())?;
    runs.push(("mpi:baseline+nic".to_string(), mpi.stats));
    Ok(runs)
}

/// Every statistic the simulator writes, as patterns, in the order the first run that
/// wrote each registered it.
pub fn stats() -> Result<Vec<StatInfo>, MopedError> {
    let mut out: Vec<StatInfo> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (run, reg) in probe_runs()? {
        for s in reg.stats() {
            let (name, description) = generalize(&s.name, &s.desc);
            let i = *index.entry(name.clone()).or_insert_with(|| {
                out.push(StatInfo {
                    name: name.clone(),
                    kind: match (&s.accrual, &s.value) {
                        (Accrual::Distribution(_), _) => "distribution",
                        (_, StatValue::Int(_)) => "counter",
                        (_, StatValue::Float(_)) => "number",
                    },
                    unit: s.unit.clone(),
                    gem5: gem5_counterpart(&name),
                    description,
                    runs: Vec::new(),
                });
                out.len() - 1
            });
            if !out[i].runs.contains(&run) {
                out[i].runs.push(run.clone());
            }
        }
    }
    Ok(out)
}

/// A statistic's name and description with their variable parts as placeholders:
/// `{N}` for an index, `{state}.{event}` for a protocol transition, `{type}` for a
/// message type.
pub fn generalize(name: &str, desc: &str) -> (String, String) {
    let mut desc = desc.to_string();
    let mut parts: Vec<String> = name.split('.').map(str::to_string).collect();
    let n = parts.len();
    if n >= 3 && parts[n - 3].ends_with("_Controller") {
        parts[n - 2] = "{state}".into();
        parts[n - 1] = "{event}".into();
    }
    if n >= 4 && matches!(parts[n - 3].as_str(), "msg_count" | "msg_bytes") {
        desc = replace_word(&desc, &parts[n - 2], "{type}");
        parts[n - 2] = "{type}".into();
    }
    for part in &mut parts {
        let (p, numbers) = index_placeholders(part);
        for num in numbers {
            desc = replace_word(&desc, &num, "{N}");
        }
        *part = p;
    }
    (parts.join("."), desc)
}

/// `cpu12` -> `cpu{N}`, `leaf0->core3` -> `leaf{N}->core{N}`: a run of digits after at
/// least three letters and not followed by a letter or digit is an index (`l2`, `l1d`
/// and `x86_64` are names). Also returns the numbers replaced.
fn index_placeholders(part: &str) -> (String, Vec<String>) {
    let b = part.as_bytes();
    let mut out = String::new();
    let mut numbers = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i > start {
            let letters_before =
                start >= 3 && b[start - 3..start].iter().all(u8::is_ascii_alphabetic);
            let ends = i == b.len() || !b[i].is_ascii_alphanumeric();
            if letters_before && ends {
                out.push_str("{N}");
                numbers.push(part[start..i].to_string());
            } else {
                out.push_str(&part[start..i]);
            }
            continue;
        }
        out.push(b[i] as char);
        i += 1;
    }
    (out, numbers)
}

/// `text` with the whole word `word` replaced (digits and letters around it end a word).
fn replace_word(text: &str, word: &str, with: &str) -> String {
    if word.is_empty() {
        return text.to_string();
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + word.len()..].chars().next();
        let edge = |c: Option<char>| c.map_or(true, |c| !(c.is_alphanumeric() || c == '_'));
        out.push_str(&rest[..i]);
        out.push_str(if edge(before) && edge(after) {
            with
        } else {
            word
        });
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether the statistic `name` (a line of stats.txt, a distribution's `name::field`
/// included) is one the catalogue's entry `pattern` stands for.
pub fn matches(pattern: &str, name: &str) -> bool {
    let base = name.split("::").next().unwrap_or(name);
    generalize(base, "").0 == pattern
}

/// The parameters as JSON: `{"format": "moped-info-config-1", "params": [...]}`.
pub fn params_json(params: &[Param]) -> Value {
    serde_json::json!({ "format": "moped-info-config-1", "params": params })
}

/// The statistics as JSON: `{"format": "moped-info-stats-1", "stats": [...]}`.
pub fn stats_json(stats: &[StatInfo]) -> Value {
    serde_json::json!({ "format": "moped-info-stats-1", "stats": stats })
}

/// The parameters as Markdown: one table per section, then each choice's meaning.
pub fn params_markdown(params: &[Param]) -> String {
    let mut md = String::from(
        "# Configuration parameters\n\n\
         Every key of the system configuration, its type, its default (the MOPED paper's\n\
         Table 1 where the paper gives one) and what it means. A TOML file sets them by\n\
         section (`[l2]` then `latency = 12`), `--set l2.latency=12` one at a time, and\n\
         Python's `moped.SystemConfig(l2={\"latency\": 12})` by nested tables. Written by\n\
         `moped info config --format md`; a test fails when this page is stale.\n",
    );
    let rows = params.iter().map(|p| {
        let cells = vec![
            format!("`{}`", p.key),
            p.kind.clone(),
            format!("`{}`", p.default),
            cell(&p.allowed),
            cell(&p.description),
        ];
        (p.key.as_str(), cells)
    });
    let columns = ["key", "type", "default", "allowed", "description"];
    grouped_tables(&mut md, rows, |s| format!("[{s}]"), &columns);
    md.push_str(&choices_markdown());
    md
}

/// Each choice-valued type's names with their meanings.
fn choices_markdown() -> String {
    let schema = schema();
    let mut md = String::from("\n## Choices\n");
    let defs = schema.get("$defs").and_then(Value::as_object);
    for (name, ty) in defs.into_iter().flatten() {
        let list = choices(ty);
        if list.is_empty() {
            continue;
        }
        md.push_str(&format!("\n{name}:\n\n"));
        for (value, meaning) in list {
            md.push_str(&format!("- `{value}`: {meaning}\n"));
        }
    }
    md
}

/// The statistics as Markdown: one table per top-level group.
pub fn stats_markdown(stats: &[StatInfo]) -> String {
    let mut md = String::from(
        "# Statistics\n\n\
         Every statistic a run writes into stats.txt, stats.json and stats.csv. `{N}` stands\n\
         for an index (a core, a MOPED, an engine, a directory bank, a rank, a virtual\n\
         network), `{state}.{event}` for a protocol transition of the design's tables and\n\
         `{type}` for a coherence message type. A distribution is written as gem5 writes\n\
         one: `name::samples`, `name::mean`, `name::stdev`, a line per bucket,\n\
         `name::min_value`, `name::max_value`, `name::total`. Runs: `mpi` is `moped mpi`,\n\
         `moped figure10` and Python's sweeps; `run` is `moped run` of a program file.\n\
         gem5: what counts the same in a gem5 run of the MOPED protocol (what `moped\n\
         compare` reads there). Written by `moped info stats --format md`; a test fails\n\
         when this page is stale.\n",
    );
    let rows = stats.iter().map(|s| {
        let cells = vec![
            format!("`{}`", s.name),
            s.kind.to_string(),
            s.unit.clone(),
            runs_text(&s.runs),
            cell(&s.description),
            s.gem5.as_deref().map_or(String::new(), cell),
        ];
        (s.name.as_str(), cells)
    });
    let columns = ["name", "kind", "unit", "runs", "description", "gem5"];
    grouped_tables(&mut md, rows, str::to_string, &columns);
    md
}

/// Markdown tables, one per run of rows whose names share their first dotted part: a
/// heading (`heading` of that part), the `columns`, then the rows' cells.
fn grouped_tables<'a>(
    md: &mut String,
    rows: impl Iterator<Item = (&'a str, Vec<String>)>,
    heading: impl Fn(&str) -> String,
    columns: &[&str],
) {
    let mut group = "";
    for (name, cells) in rows {
        let g = name.split('.').next().unwrap_or("");
        if g != group {
            group = g;
            md.push_str(&format!(
                "\n## {}\n\n| {} |\n|{}\n",
                heading(g),
                columns.join(" | "),
                "---|".repeat(columns.len())
            ));
        }
        md.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
}

/// `mpi, run` when every design wrote it, else the designs by kind of run.
fn runs_text(runs: &[String]) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for kind in ["mpi", "run"] {
        let designs: Vec<&str> = runs
            .iter()
            .filter_map(|r| r.strip_prefix(kind)?.strip_prefix(':'))
            .collect();
        if designs.len() == Design::ALL.len() {
            kinds.push(kind.into());
        } else if !designs.is_empty() {
            kinds.push(format!("{kind} ({})", designs.join(", ")));
        }
    }
    kinds.join(", ")
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_and_variable_names_become_placeholders() {
        let g = |n: &str| generalize(n, "").0;
        assert_eq!(g("system.cpu12.l2.hits"), "system.cpu{N}.l2.hits");
        assert_eq!(g("system.cpu1.l1d.misses"), "system.cpu{N}.l1d.misses");
        assert_eq!(
            g("system.network.link.leaf0->core3.bytes"),
            "system.network.link.leaf{N}->core{N}.bytes"
        );
        assert_eq!(
            g("system.L2Cache_Controller.IS.Data"),
            "system.L2Cache_Controller.{state}.{event}"
        );
        assert_eq!(
            g("system.network.msg_count.GETS.vnet2"),
            "system.network.msg_count.{type}.vnet{N}"
        );
        assert_eq!(g("sim.event_kinds.load_hit"), "sim.event_kinds.load_hit");
        let (_, d) = generalize(
            "system.network.msg_count.GETS.vnet2",
            "GETS messages sent on virtual network 2",
        );
        assert_eq!(d, "{type} messages sent on virtual network {N}");
        assert!(matches("mpi.rank{N}.prq_depth", "mpi.rank7.prq_depth::0-3"));
        assert!(!matches("mpi.rank{N}.prq_depth", "mpi.rank7.umq_depth"));
    }

    #[test]
    fn every_parameter_has_a_type_a_default_and_a_description() {
        let params = params();
        assert!(params.len() > 50, "{}", params.len());
        let missing: Vec<&str> = params
            .iter()
            .filter(|p| p.description.is_empty())
            .map(|p| p.key.as_str())
            .collect();
        assert!(
            missing.is_empty(),
            "keys without a description: {missing:?}"
        );
        let l2 = params.iter().find(|p| p.key == "l2.latency").unwrap();
        assert_eq!((l2.kind.as_str(), l2.default.as_str()), ("integer", "10"));
        let model = params
            .iter()
            .find(|p| p.key == "system.core_model")
            .unwrap();
        assert_eq!(model.allowed, "blocking | mlp");
        assert!(!params.iter().any(|p| p.key == "l2.prefetch"));
        let cores = params.iter().find(|p| p.key == "system.cores").unwrap();
        let max = crate::config::MAX_CORES;
        assert!(
            cores.description.contains(&format!("1 to {max})")),
            "{cores:?}"
        );
        // Doc comments written for the code's readers do not reach the users' page.
        let linked: Vec<&str> = params
            .iter()
            .filter(|p| p.description.contains("[`"))
            .map(|p| p.key.as_str())
            .collect();
        assert!(linked.is_empty(), "rustdoc links in {linked:?}");
    }
}
