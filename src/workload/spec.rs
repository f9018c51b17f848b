//! Workload specifications: small TOML files that name a benchmark and its parameters.
//!
//! ```toml
//! name = "PP"            # the name results are reported under
//! suite = "imb"          # imb | npb | goal | queue
//! benchmark = "pingpong" # imb: pingpong pingping bcast reduce gather alltoall uniband biband
//!                        # npb: cg mg ft bt sp; queue: preposted unload unexpected
//! bytes = 16384          # imb: message size (per rank, or per pair for alltoall);
//!                        # queue: message size, default 8
//! iterations = 10        # imb: required; npb: default the class's count;
//!                        # queue: default 10 (preposted) or 1
//! ranks = 16             # default 16; queue: default 2 (only unload takes more)
//! # class = "S"          # npb: only S is modelled (the default)
//! # file = "x.goal"      # goal: the schedule, relative to this file
//! # depth = 256          # queue: required, 1 to 32768
//! # position = 256       # queue, unexpected only: default depth
//! # sources = "uniform"  # queue, unload only: uniform (default) | skewed
//! ```
//!
//! Errors name the file, line and column and say what was expected.

use super::imb::{self, ImbBenchmark};
use super::npb::{self, NpbBenchmark, NpbClass};
use super::queue::{self, QueueBenchmark, QueueParams, Sources};
use super::Workload;
use crate::textparse::{line_col, toml_message, PosError};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Ranks when a spec does not say (the paper's 16-core CMP).
pub const DEFAULT_RANKS: usize = 16;

/// A spec error, located in its file.
pub type SpecError = PosError;

/// What a spec asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecKind {
    Imb {
        benchmark: ImbBenchmark,
        bytes: u64,
        iterations: u32,
        ranks: usize,
    },
    Npb {
        benchmark: NpbBenchmark,
        class: NpbClass,
        iterations: u32,
        ranks: usize,
    },
    Goal {
        /// The schedule file, resolved against the spec's directory.
        file: PathBuf,
    },
    Queue(QueueParams),
}

/// A loaded workload specification.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The spec file as given.
    pub path: PathBuf,
    pub name: String,
    pub kind: SpecKind,
    /// Where build errors point: the `benchmark` (or `file`) value, and the `ranks`
    /// and `iterations` values when given.
    at_benchmark: (u32, u32),
    at_ranks: Option<(u32, u32)>,
    at_iterations: Option<(u32, u32)>,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Suite {
    Imb,
    Npb,
    Goal,
    Queue,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Bench {
    Pingpong,
    Pingping,
    Bcast,
    Reduce,
    Gather,
    Alltoall,
    Uniband,
    Biband,
    Cg,
    Mg,
    Ft,
    Bt,
    Sp,
    Preposted,
    Unload,
    Unexpected,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum SourcesWord {
    Uniform,
    Skewed,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: Spanned<String>,
    suite: Spanned<Suite>,
    benchmark: Option<Spanned<Bench>>,
    bytes: Option<Spanned<u64>>,
    iterations: Option<Spanned<u32>>,
    ranks: Option<Spanned<u32>>,
    class: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    depth: Option<Spanned<u32>>,
    position: Option<Spanned<u32>>,
    sources: Option<Spanned<SourcesWord>>,
}

impl SpecFile {
    /// Where the queue suite's own keys are written, those that are.
    fn queue_keys(&self) -> Vec<(&'static str, usize)> {
        let depth = self.depth.as_ref().map(|d| ("depth", d.span().start));
        let position = self.position.as_ref().map(|p| ("position", p.span().start));
        let sources = self.sources.as_ref().map(|s| ("sources", s.span().start));
        [depth, position, sources].into_iter().flatten().collect()
    }
}

/// One line, without the backticks serde puts around the expected names.
fn tidy(msg: &str) -> String {
    let msg = msg.trim().replace('\n', "; ");
    match msg.find(", expected") {
        Some(p) => format!("{}{}", &msg[..p], msg[p..].replace('`', "")),
        None => msg,
    }
}

/// Reads and checks a spec file.
pub fn load_spec(path: &Path) -> Result<Spec, SpecError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| SpecError::new(file, (1, 1), format!("cannot read the spec: {e}")))?;
    parse_spec(&text, path)
}

