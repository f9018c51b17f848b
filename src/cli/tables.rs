//! The commands that print or write tables and files without simulating: `protocol show`
//! and `lint`, `gem5 slicc`, `goal` and `compare`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::api::{self, Design};

use super::args::*;
use super::experiments::claim_out;
use super::{usage, CmdResult, Failure};

pub(super) fn cmd_trace(a: &TraceArgs, command: &[String]) -> CmdResult {
    let per_ns = a.instructions_per_ns;
    if !(per_ns.is_finite() && per_ns >= 0.0) {
        return Err(Failure::Usage(format!(
            "--instructions-per-ns {per_ns}: expected a number of at least 0"
        )));
    }
    let out = claim_out(&a.out, a.force, command, (None, &[]))?;
    let opts = crate::workload::trace::TraceOptions {
        instructions_per_ns: per_ns,
    };
    let r = api::trace::record(&a.command, out, opts)?;
    let calls = match &r.calls {
        Ok(n) => *n,
        Err(e) => {
            return Err(Failure::User(format!(
                "recorded {} ranks into {}, kept there, but the recording cannot be run: {e}",
                r.ranks,
                a.out.display()
            )))
        }
    };
    let goal = match &r.goal {
        Ok(()) => format!(
            "the same run as a GOAL schedule: {}",
            a.out.join(api::trace::GOAL_FILE).display()
        ),
        Err(why) => format!("no GOAL schedule: {why}"),
    };
    writeln!(
        io::stdout().lock(),
        "recorded {} ranks, {calls} calls, into {}; run it with `moped mpi --workload {}`; {goal}",
        r.ranks,
        a.out.display(),
        a.out.display(),
    )?;
    Ok(())
}

pub(super) fn cmd_goal(a: &GoalArgs) -> CmdResult {
    let g = api::mpi::write_goal(&a.spec, &a.out, !a.no_warmup)?;
    writeln!(
        io::stdout().lock(),
        "{}: {} ranks, {} operations; GOAL schedule written to {}",
        g.name,
        g.ranks,
        g.operations,
        a.out.display()
    )?;
    Ok(())
}

pub(super) fn cmd_gem5_slicc(dir: &Path, check: bool) -> CmdResult {
    let files = api::gem5::write_slicc(dir, check)?;
    let stale: Vec<_> = files.iter().filter(|f| f.changed).collect();
    for f in &files {
        let what = match (f.changed, check) {
            (false, _) => "up to date",
            (true, true) => "OUT OF DATE",
            (true, false) => "written",
        };
        println!("{}: {what}", f.path.display());
    }
    if check && !stale.is_empty() {
        return Err(Failure::User(
            "generated SLICC is out of date: run `moped gem5 slicc`".to_string(),
        ));
    }
    Ok(())
}

/// The format `--format` names, else the one `--out`'s extension names, else text.
pub(super) fn compare_format(a: &CompareArgs) -> CompareFormat {
    match (a.format, &a.out) {
        (Some(f), _) => f,
        (None, Some(p)) => match p.extension().and_then(|e| e.to_str()) {
            Some("md") => CompareFormat::Md,
            Some("json") => CompareFormat::Json,
            Some("csv") => CompareFormat::Csv,
            _ => CompareFormat::Text,
        },
        (None, None) => CompareFormat::Text,
    }
}

pub(super) fn cmd_compare(a: CompareArgs) -> CmdResult {
    api::gem5::check_tolerance(a.tolerance).map_err(usage)?;
    let c = api::gem5::compare(&a.gem5, &a.embedded, a.dump, a.tolerance)?;
    let text = match compare_format(&a) {
        CompareFormat::Text => c.to_text(),
        CompareFormat::Md => c.to_markdown(),
        CompareFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&c.to_json()).unwrap_or_default()
        ),
        CompareFormat::Csv => c.to_csv(),
    };
    let mut out = io::stdout().lock();
    match &a.out {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| Failure::User(format!("{}: {e}", p.display())))?;
            out.write_all(c.to_text().as_bytes())?;
            writeln!(out, "comparison written to {}", p.display())?;
        }
        None => out.write_all(text.as_bytes())?,
    }
    let outside = c.outside();
    if a.check && !outside.is_empty() {
        out.flush()?;
        let names: Vec<&str> = outside.iter().map(|r| r.label.as_str()).collect();
        return Err(Failure::User(format!(
            "{} of {} metrics differ by more than {} %: {}",
            outside.len(),
            c.rows.len(),
            a.tolerance,
            names.join(", ")
        )));
    }
    Ok(())
}

pub(super) fn cmd_protocol_show(design: Design, format: Format) -> CmdResult {
    let md = match format {
        Format::Md => api::protocols::protocol_markdown(design),
    };
    let mut out = io::stdout().lock();
    out.write_all(md.as_bytes())?;
    out.flush()?;
    Ok(())
}

pub(super) fn cmd_info(command: InfoCommand) -> CmdResult {
    use api::info;
    let text = match command {
        InfoCommand::Config { format } => {
            let params = info::params();
            match format {
                InfoFormat::Md => info::params_markdown(&params),
                InfoFormat::Json => format!("{:#}\n", info::params_json(&params)),
            }
        }
        InfoCommand::Stats { format } => {
            let stats = info::stats()?;
            match format {
                InfoFormat::Md => info::stats_markdown(&stats),
                InfoFormat::Json => format!("{:#}\n", info::stats_json(&stats)),
            }
        }
        InfoCommand::Cli => super::cli_reference(),
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

pub(super) fn cmd_protocol_lint(files: &[PathBuf]) -> CmdResult {
    let mut out = io::stdout().lock();
    let mut failed = false;
    for (path, r) in files.iter().zip(api::protocols::lint_files(files)) {
        match r {
            Ok(m) => writeln!(
                out,
                "{}: {}",
                path.display(),
                api::protocols::lint_summary(&m)
            )?,
            Err(msg) => {
                failed = true;
                out.flush()?;
                let _ = writeln!(io::stderr(), "{msg}");
            }
        }
    }
    if failed {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}
