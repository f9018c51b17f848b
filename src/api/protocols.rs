//! The protocol doors: a design's tables as Markdown, the lint of machine files, the
//! exhaustive checker and the random tester.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::checker::{self, CheckReport, Coverage};
use crate::coherence::{protocols, Protocol};
use crate::config::PrefetchKind;
use crate::design::Design;
use crate::protocol::{Cell, Machine};
use crate::tester::{self, TesterConfig, TesterReport};

/// Both machines of a shipped design as Markdown tables.
pub fn protocol_markdown(design: Design) -> String {
    let p = Protocol::of(design);
    let mut md = format!("# Protocol `{design}`\n\n");
    for m in [p.l2.as_ref(), p.dir.as_ref()] {
        md.push_str(&m.to_markdown());
        if !md.ends_with('\n') {
            md.push('\n');
        }
        md.push('\n');
    }
    md
}

/// The one-line summary of a machine that passed the lint.
pub fn lint_summary(m: &Machine) -> String {
    let transitions = m
        .transitions()
        .iter()
        .filter(|t| matches!(t.cell, Cell::Transition { .. }))
        .count();
    format!(
        "ok ({} states, {} events, {transitions} transitions)",
        m.states().len(),
        m.events().len()
    )
}

/// Reads and lints one machine file (an overlay: on the layers its design folder builds on).
pub fn lint_file(path: &Path) -> Result<Machine, String> {
    lint_files(&[path.to_path_buf()]).remove(0)
}

/// Reads and lints files in order. An overlay inside a shipped design's folder (say
/// `protocols/optcopy/L2Cache.sm`) is checked on the layers that design builds on, read
/// from the sibling folders on disk (`baseline/`, `basemoped/`, ...); any other overlay on
/// the files before it that built its machine, else on the shipped baseline.
pub fn lint_files(paths: &[PathBuf]) -> Vec<Result<Machine, String>> {
    let read = |p: &Path| {
        let bytes =
            std::fs::read(p).map_err(|e| format!("error: {}: cannot read: {e}", p.display()))?;
        crate::textparse::utf8_text(&p.display().to_string(), &bytes)
            .map(str::to_string)
            .map_err(|e| format!("error: {e}"))
    };
    let texts: Vec<Result<String, String>> = paths.iter().map(|p| read(p)).collect();
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    // Base layers on disk for files in a design folder: (text, name) per layer.
    let bases: Vec<Option<Vec<(String, String)>>> = paths
        .iter()
        .zip(&texts)
        .map(|(p, t)| {
            let t = t.as_ref().ok()?;
            let folder = p.parent()?;
            let design = folder.file_name()?.to_str()?;
            let machine = p.file_stem()?.to_str()?;
            let root = folder.parent()?;
            let shipped = protocols::design_files(Design::from_name(design)?, machine)?;
            let mut layers = Vec::new();
            for (_, rel) in shipped {
                let on_disk = root.join(rel.trim_start_matches("protocols/"));
                let text = read(&on_disk).ok()?;
                if &text == t {
                    break;
                }
                layers.push((text, on_disk.display().to_string()));
            }
            Some(layers)
        })
        .collect();
    // Unreadable files drop out of the chain; their slot reports the read error.
    let inputs: Vec<protocols::LintInput> = texts
        .iter()
        .zip(&names)
        .zip(&bases)
        .filter_map(|((t, n), b)| {
            let t = t.as_ref().ok()?;
            let base = b
                .as_ref()
                .map(|l| l.iter().map(|(t, n)| (t.as_str(), n.as_str())).collect());
            Some((t.as_str(), n.as_str(), base))
        })
        .collect();
    let mut linted = protocols::lint_chain(&inputs).into_iter();
    texts
        .iter()
        .map(|t| match t {
            Err(e) => Err(e.clone()),
            Ok(_) => linted
                .next()
                .expect("one result per readable file")
                .map_err(|e| format!("{}:{}:{}: error: {}", e.file, e.line, e.col, e.msg)),
        })
        .collect()
}