/// Checks a spec's text; `path` names it in errors and anchors a GOAL `file`.
pub fn parse_spec(text: &str, path: &Path) -> Result<Spec, SpecError> {
    let file = path.display().to_string();
    let err = |pos: usize, msg: String| SpecError::at(&file, text, pos, msg);
    let f: SpecFile = toml::from_str(text).map_err(|e| {
        let pos = e.span().map_or(0, |s| s.start);
        err(pos, tidy(&toml_message(text, &e)))
    })?;
    let suite = *f.suite.get_ref();
    let suite_pos = f.suite.span().start;
    let unused = |key: &str, pos: usize, why: &str| err(pos, format!("`{key}` {why}"));
    let ranks = match &f.ranks {
        None => DEFAULT_RANKS,
        Some(r) if *r.get_ref() == 0 => {
            return Err(err(r.span().start, "ranks must be at least 1".into()))
        }
        Some(r) => *r.get_ref() as usize,
    };
    let iterations = match &f.iterations {
        Some(i) if *i.get_ref() == 0 => {
            return Err(err(i.span().start, "iterations must be at least 1".into()))
        }
        i => i.as_ref().map(|i| *i.get_ref()),
    };
    let pos = |s: &Option<Spanned<u32>>| s.as_ref().map(|s| line_col(text, s.span().start));
    let (kind, at) = match suite {
        Suite::Goal => {
            for (key, span) in [
                ("benchmark", f.benchmark.as_ref().map(|b| b.span().start)),
                ("bytes", f.bytes.as_ref().map(|b| b.span().start)),
                ("class", f.class.as_ref().map(|b| b.span().start)),
                ("iterations", f.iterations.as_ref().map(|b| b.span().start)),
                ("ranks", f.ranks.as_ref().map(|b| b.span().start)),
            ]
            .into_iter()
            .chain(f.queue_keys().into_iter().map(|(k, p)| (k, Some(p))))
            {
                if let Some(p) = span {
                    return Err(unused(
                        key,
                        p,
                        "is not used by suite \"goal\": the GOAL file gives the schedule",
                    ));
                }
            }
            let Some(gf) = &f.file else {
                return Err(err(
                    suite_pos,
                    "suite \"goal\" needs `file`, the GOAL schedule (relative to this spec)".into(),
                ));
            };
            let dir = path.parent().unwrap_or(Path::new(""));
            let kind = SpecKind::Goal {
                file: dir.join(gf.get_ref()),
            };
            (kind, line_col(text, gf.span().start))
        }
        Suite::Queue => {
            let (kind, bpos) = queue_kind(&f, &err)?;
            (kind, line_col(text, bpos))
        }
        Suite::Imb | Suite::Npb => {
            if let Some((key, p)) = f.queue_keys().first() {
                return Err(unused(key, *p, "is only for suite \"queue\""));
            }
            if let Some(gf) = &f.file {
                return Err(unused(
                    "file",
                    gf.span().start,
                    "is only for suite \"goal\"",
                ));
            }
            let Some(bench) = &f.benchmark else {
                return Err(err(
                    suite_pos,
                    format!("suite \"{}\" needs `benchmark`", suite_name(suite)),
                ));
            };
            let bpos = bench.span().start;
            let b = *bench.get_ref();
            let kind = if suite == Suite::Imb {
                let Some(ib) = imb_bench(b) else {
                    return Err(err(
                        bpos,
                        "not an IMB benchmark: expected one of pingpong, pingping, bcast, reduce, gather, alltoall, uniband, biband"
                            .into(),
                    ));
                };
                if let Some(c) = &f.class {
                    return Err(unused("class", c.span().start, "is for NPB benchmarks"));
                }
                let Some(bytes) = &f.bytes else {
                    return Err(err(
                        bpos,
                        "IMB benchmarks need `bytes`, the message size in bytes".into(),
                    ));
                };
                let Some(iterations) = iterations else {
                    return Err(err(
                        bpos,
                        "IMB benchmarks need `iterations`, the timed calls (the paper measures 10)"
                            .into(),
                    ));
                };
                SpecKind::Imb {
                    benchmark: ib,
                    bytes: *bytes.get_ref(),
                    iterations,
                    ranks,
                }
            } else {
                let Some(nb) = npb_bench(b) else {
                    return Err(err(
                        bpos,
                        "not an NPB benchmark: expected one of cg, mg, ft, bt, sp".into(),
                    ));
                };
                if let Some(by) = &f.bytes {
                    return Err(unused(
                        "bytes",
                        by.span().start,
                        "is for IMB benchmarks; NPB's sizes come from the class",
                    ));
                }
                let class = match &f.class {
                    None => NpbClass::S,
                    Some(c) if c.get_ref() == "S" => NpbClass::S,
                    Some(c) => {
                        return Err(err(
                            c.span().start,
                            format!("class \"{}\" is not modelled: expected \"S\"", c.get_ref()),
                        ))
                    }
                };
                SpecKind::Npb {
                    benchmark: nb,
                    class,
                    iterations: iterations.unwrap_or(nb.default_iterations(class)),
                    ranks,
                }
            };
            (kind, line_col(text, bpos))
        }
    };
    Ok(Spec {
        path: path.to_path_buf(),
        name: f.name.into_inner(),
        kind,
        at_benchmark: at,
        at_ranks: pos(&f.ranks),
        at_iterations: pos(&f.iterations),
    })
}

fn suite_name(s: Suite) -> &'static str {
    match s {
        Suite::Imb => "imb",
        Suite::Npb => "npb",
        Suite::Goal => "goal",
        Suite::Queue => "queue",
    }
}

type ErrAt<'a> = dyn Fn(usize, String) -> SpecError + 'a;

/// The queue suite's benchmark and keys, each error at the key it is about; returns the
/// kind and where the benchmark is named.
fn queue_kind(f: &SpecFile, err: &ErrAt) -> Result<(SpecKind, usize), SpecError> {
    let suite_pos = f.suite.span().start;
    let Some(bench) = &f.benchmark else {
        return Err(err(suite_pos, "suite \"queue\" needs `benchmark`".into()));
    };
    let bpos = bench.span().start;
    let Some(b) = queue_bench(*bench.get_ref()) else {
        return Err(err(
            bpos,
            "not a queue benchmark: expected one of preposted, unload, unexpected".into(),
        ));
    };
    for (key, span, why) in [
        (
            "class",
            f.class.as_ref().map(|c| c.span().start),
            "is for NPB benchmarks",
        ),
        (
            "file",
            f.file.as_ref().map(|c| c.span().start),
            "is only for suite \"goal\"",
        ),
    ] {
        if let Some(p) = span {
            return Err(err(p, format!("`{key}` {why}")));
        }
    }
    let Some(depth) = &f.depth else {
        return Err(err(
            bpos,
            format!(
                "queue benchmarks need `depth`, the entries in the searched queue (1 to {})",
                queue::MAX_DEPTH
            ),
        ));
    };
    let d = *depth.get_ref();
    queue::check_depth(d).map_err(|m| err(depth.span().start, m))?;
    let mut q = QueueParams::new(b, d);
    queue_options(f, &mut q, err)?;
    Ok((SpecKind::Queue(q), bpos))
}