/// Checks one machine file's text, or one overlay on the shipped baseline; the error
/// names `file:line:col`.
pub fn lint_text(text: &str, file: &str) -> Result<Machine, crate::protocol::ProtocolError> {
    protocols::lint(text, file)
}

/// The exhaustive checker's default configurations for `design`: c1-c3, and m1-m3 for a
/// MOPED design.
pub fn default_check_configs(design: Design) -> Vec<&'static str> {
    let mut all = vec!["c1", "c2", "c3"];
    if design.has_moped() {
        all.extend(["m1", "m2", "m3"]);
    }
    all
}

/// The exhaustive checker on each named configuration of `design`, in order.
pub fn check(design: Design, configs: &[&str]) -> Vec<Result<CheckReport, String>> {
    let p = Protocol::of(design);
    configs
        .iter()
        .map(|c| checker::run_with_protocol(c, p.clone()).map_err(|e| e.to_string()))
        .collect()
}

/// The transition cells the checker's runs reached together.
pub fn coverage(reports: &[CheckReport]) -> Coverage {
    checker::union_coverage(reports)
}

/// One seed of the random tester: its config (for the replay command), its report or
/// error, and the host seconds it took.
pub fn random_test(
    cores: usize,
    checks: u64,
    seed: u64,
    (design, prefetch, cache_ops): (Design, PrefetchKind, bool),
) -> (TesterConfig, Result<TesterReport, String>, f64) {
    let mut tc = TesterConfig::new(cores, checks, seed);
    tc.design = design;
    tc.prefetch = prefetch;
    tc.cache_ops = cache_ops;
    let t0 = Instant::now();
    let r = tester::run(&tc);
    (tc, r, t0.elapsed().as_secs_f64())
}

/// One line on a tester run's MOPED traffic: requests by kind, writes, the values its
/// reads checked, and the MOPEDs' share of the operations.
pub fn moped_traffic(r: &TesterReport) -> String {
    format!(
        "MOPED: {} reads (M_GETS; {} raced a store to the line), {} owns (M_GETX), {} fills (M_FILL), {} writes ({} found the rights lost), {} values checked; {:.1} % of {} operations",
        r.moped_reads,
        r.moped_reads_raced,
        r.moped_owns,
        r.moped_fills,
        r.moped_writes,
        r.moped_writes_revoked,
        r.moped_values_checked,
        100.0 * r.moped_share(),
        r.loads + r.stores + r.moped_requests(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_show_and_lint_shipped_files() {
        let md = protocol_markdown(Design::Baseline);
        assert!(md.contains("IS"));
        // The overlays' tables, with the states and events they add.
        let md = protocol_markdown(Design::OptCache);
        for name in [
            "ID",
            "M_GETS",
            "Fwd_GET_COPY",
            "IC",
            "MC",
            "MF",
            "Fill_Grant",
            "GET_FILL",
        ] {
            assert!(md.contains(name), "{name} missing from the optcache tables");
        }
        for f in [
            "protocols/baseline/L2Cache.sm",
            "protocols/baseline/Directory.sm",
            "protocols/basemoped/L2Cache.sm",
            "protocols/optcopy/L2Cache.sm",
            "protocols/optcopy/Directory.sm",
            "protocols/optcache/L2Cache.sm",
            "protocols/optcache/Directory.sm",
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(f);
            let m = lint_file(&path).expect("shipped file lints");
            assert!(lint_summary(&m).starts_with("ok ("));
        }
    }

    #[test]
    fn lint_reports_position_and_missing_files() {
        let dir = std::env::temp_dir().join(format!("moped-cli-lint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("Bad.sm");
        std::fs::write(
            &bad,
            "machine(L2Cache, desc=\"x\");\ntransition(Q, Load) { nope; }\n",
        )
        .unwrap();
        let msg = lint_file(&bad).expect_err("a bad file fails the lint");
        assert!(msg.starts_with(&format!("{}:", bad.display())), "{msg}");
        let missing = dir.join("missing.sm");
        assert!(lint_file(&missing)
            .expect_err("a missing file fails")
            .starts_with("error:"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