/// The queue keys with defaults: position, sources, bytes, iterations and ranks.
fn queue_options(f: &SpecFile, q: &mut QueueParams, err: &ErrAt) -> Result<(), SpecError> {
    let only = |key: &str, b: QueueBenchmark, p: usize| {
        err(p, format!("`{key}` is only for benchmark \"{}\"", b.name()))
    };
    if let Some(p) = &f.position {
        if q.benchmark != QueueBenchmark::Unexpected {
            return Err(only("position", QueueBenchmark::Unexpected, p.span().start));
        }
        q.position = *p.get_ref();
        queue::check_position(q.position, q.depth).map_err(|m| err(p.span().start, m))?;
    }
    if let Some(s) = &f.sources {
        if q.benchmark != QueueBenchmark::Unload {
            return Err(only("sources", QueueBenchmark::Unload, s.span().start));
        }
        q.sources = match s.get_ref() {
            SourcesWord::Uniform => Sources::Uniform,
            SourcesWord::Skewed => Sources::Skewed,
        };
    }
    if let Some(by) = &f.bytes {
        q.bytes = *by.get_ref();
        queue::check_bytes(q.depth, q.bytes).map_err(|m| err(by.span().start, m))?;
    }
    if let Some(i) = &f.iterations {
        q.iterations = *i.get_ref();
        queue::check_iterations(q).map_err(|m| err(i.span().start, m))?;
    }
    // Skewed sources on the default 2 ranks: the error is at `sources`.
    let at_ranks = f.ranks.as_ref().map(|r| r.span().start);
    let at_sources = f.sources.as_ref().map(|s| s.span().start);
    q.ranks = f.ranks.as_ref().map_or(q.ranks, |r| *r.get_ref() as usize);
    queue::check_ranks(q.benchmark, q.ranks, q.sources)
        .map_err(|m| err(at_ranks.or(at_sources).unwrap_or(f.suite.span().start), m))
}

fn queue_bench(b: Bench) -> Option<QueueBenchmark> {
    Some(match b {
        Bench::Preposted => QueueBenchmark::Preposted,
        Bench::Unload => QueueBenchmark::Unload,
        Bench::Unexpected => QueueBenchmark::Unexpected,
        _ => return None,
    })
}

fn imb_bench(b: Bench) -> Option<ImbBenchmark> {
    Some(match b {
        Bench::Pingpong => ImbBenchmark::PingPong,
        Bench::Pingping => ImbBenchmark::PingPing,
        Bench::Bcast => ImbBenchmark::Bcast,
        Bench::Reduce => ImbBenchmark::Reduce,
        Bench::Gather => ImbBenchmark::Gather,
        Bench::Alltoall => ImbBenchmark::Alltoall,
        Bench::Uniband => ImbBenchmark::Uniband,
        Bench::Biband => ImbBenchmark::Biband,
        _ => return None,
    })
}

fn npb_bench(b: Bench) -> Option<NpbBenchmark> {
    Some(match b {
        Bench::Cg => NpbBenchmark::Cg,
        Bench::Mg => NpbBenchmark::Mg,
        Bench::Ft => NpbBenchmark::Ft,
        Bench::Bt => NpbBenchmark::Bt,
        Bench::Sp => NpbBenchmark::Sp,
        _ => return None,
    })
}

impl Spec {
    /// The spec with `p` ranks instead of its own count. Only IMB and NPB benchmarks run
    /// on any count (each checks its own when built); a GOAL schedule or a queue benchmark
    /// has its ranks fixed, and the error says so.
    pub fn set_ranks(&mut self, p: usize) -> Result<(), String> {
        match &mut self.kind {
            SpecKind::Imb { ranks, .. } | SpecKind::Npb { ranks, .. } => {
                *ranks = p;
                Ok(())
            }
            SpecKind::Goal { .. } | SpecKind::Queue(_) => Err(format!(
                "{}: {p} ranks asked, but only IMB and NPB specs run on any number of ranks; \
                 a {} spec has its own",
                self.path.display(),
                if matches!(self.kind, SpecKind::Goal { .. }) {
                    "GOAL"
                } else {
                    "queue"
                }
            )),
        }
    }

    /// The spec's rank count, for IMB and NPB benchmarks.
    pub fn ranks(&self) -> Option<usize> {
        match self.kind {
            SpecKind::Imb { ranks, .. } | SpecKind::Npb { ranks, .. } => Some(ranks),
            SpecKind::Goal { .. } | SpecKind::Queue(_) => None,
        }
    }

    fn error(&self, at: (u32, u32), msg: String) -> SpecError {
        SpecError::new(self.path.display().to_string(), at, msg)
    }
}

/// Builds the workload a spec describes. `iteration_scale` (in (0, 1]) shortens the run:
/// the iteration count is multiplied and rounded up (at least 1), and the workload's
/// notes say so.
pub fn build(
    spec: &Spec,
    iteration_scale: Option<f64>,
    warmup: bool,
) -> Result<Workload, SpecError> {
    let at_iters = spec.at_iterations.unwrap_or(spec.at_benchmark);
    let at_ranks = spec.at_ranks.unwrap_or(spec.at_benchmark);
    if let Some(s) = iteration_scale {
        if !(s > 0.0 && s <= 1.0) {
            return Err(spec.error(at_iters, format!("iteration scale {s} must be in (0, 1]")));
        }
    }
    let scaled = |n: u32| -> (u32, Option<String>) {
        match iteration_scale {
            Some(s) if s < 1.0 => {
                let m = ((n as f64 * s).ceil() as u32).clamp(1, n);
                let note = format!(
                    "iterations scaled {s}: {} runs {m} of {n} iterations",
                    spec.name
                );
                (m, Some(note))
            }
            _ => (n, None),
        }
    };
    let (mut w, note) = match &spec.kind {
        SpecKind::Imb {
            benchmark,
            bytes,
            iterations,
            ranks,
        } => {
            let (n, note) = scaled(*iterations);
            let w = imb::build(*benchmark, *ranks, *bytes, n, warmup)
                .map_err(|e| spec.error(at_ranks, e))?;
            (w, note)
        }
        SpecKind::Npb {
            benchmark,
            class,
            iterations,
            ranks,
        } => {
            let (n, note) = scaled(*iterations);
            let w = npb::build(*benchmark, *class, *ranks, n, warmup)
                .map_err(|e| spec.error(at_ranks, e))?;
            (w, note)
        }
        SpecKind::Goal { file } => {
            let w = super::goal::load_goal(file)
                .map_err(|e| spec.error(spec.at_benchmark, e.to_string()))?;
            (w, None)
        }
        SpecKind::Queue(q) => {
            let (n, note) = scaled(q.iterations);
            let q = QueueParams {
                iterations: n,
                ..q.clone()
            };
            let w = queue::build(&q, warmup).map_err(|e| spec.error(spec.at_benchmark, e))?;
            (w, note)
        }
    };
    w.name = spec.name.clone();
    w.notes.extend(note);
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::check::{check, check_with, SendMode};

    /// Found by fuzzing: a carriage return without its line feed gave an empty message.
    #[test]
    fn lone_carriage_return_is_named() {
        let e = parse("\r\rsuite = \"imb\"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:1:1: expected a line feed after the carriage return"
        );
    }

    fn parse(text: &str) -> Result<Spec, SpecError> {
        parse_spec(text, Path::new("specs/x.toml"))
    }

    fn spec_files() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let mut files = Vec::new();
        for dir in ["imb", "npb"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "toml") {
                    files.push(p);
                }
            }
        }
        files.sort();
        files
    }

    #[test]
    fn every_spec_file_loads_builds_and_checks() {
        let files = spec_files();
        assert_eq!(files.len(), 14);
        let mut names = Vec::new();
        for f in files {
            let spec = load_spec(&f).unwrap_or_else(|e| panic!("{e}"));
            let w = build(&spec, None, false).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(w.name, spec.name);
            assert_eq!(w.ranks.len(), 16);
            assert!(w.notes.is_empty());
            check(&w).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            check_with(&w, SendMode::Synchronous)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            names.push(spec.name);
        }
        names.sort();
        names.dedup();
        let want = [
            "AA", "BC", "BT", "CG", "FT", "GA", "MG", "PP", "RD", "SP", "XC",
        ];
        assert_eq!(names, want);
    }

    #[test]
    fn the_engines_specs_load_build_and_check_on_two_ranks() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/engines");
        for (file, bench) in [
            ("uniband-16k.toml", ImbBenchmark::Uniband),
            ("biband-16k.toml", ImbBenchmark::Biband),
            ("pingpong-10.toml", ImbBenchmark::PingPong),
        ] {
            let spec = load_spec(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                matches!(spec.kind, SpecKind::Imb { benchmark, ranks: 2, .. } if benchmark == bench),
                "{file}: {:?}",
                spec.kind
            );
            let w = build(&spec, None, true).unwrap_or_else(|e| panic!("{e}"));
            check(&w).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }

    #[test]
    fn the_16k_and_1m_files_say_what_the_paper_ran() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/imb");
        let spec = load_spec(&dir.join("bcast-1m.toml")).unwrap();
        let want = SpecKind::Imb {
            benchmark: ImbBenchmark::Bcast,
            bytes: 1 << 20,
            iterations: 10,
            ranks: 16,
        };
        assert_eq!(spec.kind, want);
        let spec = load_spec(&dir.join("pingping-16k.toml")).unwrap();
        assert_eq!(spec.name, "XC");
    }

    #[test]
    fn npb_defaults() {
        let s = parse("name = \"MG\"\nsuite = \"npb\"\nbenchmark = \"mg\"\n").unwrap();
        let want = SpecKind::Npb {
            benchmark: NpbBenchmark::Mg,
            class: NpbClass::S,
            iterations: 4,
            ranks: 16,
        };
        assert_eq!(s.kind, want);
    }

    #[test]
    fn scaled_iterations_are_noted() {
        let s = parse("name = \"CG\"\nsuite = \"npb\"\nbenchmark = \"cg\"\n").unwrap();
        let w = build(&s, Some(0.25), false).unwrap();
        assert_eq!(
            w.notes,
            vec!["iterations scaled 0.25: CG runs 4 of 15 iterations".to_string()]
        );
        let full = build(&s, Some(1.0), false).unwrap();
        assert!(full.notes.is_empty());
        let tiny = build(&s, Some(0.001), false).unwrap();
        assert_eq!(
            tiny.notes,
            vec!["iterations scaled 0.001: CG runs 1 of 15 iterations".to_string()]
        );
        let e = build(&s, Some(1.5), false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:3:13: iteration scale 1.5 must be in (0, 1]"
        );
        assert_eq!(check(&w).unwrap().messages(), 4 * 184 * 16);
    }

    #[test]
    fn bad_suite() {
        let e = parse("name = \"PP\"\nsuite = \"mpi\"\nbenchmark = \"pingpong\"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:2:9: unknown variant `mpi`, expected one of imb, npb, goal, queue"
        );
    }

    #[test]
    fn unknown_key() {
        let e = parse("name = \"PP\"\nsuite = \"imb\"\nbenchmark = \"pingpong\"\nbyte = 16384\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:4:1: unknown field `byte`, expected one of name, suite, benchmark, bytes, iterations, ranks, class, file, depth, position, sources"
        );
    }

    #[test]
    fn missing_bytes() {
        let e =
            parse("name = \"PP\"\nsuite = \"imb\"\nbenchmark = \"pingpong\"\niterations = 10\n")
                .unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:3:13: IMB benchmarks need `bytes`, the message size in bytes"
        );
    }

    #[test]
    fn other_errors_point_at_the_key() {
        let e =
            parse("name = \"X\"\nsuite = \"imb\"\nbenchmark = \"cg\"\nbytes = 8\niterations = 1\n")
                .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.msg.starts_with("not an IMB benchmark"), "{e}");
        let e = parse("name = \"X\"\nsuite = \"npb\"\nbenchmark = \"cg\"\nclass = \"A\"\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:4:9: class \"A\" is not modelled: expected \"S\""
        );
        let e =
            parse("name = \"X\"\nsuite = \"npb\"\nbenchmark = \"bt\"\nbytes = 8\n").unwrap_err();
        assert_eq!((e.line, e.col), (4, 9));
        let e = parse("name = \"X\"\nsuite = \"npb\"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:2:9: suite \"npb\" needs `benchmark`"
        );
        let e = parse("suite = \"npb\"\nbenchmark = \"bt\"\n").unwrap_err();
        assert!(e.msg.contains("missing field `name`"), "{e}");
        // A rank count NPB refuses, at the `ranks` value.
        let s = parse("name = \"BT\"\nsuite = \"npb\"\nbenchmark = \"bt\"\nranks = 8\n").unwrap();
        let e = build(&s, None, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:4:9: NPB BT needs a square number of ranks (1, 4, 9, 16, ...), not 8"
        );
    }

    #[test]
    fn goal_specs() {
        let s = parse("name = \"G\"\nsuite = \"goal\"\nfile = \"sched/a.goal\"\n").unwrap();
        assert_eq!(
            s.kind,
            SpecKind::Goal {
                file: PathBuf::from("specs/sched/a.goal")
            }
        );
        // The schedule is read when the spec is built; this one does not exist.
        let e = build(&s, None, false).unwrap_err().to_string();
        assert!(
            e.starts_with("specs/x.toml:3:8: ") && e.contains("cannot read"),
            "{e}"
        );
        let e = parse("name = \"G\"\nsuite = \"goal\"\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 9));
        let e = parse("name = \"G\"\nsuite = \"goal\"\nfile = \"a\"\nranks = 4\n").unwrap_err();
        assert!(
            e.msg.starts_with("`ranks` is not used by suite \"goal\""),
            "{e}"
        );
    }

    fn queue(keys: &str) -> Result<Spec, SpecError> {
        parse(&format!("name = \"Q\"\nsuite = \"queue\"\n{keys}"))
    }

    #[test]
    fn the_queue_files_load_build_and_check() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/queue");
        for (file, bench, depth, ranks) in [
            ("preposted-256.toml", QueueBenchmark::Preposted, 256, 2),
            ("unload-1000.toml", QueueBenchmark::Unload, 1000, 4),
            ("unexpected-256.toml", QueueBenchmark::Unexpected, 256, 2),
        ] {
            let spec = load_spec(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
            let SpecKind::Queue(q) = &spec.kind else {
                panic!("{file}: {:?}", spec.kind)
            };
            assert_eq!((q.benchmark, q.depth, q.ranks), (bench, depth, ranks));
            assert_eq!(format!("{}.toml", spec.name), file);
            let w = build(&spec, None, true).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(w.ranks.len(), ranks);
            check(&w).unwrap_or_else(|e| panic!("{file}: {e}"));
            check_with(&w, SendMode::Synchronous).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(crate::workload::group_of(&spec), "queue");
        }
    }

    #[test]
    fn queue_defaults() {
        let s = queue("benchmark = \"preposted\"\ndepth = 30\n").unwrap();
        let want = QueueParams::new(QueueBenchmark::Preposted, 30);
        assert_eq!(s.kind, SpecKind::Queue(want.clone()));
        assert_eq!((want.bytes, want.iterations, want.ranks), (8, 10, 2));
        let s = queue("benchmark = \"unexpected\"\ndepth = 30\n").unwrap();
        let SpecKind::Queue(q) = s.kind else { panic!() };
        assert_eq!((q.position, q.iterations), (30, 1));
        let s =
            queue("benchmark = \"unload\"\ndepth = 30\nranks = 4\nsources = \"skewed\"\n").unwrap();
        let SpecKind::Queue(q) = s.kind else { panic!() };
        assert_eq!((q.ranks, q.sources), (4, Sources::Skewed));
        // Scaled iterations: 3 of 10 ping-pongs.
        let s = queue("benchmark = \"preposted\"\ndepth = 4\n").unwrap();
        let w = build(&s, Some(0.25), true).unwrap();
        assert_eq!(
            w.notes,
            [
                "after the timer stops, 3 messages drain the queue, each matched at its head",
                "iterations scaled 0.25: Q runs 3 of 10 iterations"
            ]
        );
        // The ready, the flushing round trip, 3 ping-pongs and the drain.
        assert_eq!(check(&w).unwrap().messages(), 3 + 2 * 3 + 3);
    }

    #[test]
    fn queue_errors_point_at_the_key() {
        let e = |keys: &str| queue(keys).unwrap_err().to_string();
        assert_eq!(
            e("benchmark = \"preposted\"\n"),
            "specs/x.toml:3:13: queue benchmarks need `depth`, the entries in the searched \
             queue (1 to 32768)"
        );
        assert_eq!(
            e("benchmark = \"pingpong\"\ndepth = 4\n"),
            "specs/x.toml:3:13: not a queue benchmark: expected one of preposted, unload, unexpected"
        );
        assert_eq!(
            e("depth = 4\n"),
            "specs/x.toml:2:9: suite \"queue\" needs `benchmark`"
        );
        assert_eq!(
            e("benchmark = \"unload\"\ndepth = 0\n"),
            "specs/x.toml:4:9: depth must be 1 to 32768, not 0"
        );
        assert_eq!(
            e("benchmark = \"unload\"\ndepth = 40000\n"),
            "specs/x.toml:4:9: depth must be 1 to 32768, not 40000"
        );
        assert!(e("benchmark = \"unload\"\ndepth = -1\n").starts_with("specs/x.toml:4:9: "));
        assert_eq!(
            e("benchmark = \"preposted\"\ndepth = 4\nposition = 2\n"),
            "specs/x.toml:5:12: `position` is only for benchmark \"unexpected\""
        );
        assert_eq!(
            e("benchmark = \"unexpected\"\ndepth = 4\nposition = 5\n"),
            "specs/x.toml:5:12: position must be 1 to depth (4), not 5"
        );
        assert_eq!(
            e("benchmark = \"unexpected\"\ndepth = 4\nsources = \"skewed\"\n"),
            "specs/x.toml:5:11: `sources` is only for benchmark \"unload\""
        );
        assert_eq!(
            e("benchmark = \"unload\"\ndepth = 4\nsources = \"random\"\n"),
            "specs/x.toml:5:11: unknown variant `random`, expected uniform or skewed"
        );
        assert_eq!(
            e("benchmark = \"unload\"\ndepth = 4\nsources = \"skewed\"\n"),
            "specs/x.toml:5:11: skewed sources need 3 to 4096 ranks (rank 0 and two senders), not 2"
        );
        assert_eq!(
            e("benchmark = \"unexpected\"\ndepth = 4\nranks = 3\n"),
            "specs/x.toml:5:9: unexpected runs on 2 ranks, not 3 (only unload spreads its \
             senders over more)"
        );
        assert_eq!(
            e("benchmark = \"unexpected\"\ndepth = 32768\niterations = 32768\n"),
            "specs/x.toml:5:14: unexpected sends depth + iterations - 1 = 65535 messages, each \
             with a tag of its own: at most 65534"
        );
        assert_eq!(
            e("benchmark = \"unload\"\ndepth = 4\nclass = \"S\"\n"),
            "specs/x.toml:5:9: `class` is for NPB benchmarks"
        );
        // The queue keys belong to the queue suite.
        let e = parse("name = \"X\"\nsuite = \"imb\"\nbenchmark = \"pingpong\"\ndepth = 4\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "specs/x.toml:4:9: `depth` is only for suite \"queue\""
        );
        let e = parse("name = \"G\"\nsuite = \"goal\"\nfile = \"a\"\nsources = \"skewed\"\n")
            .unwrap_err();
        assert!(
            e.msg.starts_with("`sources` is not used by suite \"goal\""),
            "{e}"
        );
    }
}
