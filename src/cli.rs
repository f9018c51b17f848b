//! The `moped` command line. [`main_with_args`] parses, runs one subcommand and returns the
//! exit status: 0 on success, 1 for a user error (bad file, failed run, failed test), 2 for
//! a usage error. It never panics on any input; a bug that panics is reported as an internal
//! error (status 101) instead of unwinding into the caller (the Python extension calls it).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::api::{self, Design, MopedError};
use crate::config::PrefetchKind;
use crate::stats::{StatValue, StatsRegistry};

/// Exit status of a panic caught at the top (a bug, not a user error).
const EXIT_INTERNAL: i32 = 101;
/// Exit status of a command stopped by Ctrl-C: 128 + SIGINT, as shells report it.
const EXIT_INTERRUPTED: i32 = 130;

/// Makes Ctrl-C (SIGINT) stop the command: the running simulations stop at their next
/// look at the flag and the command exits 130. A phase that never looks (reading a large
/// file, writing results) is ended a second later all the same. For the binary only:
/// inside Python, Python's own handler keeps SIGINT.
pub fn stop_on_ctrl_c() {
    // Without a handler (one was already set), Ctrl-C keeps its default: ending the process.
    let _ = ctrlc::set_handler(|| {
        crate::sim::interrupt::request();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let _ = writeln!(io::stderr(), "error: interrupted");
        std::process::exit(EXIT_INTERRUPTED);
    });
}

#[derive(Parser, Debug)]
#[command(
    name = "moped",
    version,
    about = "Cycle-level simulator of a 16-core CMP with directory MOESI coherence and MOPED",
    long_about = "Cycle-level simulator of a 16-core chip multiprocessor with directory MOESI \
                  coherence, built to study MOPED, a device that moves MPI message data through \
                  the coherence protocol. Every setting defaults to the paper's Table 1."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a program file and write stats.txt, stats.json, stats.csv and config.toml.
    Run(RunArgs),
    /// Random coherence test (false sharing, set conflicts, random delays) on tiny caches.
    RandomTest(RandomTestArgs),
    /// Exhaustive check of the protocol on small configurations (c1, c2, c3).
    Check(CheckArgs),
    /// Inspect and check protocol tables.
    Protocol {
        #[command(subcommand)]
        command: ProtocolCommand,
    },
    /// Simulation speed (host time per simulated event); not a test.
    Bench(BenchArgs),
    /// Run an MPI workload (a spec in workloads/ or a GOAL schedule) with every message checked.
    Mpi(MpiArgs),
    /// Reproduce the paper's Figure 10: 11 benchmarks x 4 designs, reductions, report.
    Figure10(Figure10Args),
    /// Write a workload (a spec or a GOAL schedule) as a GOAL schedule, for LogGOPSim.
    Goal(GoalArgs),
    /// MPI matching engines on the queue benchmarks: matching.csv and a report of the papers' claims.
    Matching(MatchingArgs),
    /// MOPED with one and two engines under each scheme (base, SO, RO, DSR, SR) on IMB
    /// Uniband, Biband and PingPong: engines.csv and a report of the multi-CPU NIC paper's claims.
    Engines(EnginesArgs),
    /// The gem5 companion's generated files.
    Gem5 {
        #[command(subcommand)]
        command: Gem5Command,
    },
    /// Compare an embedded run with a gem5 run: cycles, L1 and L2 misses side by side.
    Compare(CompareArgs),
}

#[derive(Subcommand, Debug)]
enum Gem5Command {
    /// Generate the SLICC states, events and transitions of MOPED_CMP_directory from the
    /// tables in protocols/ (all four designs in one build, selected by a parameter).
    Slicc {
        /// The extras' protocol folder, holding the hand-written machine files.
        #[arg(long, default_value = "gem5-configs/moped_ext/protocol")]
        dir: PathBuf,
        /// Write nothing; fail if a generated file is out of date.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// gem5's output folder (m5out: stats.txt with config.ini, config.json or moped.json).
    #[arg(long, value_name = "DIR")]
    gem5: PathBuf,
    /// The embedded run's folder (written by `moped run` or `moped mpi`).
    #[arg(long, value_name = "DIR")]
    embedded: PathBuf,
    /// Largest accepted |gem5 - embedded|, in percent of the gem5 value.
    #[arg(long, default_value_t = crate::analysis::compare::DEFAULT_TOLERANCE_PCT, allow_negative_numbers = true, value_name = "PCT")]
    tolerance: f64,
    /// The dump of gem5's stats.txt to compare: from 0, or from the end when negative (-1 is the last).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    dump: i64,
    /// Output format (default: a text table, or with --out the file's extension: .md, .json, .csv).
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<CompareFormat>,
    /// Write the comparison into FILE; the text table still goes to stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Exit with status 1 when a metric differs by more than the tolerance.
    #[arg(long)]
    check: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum CompareFormat {
    /// An aligned plain-text table.
    Text,
    /// A Markdown table.
    Md,
    /// JSON: both runs, the tolerance and one object per metric.
    Json,
    /// CSV: one row per metric.
    Csv,
}

#[derive(Args, Debug)]
struct MpiArgs {
    /// Workload: a spec (`.toml`, e.g. workloads/imb/pingpong-16k.toml) or a GOAL schedule (`.goal`).
    #[arg(long, value_name = "FILE")]
    workload: PathBuf,
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds; a failure leaves only FAILED).
    #[arg(long)]
    force: bool,
    /// Design: baseline, basemoped, optcopy or optcache.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    protocol: Design,
    /// Seed of the simulator's random choices and of the buffers' initial bytes.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
    /// Scale the iteration counts by F (0 < F <= 1); the scaling is reported with the results.
    #[arg(long, value_name = "F")]
    iterations: Option<f64>,
    /// Run an IMB or NPB spec on P ranks, one per core: at least P cores and, past 16, x86-64
    /// page tables and 16 GiB of memory (unless the config or --set changed those).
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u64).range(1..=1024))]
    ranks: Option<u64>,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one config field, e.g. `--set l2.latency=12` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
    /// Skip the workload's warm-up: cold caches, statistics from the first cycle (the same
    /// as `--set workload.warmup=false`).
    #[arg(long)]
    no_warmup: bool,
}

#[derive(Args, Debug)]
struct GoalArgs {
    /// Workload: a spec (`.toml`, e.g. workloads/queue/preposted-256.toml) or a GOAL schedule (`.goal`).
    #[arg(value_name = "SPEC")]
    spec: PathBuf,
    /// The schedule file to write.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Leave out the workload's warm-up (IMB's warm-up calls, NPB's untimed start-up).
    #[arg(long)]
    no_warmup: bool,
}

#[derive(Args, Debug)]
struct MatchingArgs {
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds).
    #[arg(long)]
    force: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Only queues up to 300 entries deep (a few minutes instead of the full sweep).
    #[arg(long)]
    quick: bool,
    /// Engines to run, comma-separated: software, fsm, cam, cam4, cam64, alpu, hash,
    /// microcoded (default: all).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    engines: Vec<String>,
    /// Leave out Figure 10 under each engine (the 16 kB IMB and class S NPB runs).
    #[arg(long)]
    no_figure10: bool,
    /// The workload specs folder, for Figure 10's runs.
    #[arg(long, default_value = "workloads", value_name = "DIR")]
    workloads: PathBuf,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one config field, e.g. `--set moped.matching.list_cycles=2` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
}

#[derive(Args, Debug)]
struct EnginesArgs {
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds).
    #[arg(long)]
    force: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Two message sizes per benchmark instead of the full range (a minute or two).
    #[arg(long)]
    quick: bool,
    /// Schemes to run, comma-separated: base, SO, RO, DSR, SR (default: all).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    schemes: Vec<String>,
    /// Leave out Figure 10 under the best scheme (the 16 kB IMB and class S NPB runs).
    #[arg(long)]
    no_figure10: bool,
    /// The workload specs folder, for Figure 10's runs.
    #[arg(long, default_value = "workloads", value_name = "DIR")]
    workloads: PathBuf,
    /// Step costs: `emp` (EMP's firmware on the Tigon2) or `config` (the configuration's
    /// [moped.steps]).
    #[arg(long, default_value = "emp", value_name = "FROM")]
    costs: String,
    /// Design: basemoped, optcopy or optcache.
    #[arg(long, default_value_t = Design::OptCopy, value_parser = parse_design, value_name = "NAME")]
    protocol: Design,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one config field, e.g. `--set moped.handoff_cycles=40` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
}

#[derive(Args, Debug)]
struct Figure10Args {
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds; a failure leaves only FAILED).
    #[arg(long)]
    force: bool,
    /// Also run PingPong, PingPing and Bcast at 1 MB (12 more runs).
    #[arg(long)]
    large: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Seeds 1..=K per run (confidence intervals need K >= 2).
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = clap::value_parser!(u64).range(1..=100))]
    seeds: u64,
    /// Scale every workload's iteration count by F (0 < F <= 1); reported in the results.
    #[arg(long, value_name = "F")]
    iterations: Option<f64>,
    /// The folder holding the workload specs.
    #[arg(long, default_value = "workloads", value_name = "DIR")]
    workloads: PathBuf,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one config field, e.g. `--set l2.latency=12` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
    /// Skip every workload's warm-up: cold caches, statistics from the first cycle (the
    /// same as `--set workload.warmup=false`).
    #[arg(long)]
    no_warmup: bool,
    /// Also rerun Figure 10 under each alternative modelling choice (warm-up, queue
    /// layout, frame order, page walks, core model, port latency, buffer alignment, memory
    /// bandwidth) and write sensitivity.csv and a section of report.md (as many runs again
    /// per alternative).
    #[arg(long)]
    sensitivity: bool,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Program file (TOML, one `[[core]]` table per group of cores).
    #[arg(long, value_name = "FILE")]
    program: PathBuf,
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds; a failure leaves only FAILED).
    #[arg(long)]
    force: bool,
    /// Coherence protocol (design) name.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    protocol: Design,
    /// Seed of the simulator's random choices.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
    /// Override one config field, e.g. `--set l2.latency=12` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    set: Vec<(String, String)>,
    /// Print the miss summary of the totals only, not of every core.
    #[arg(long)]
    totals_only: bool,
}

#[derive(Args, Debug)]
struct RandomTestArgs {
    /// Number of cores (1 to 1,024: `system.cores`).
    #[arg(long, default_value_t = 16)]
    cores: usize,
    /// Checks to complete per seed.
    #[arg(long, default_value_t = 10_000)]
    checks: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of consecutive seeds to run, from --seed on.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Design whose protocol runs; the MOPED designs give a share of the operations to
    /// MOPED line reads, owns and fills.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    design: Design,
    /// The L1 prefetcher the cores' caches run (`l1.prefetch`): none, next_line or stride.
    #[arg(long, default_value = "none", value_parser = <PrefetchKind as std::str::FromStr>::from_str, value_name = "KIND")]
    prefetch: PrefetchKind,
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// Configurations to check (default: c1, c2 and c3, and m1, m2 and m3 for a MOPED design).
    #[arg(value_enum)]
    configs: Vec<CheckConfig>,
    /// Protocol to check.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    protocol: Design,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum CheckConfig {
    /// Two caches, one line.
    C1,
    /// Three caches, one line, symmetry reduction.
    C2,
    /// Two caches, two lines conflicting in one-line L2s.
    C3,
    /// c3 with two store values (manual runs; not in the default set).
    C3Full,
    /// Four caches, one line (manual runs; not in the default set).
    C4,
    /// Two caches, one line, with MOPED requests (MOPED designs only).
    M1,
    /// Three caches, one line, MOPED requests, symmetry reduction.
    M2,
    /// Two caches, two conflicting lines, core 0's MOPED issuing requests.
    M3,
    /// m3 with both cores' MOPEDs issuing requests (manual runs: minutes).
    M3Full,
}

impl CheckConfig {
    fn name(self) -> &'static str {
        match self {
            CheckConfig::C1 => "c1",
            CheckConfig::C2 => "c2",
            CheckConfig::C3 => "c3",
            CheckConfig::C3Full => "c3-full",
            CheckConfig::C4 => "c4",
            CheckConfig::M1 => "m1",
            CheckConfig::M2 => "m2",
            CheckConfig::M3 => "m3",
            CheckConfig::M3Full => "m3-full",
        }
    }
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Multiplies the work of every benchmark.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    scale: u32,
    /// Runs of each benchmark; the median time is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Instead: the host time of `moped matching --quick` (every engine, one host thread).
    #[arg(long)]
    matching: bool,
    /// Instead: how host time grows with the cores (16, 64, 256, 1,024): the random tester
    /// (20,000 checks) and IMB Alltoall (64 B, one iteration, up to 256 ranks), once each;
    /// with `--out FILE`, also as CSV.
    #[arg(long, conflicts_with = "matching")]
    scaling: bool,
    /// With `--scaling`: the CSV file to write.
    #[arg(long, requires = "scaling")]
    out: Option<PathBuf>,
    /// Instead: `moped figure10`'s 44 runs with fast-forward of polling on and then off, and
    /// the ratio of their wall times and events per second.
    #[arg(long, conflicts_with_all = ["matching", "scaling"])]
    figure10: bool,
    /// With `--figure10`: scale every workload's iteration count by F (0 < F <= 1).
    #[arg(long, requires = "figure10", value_name = "F")]
    iterations: Option<f64>,
    /// With `--figure10`: host threads running simulations (default: every host core).
    #[arg(long, requires = "figure10", value_name = "N")]
    jobs: Option<usize>,
}

#[derive(Subcommand, Debug)]
enum ProtocolCommand {
    /// Print a protocol's transition tables.
    Show {
        /// Protocol name.
        #[arg(value_parser = parse_design)]
        name: Design,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Md)]
        format: Format,
    },
    /// Check protocol machine files; prints `FILE: ok (...)` or `file:line:col: reason`.
    Lint {
        /// Machine files (`.sm`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// Markdown tables.
    Md,
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE (e.g. l2.latency=12)")),
    }
}

fn parse_design(s: &str) -> Result<Design, String> {
    s.parse().map_err(|e: api::UnknownDesign| e.to_string())
}

/// Why a command stopped early.
#[derive(Debug)]
enum Failure {
    /// A user error: printed as `error: ...`, status 1.
    User(String),
    /// A usage error found after parsing: printed as `error: ...`, status 2.
    Usage(String),
    /// Already reported (e.g. lint errors, failed seeds): status 1.
    Reported,
    /// Stdout was closed (`moped ... | head`): stop quietly, status 0.
    BrokenPipe,
    /// Stopped by Ctrl-C: status 130.
    Interrupted,
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::User(format!("cannot write output: {e}"))
        }
    }
}

impl From<MopedError> for Failure {
    fn from(e: MopedError) -> Self {
        if e.is_interrupted() {
            return Failure::Interrupted;
        }
        Failure::User(e.to_string())
    }
}

/// A failed argument check: a usage error.
fn usage(e: MopedError) -> Failure {
    Failure::Usage(e.to_string())
}

type CmdResult = Result<(), Failure>;

/// Runs `moped` with `args` (the first is the program name) and returns the exit status.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let command = args.clone();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" that go to stdout with status 0.
            let status = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return status;
        }
    };
    let outcome = std::panic::catch_unwind(move || dispatch(cli, &command));
    let mut stderr = io::stderr();
    match outcome {
        Ok(Ok(())) => 0,
        Ok(Err(Failure::User(msg))) => {
            let _ = writeln!(stderr, "error: {msg}");
            1
        }
        Ok(Err(Failure::Usage(msg))) => {
            let _ = writeln!(stderr, "error: {msg}");
            2
        }
        Ok(Err(Failure::Reported)) => 1,
        Ok(Err(Failure::BrokenPipe)) => 0,
        Ok(Err(Failure::Interrupted)) => {
            let _ = writeln!(stderr, "error: interrupted");
            EXIT_INTERRUPTED
        }
        Err(_) => {
            let _ = writeln!(stderr, "error: internal error (a bug in moped: the panic message is above); please report it");
            EXIT_INTERNAL
        }
    }
}

/// Runs the parsed command; `command` is the command line, for result folders' run.json.
fn dispatch(cli: Cli, command: &[String]) -> CmdResult {
    match cli.command {
        Command::Run(a) => cmd_run(a, command),
        Command::RandomTest(a) => cmd_random_test(a),
        Command::Check(a) => cmd_check(&a.configs, a.protocol),
        Command::Protocol {
            command: ProtocolCommand::Show { name, format },
        } => cmd_protocol_show(name, format),
        Command::Protocol {
            command: ProtocolCommand::Lint { files },
        } => cmd_protocol_lint(&files),
        Command::Bench(a) if a.scaling => cmd_bench_scaling(a.out.as_deref()),
        Command::Bench(a) if a.figure10 => cmd_bench_figure10(a.iterations, a.jobs),
        Command::Bench(a) => cmd_bench(a.scale, a.repeat, a.matching),
        Command::Mpi(a) => cmd_mpi(a, command),
        Command::Figure10(a) => cmd_figure10(a, command),
        Command::Matching(a) => cmd_matching(a, command),
        Command::Engines(a) => cmd_engines(a, command),
        Command::Goal(a) => cmd_goal(&a),
        Command::Gem5 {
            command: Gem5Command::Slicc { dir, check },
        } => cmd_gem5_slicc(&dir, check),
        Command::Compare(a) => cmd_compare(a),
    }
}

fn cmd_goal(a: &GoalArgs) -> CmdResult {
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

fn cmd_gem5_slicc(dir: &Path, check: bool) -> CmdResult {
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
fn compare_format(a: &CompareArgs) -> CompareFormat {
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

fn cmd_compare(a: CompareArgs) -> CmdResult {
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

/// Claims `--out` before a run (see `api::output`): a folder holding results without
/// `--force` is a usage error.
fn claim_out(
    dir: &Path,
    force: bool,
    command: &[String],
    (config, set): (Option<&Path>, &[(String, String)]),
) -> Result<api::output::OutDir, Failure> {
    let invocation = api::output::Invocation {
        command: command.to_vec(),
        config_file: config.map(|p| p.display().to_string()),
        overrides: set.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    };
    api::output::OutDir::claim(dir, force, invocation).map_err(usage)
}

fn cmd_mpi(mut a: MpiArgs, command: &[String]) -> CmdResult {
    api::figure10::check_scale(a.iterations).map_err(usage)?;
    no_warmup(&mut a.set, a.no_warmup);
    let cfg = api::config::config_with(a.config.as_deref(), &a.set)?;
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let ranks = a.ranks.map(|p| p as usize);
    let r = api::mpi::mpi(
        &cfg,
        &a.workload,
        a.protocol,
        a.seed,
        (a.iterations, ranks),
        Some(out),
    )?;
    let (w, run) = (&r.workload, &r.run);
    let mut out = io::stdout().lock();
    print_miss_summary(&mut out, &run.stats, w.ranks.len(), false)?;
    for note in &w.notes {
        writeln!(out, "note: {note}")?;
    }
    writeln!(
        out,
        "{} under {}, seed {}: {} cycles; {} messages ({} bytes) verified byte for byte; \
         {} events in {:.2} s; results in {}",
        w.name,
        a.protocol,
        a.seed,
        r.metrics["cycles"],
        run.messages_verified,
        run.bytes_verified,
        run.events,
        run.host_seconds,
        a.out.display()
    )?;
    Ok(())
}

fn cmd_matching(a: MatchingArgs, command: &[String]) -> CmdResult {
    let engines = if a.engines.is_empty() {
        api::matching::Matcher::all()
    } else {
        let parse = |e: &String| e.parse::<api::matching::Matcher>();
        a.engines
            .iter()
            .map(parse)
            .collect::<Result<_, _>>()
            .map_err(|e| usage(MopedError::Io(format!("--engines: {e}"))))?
    };
    let opts = api::matching::MatchingOptions {
        out: a.out.clone(),
        config: api::config::config_with(a.config.as_deref(), &a.set)?,
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        engines,
        quick: a.quick,
        figure10: (!a.no_figure10)
            .then(|| api::matching::figure10::Figure10Part::new(a.workloads, a.quick)),
    };
    let n = opts.run_count();
    eprintln!(
        "matching: {n} runs on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    let progress = |_i, done, r: &Result<_, _>| {
        let _ = writeln!(io::stderr(), "{}", api::figure10::progress_line(done, n, r));
    };
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let m = api::matching::matching(&opts, out, &progress)?;
    let mut files = vec!["matching.csv"];
    if !m.figure10.is_empty() {
        files.push("figure10_engines.csv");
    }
    if !m.stream64.is_empty() {
        files.push("stream64.csv");
    }
    if !m.lhs.is_empty() {
        files.push("lhs.csv");
    }
    println!(
        "{} runs, {} messages verified, host time {:.1} s; {} and report.md in {}",
        m.runs,
        m.messages_verified,
        m.host_seconds,
        files.join(", "),
        a.out.display()
    );
    Ok(())
}

fn cmd_engines(a: EnginesArgs, command: &[String]) -> CmdResult {
    let costs = a
        .costs
        .parse::<api::engines::Costs>()
        .map_err(|e| usage(MopedError::Io(format!("--costs: {e}"))))?;
    let schemes = if a.schemes.is_empty() {
        api::engines::Scheme::ALL.to_vec()
    } else {
        a.schemes
            .iter()
            .map(|s| s.parse::<api::engines::Scheme>())
            .collect::<Result<_, _>>()
            .map_err(|e| usage(MopedError::Io(format!("--schemes: {e}"))))?
    };
    if !a.protocol.has_moped() {
        let e = format!(
            "--protocol {}: the engines are MOPED's; pick basemoped, optcopy or optcache",
            a.protocol
        );
        return Err(usage(MopedError::Io(e)));
    }
    let opts = api::engines::EnginesOptions {
        config: api::config::config_with(a.config.as_deref(), &a.set)?,
        costs,
        design: a.protocol,
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        quick: a.quick,
        schemes,
        figure10: (!a.no_figure10).then(|| api::figure10::Figure10Part::new(a.workloads, a.quick)),
    };
    let n = opts.run_count();
    eprintln!(
        "engines: {n} runs on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    let progress = |_i, done, r: &Result<_, _>| {
        let _ = writeln!(io::stderr(), "{}", api::figure10::progress_line(done, n, r));
    };
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let e = api::engines::engines(&opts, out, &progress)?;
    let tables = if e.figure10.is_empty() {
        "engines.csv"
    } else {
        "engines.csv, figure10_schemes.csv"
    };
    println!(
        "{} runs, {} messages verified, host time {:.1} s; {tables} and report.md in {}",
        e.runs,
        e.messages_verified,
        e.host_seconds,
        a.out.display()
    );
    Ok(())
}

fn cmd_figure10(mut a: Figure10Args, command: &[String]) -> CmdResult {
    api::figure10::check_scale(a.iterations).map_err(usage)?;
    no_warmup(&mut a.set, a.no_warmup);
    let opts = api::figure10::Figure10Options {
        out: a.out.clone(),
        workloads: a.workloads.clone(),
        large: a.large,
        seeds: (1..=a.seeds).collect(),
        iterations: a.iterations,
        config: api::config::config_with(a.config.as_deref(), &a.set)?,
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        sensitivity: a.sensitivity,
    };
    let n = api::figure10::run_count(&opts)?;
    let alternatives = if opts.sensitivity {
        let names: Vec<&str> = api::sensitivity::applicable(&opts.config)?
            .iter()
            .map(|(alt, _)| alt.name)
            .collect();
        format!(" (Figure 10, then again under {})", names.join(", "))
    } else {
        String::new()
    };
    eprintln!(
        "figure10: {n} runs{alternatives} on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    // A closed stderr (`2>&1 | head`) loses the progress lines, not the run.
    let progress = |_i, done, r: &Result<_, _>| {
        let _ = writeln!(io::stderr(), "{}", api::figure10::progress_line(done, n, r));
    };
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let f = api::figure10::figure10(&opts, out, &progress)?;
    print_figure10(&f, &opts)?;
    Ok(())
}

fn print_figure10(
    f: &api::figure10::Figure10,
    opts: &api::figure10::Figure10Options,
) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "reductions in execution cycles (1 - design/baseline):")?;
    let [d0, d1, d2] = Design::MOPED.map(Design::name);
    writeln!(
        out,
        "{:<7} {:<4} {d0:>10} {d1:>10} {d2:>10}",
        "group", "bench"
    )?;
    for (group, bench, values) in api::figure10::cycle_rows(f) {
        let mut line = format!("{group:<7} {bench:<4}");
        for v in values {
            line.push_str(&match v {
                Some(v) => format!(" {:>9.1}%", 100.0 * v),
                None => format!(" {:>10}", "n/a"),
            });
        }
        writeln!(out, "{line}")?;
    }
    for c in &f.claims {
        writeln!(out, "claim {}: {} ({})", c.id, c.verdict.label(), c.title)?;
    }
    let t = f.throughput.unwrap_or_default();
    writeln!(
        out,
        "{} runs in {:.1} s wall time ({:.2} M simulated events/s); {} messages verified; \
         per-run results in {}/ (e.g. {}), tables and report.md in {}",
        t.runs,
        t.wall_seconds,
        t.events_per_second() / 1e6,
        f.messages_verified,
        opts.out.join("runs").display(),
        f.tasks[0].dir_name(),
        opts.out.display()
    )
}

/// `--no-warmup` as the override it stands for, so run.json records it as one.
fn no_warmup(set: &mut Vec<(String, String)>, asked: bool) {
    if asked {
        set.push(("workload.warmup".into(), "false".into()));
    }
}

fn cmd_run(a: RunArgs, command: &[String]) -> CmdResult {
    let cfg = api::config::config_with(a.config.as_deref(), &a.set)?;
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let result = api::run::run_file(&cfg, &a.program, a.protocol, a.seed, Some(out))?;
    let mut out = io::stdout().lock();
    print_miss_summary(&mut out, &result.stats, cfg.system.cores, !a.totals_only)?;
    writeln!(
        out,
        "protocol {}, seed {}: {} cycles simulated in {:.2} s; results in {}",
        result.design,
        a.seed,
        result.cycles,
        result.host_seconds,
        a.out.display()
    )?;
    Ok(())
}

/// Prints the paper's headline counters per core and in total, from a run's stats.
pub fn print_miss_summary(
    out: &mut dyn Write,
    stats: &StatsRegistry,
    cores: usize,
    per_core: bool,
) -> io::Result<()> {
    let values: HashMap<&str, f64> = stats
        .stats()
        .iter()
        .map(|s| {
            let v = match s.value {
                StatValue::Int(i) => i as f64,
                StatValue::Float(f) => f,
            };
            (s.name.as_str(), v)
        })
        .collect();
    const COLUMNS: [(&str, &str); 6] = [
        ("l1d.hits", "L1 hits"),
        ("l1d.misses", "L1 misses"),
        ("l2.hits", "L2 hits"),
        ("l2.misses", "L2 misses"),
        ("l2.misses_other_cache", "other cache"),
        ("l2.misses_memory", "memory"),
    ];
    write!(out, "{:<8}", "")?;
    for (_, title) in COLUMNS {
        write!(out, " {title:>12}")?;
    }
    writeln!(out)?;
    let row = |out: &mut dyn Write, label: &str, prefix: &str| -> io::Result<()> {
        write!(out, "{label:<8}")?;
        for (suffix, _) in COLUMNS {
            match values.get(format!("{prefix}.{suffix}").as_str()) {
                Some(v) if v.fract() == 0.0 => write!(out, " {:>12}", *v as u64)?,
                Some(v) => write!(out, " {v:>12.2}")?,
                None => write!(out, " {:>12}", "-")?,
            }
        }
        writeln!(out)
    };
    if per_core {
        for c in 0..cores {
            row(out, &format!("cpu{c}"), &format!("system.cpu{c}"))?;
        }
    }
    row(out, "total", "system.total")?;
    writeln!(
        out,
        "(L2 misses are served by another cache or by memory, or need only write permission)"
    )?;
    if let Some(c) = values.get("sim.cycles") {
        writeln!(out, "sim.cycles {}", *c as u64)?;
    }
    Ok(())
}

fn cmd_random_test(a: RandomTestArgs) -> CmdResult {
    crate::config::check_cores(a.cores).map_err(|e| Failure::Usage(format!("--cores: {e}")))?;
    let mut out = io::stdout().lock();
    let mut failed = 0u64;
    for k in 0..a.seeds {
        let Some(seed) = a.seed.checked_add(k) else {
            return Err(Failure::Usage(format!("seed {} + {k} overflows", a.seed)));
        };
        let (tc, r, secs) =
            api::protocols::random_test(a.cores, a.checks, seed, (a.design, a.prefetch));
        match r {
            Ok(r) if r.mismatches == 0 && r.watchdog_trips == 0 => {
                writeln!(
                    out,
                    "seed {seed}: ok: {} checks, {} mismatches, {} watchdog trips; {} loads, {} stores, {} cycles, {} events, {} messages ({secs:.2} s)",
                    r.checks_completed,
                    r.mismatches,
                    r.watchdog_trips,
                    r.loads,
                    r.stores,
                    r.cycles,
                    r.events,
                    r.messages,
                )?;
                if a.design.has_moped() {
                    writeln!(out, "  {}", api::protocols::moped_traffic(&r))?;
                }
            }
            Ok(r) => {
                failed += 1;
                out.flush()?;
                let _ = writeln!(
                    io::stderr(),
                    "error: seed {seed}: {} mismatches, {} watchdog trips\n  replay: {}",
                    r.mismatches,
                    r.watchdog_trips,
                    tc.replay_command()
                );
            }
            Err(e) => {
                failed += 1;
                out.flush()?;
                let _ = writeln!(io::stderr(), "error: {e}");
            }
        }
    }
    if a.seeds > 1 {
        writeln!(out, "{} of {} seeds passed", a.seeds - failed, a.seeds)?;
    }
    if failed > 0 {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}

/// `moped check`: the exhaustive checker on each requested configuration (c1-c3 by
/// default, and m1-m3 for a MOPED design), then the table cells no configuration reached.
fn cmd_check(configs: &[CheckConfig], design: Design) -> CmdResult {
    let names: Vec<&str> = if configs.is_empty() {
        api::protocols::default_check_configs(design)
    } else {
        configs.iter().map(|c| c.name()).collect()
    };
    let mut out = io::stdout().lock();
    let mut reports = Vec::new();
    let mut failed = false;
    for (name, r) in names.iter().zip(api::protocols::check(design, &names)) {
        match r {
            Ok(r) => {
                writeln!(out, "{r}")?;
                reports.push(r);
            }
            Err(e) => {
                failed = true;
                out.flush()?;
                let _ = writeln!(io::stderr(), "error: {name}: {e}");
            }
        }
    }
    if !reports.is_empty() {
        let cov = api::protocols::coverage(&reports);
        writeln!(
            out,
            "coverage: {}/{} transition cells reached ({:.1} %)",
            cov.reached.len(),
            cov.possible.len(),
            cov.percent()
        )?;
        for c in &cov.unreached {
            writeln!(out, "  not reached: {c}")?;
        }
    }
    if failed {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}

fn cmd_bench(scale: u32, repeat: u32, matching: bool) -> CmdResult {
    let results = if matching {
        vec![api::matching::bench(repeat)?]
    } else {
        api::bench::run(scale, repeat).map_err(Failure::User)?
    };
    let mut out = io::stdout().lock();
    for r in &results {
        writeln!(out, "{r}")?;
    }
    Ok(())
}

fn cmd_bench_figure10(iterations: Option<f64>, jobs: Option<usize>) -> CmdResult {
    let opts = api::figure10::Figure10Options {
        out: PathBuf::new(),
        // As `moped figure10`'s default: run from the repository.
        workloads: PathBuf::from("workloads"),
        large: false,
        seeds: vec![1],
        iterations,
        config: crate::config::SystemConfig::default(),
        jobs: jobs.unwrap_or_else(api::figure10::default_jobs).max(1),
        sensitivity: false,
    };
    let [on, off] = api::figure10::bench_fast_forward(&opts, &|_, _, _| {})?;
    let mut out = io::stdout().lock();
    for (name, t) in [("fast-forward on", &on), ("fast-forward off", &off)] {
        writeln!(
            out,
            "{name:<17} {:>3} runs  {:>8.1} s wall  {:>14} events  {:>6.2} M events/s",
            t.runs,
            t.wall_seconds,
            t.events,
            t.events_per_second() / 1e6
        )?;
    }
    writeln!(
        out,
        "ratio (off / on)  wall time {:.2}x  events {:.2}x  events per second {:.2}x",
        off.wall_seconds / on.wall_seconds.max(1e-9),
        off.events as f64 / (on.events as f64).max(1.0),
        off.events_per_second() / on.events_per_second().max(1e-9)
    )?;
    Ok(())
}

fn cmd_bench_scaling(out: Option<&Path>) -> CmdResult {
    let mut stdout = io::stdout().lock();
    let mut failed = Ok(());
    let points = api::bench::scaling_default(|p| {
        if failed.is_ok() {
            failed = writeln!(stdout, "{:>5} cores  {}", p.cores, p.result)
                .and_then(|()| stdout.flush());
        }
    })
    .map_err(Failure::User)?;
    failed?;
    if let Some(path) = out {
        let csv = api::bench::scaling_csv(&points);
        std::fs::write(path, csv).map_err(|e| Failure::User(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

fn cmd_protocol_show(design: Design, format: Format) -> CmdResult {
    let md = match format {
        Format::Md => api::protocols::protocol_markdown(design),
    };
    let mut out = io::stdout().lock();
    out.write_all(md.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn cmd_protocol_lint(files: &[PathBuf]) -> CmdResult {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> i32 {
        main_with_args(args.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn usage_errors_exit_2() {
        assert_eq!(run(&["moped"]), 2);
        assert_eq!(run(&["moped", "fly"]), 2);
        assert_eq!(run(&["moped", "run"]), 2);
        assert_eq!(
            run(&[
                "moped",
                "run",
                "--program",
                "p",
                "--out",
                "o",
                "--set",
                "novalue"
            ]),
            2
        );
        assert_eq!(run(&["moped", "random-test", "--cores", "0"]), 2);
        assert_eq!(run(&["moped", "random-test", "--cores", "1025"]), 2);
        assert_eq!(run(&["moped", "protocol", "show", "nope"]), 2);
        assert_eq!(
            run(&["moped", "protocol", "show", "baseline", "--format", "html"]),
            2
        );
        assert_eq!(run(&["moped", "check", "c9"]), 2);
        assert_eq!(run(&["moped", "compare", "--gem5", "g"]), 2);
        assert_eq!(
            run(&[
                "moped",
                "compare",
                "--gem5",
                "g",
                "--embedded",
                "e",
                "--format",
                "xml"
            ]),
            2
        );
    }

    #[test]
    fn compare_of_missing_folders_is_a_user_error() {
        let missing = std::env::temp_dir().join(format!("moped-cli-none-{}", std::process::id()));
        let m = missing.to_str().unwrap();
        assert_eq!(run(&["moped", "compare", "--gem5", m, "--embedded", m]), 1);
    }

    #[test]
    fn goal_writes_a_spec_as_a_schedule() {
        let dir = std::env::temp_dir().join(format!("moped-cli-goal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("p.goal");
        let o = out.to_str().unwrap();
        let spec = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/workloads/queue/preposted-256.toml"
        );
        assert_eq!(run(&["moped", "goal", spec, "--out", o]), 0);
        let w = crate::workload::goal::load_goal(&out).unwrap();
        assert_eq!(w.ranks.len(), 2);
        // ANY_TAG receives beside barriers: refused, nothing written.
        let pp = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/workloads/imb/pingpong-16k.toml"
        );
        let out2 = dir.join("pp.goal");
        assert_eq!(
            run(&["moped", "goal", pp, "--out", out2.to_str().unwrap()]),
            1
        );
        assert!(!out2.exists());
        assert_eq!(run(&["moped", "goal", "--out", o]), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn help_and_version_exit_0() {
        assert_eq!(run(&["moped", "--version"]), 0);
    }

    #[test]
    fn empty_args_do_not_panic() {
        assert_eq!(main_with_args(Vec::new()), 2);
    }

    #[test]
    fn key_value_parsing() {
        assert_eq!(
            parse_key_value("l2.latency=12"),
            Ok(("l2.latency".into(), "12".into()))
        );
        assert_eq!(parse_key_value("a= b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_key_value("=1").is_err());
        assert!(parse_key_value("x").is_err());
    }

    #[test]
    fn lint_failures_exit_1() {
        // The messages are api::protocols' tests; here, the exit status.
        let dir = std::env::temp_dir().join(format!("moped-cli-lint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("Bad.sm");
        std::fs::write(&bad, "not a machine").unwrap();
        for f in [bad, dir.join("missing.sm")] {
            assert_eq!(run(&["moped", "protocol", "lint", f.to_str().unwrap()]), 1);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn garbage_files_are_clean_errors() {
        let dir = std::env::temp_dir().join(format!("moped-cli-garbage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        // Some garbage that is valid UTF-8 too, to get past the decoder.
        bytes.extend_from_slice(
            b"\n[[core]]\ncores = [0]\nops = '''\nload 0x\n'''\n[system]\ncores = -1\n",
        );
        let junk = dir.join("junk.bin");
        std::fs::write(&junk, &bytes).unwrap();
        let text_junk = dir.join("junk.toml");
        std::fs::write(&text_junk, String::from_utf8_lossy(&bytes).as_bytes()).unwrap();
        let out = dir.join("out");
        for f in [&junk, &text_junk] {
            let f = f.to_str().unwrap();
            let o = out.to_str().unwrap();
            assert_eq!(run(&["moped", "run", "--program", f, "--out", o]), 1);
            assert_eq!(
                run(&["moped", "run", "--config", f, "--program", f, "--out", o]),
                1
            );
            assert_eq!(run(&["moped", "protocol", "lint", f]), 1);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_set_is_a_user_error() {
        assert_eq!(
            run(&[
                "moped",
                "run",
                "--program",
                "nope.toml",
                "--out",
                "o",
                "--set",
                "l2.nosuchkey=1"
            ]),
            1
        );
    }

    #[test]
    fn random_test_small() {
        assert_eq!(
            run(&[
                "moped",
                "random-test",
                "--cores",
                "2",
                "--checks",
                "50",
                "--seed",
                "3",
                "--seeds",
                "2"
            ]),
            0
        );
        for design in ["basemoped", "optcopy", "optcache"] {
            let args = ["moped", "random-test", "--cores", "4", "--checks", "200"];
            assert_eq!(run(&[&args[..], &["--design", design]].concat()), 0);
        }
        // The design is named once, by --design; a wrong name is a usage error.
        assert_eq!(run(&["moped", "random-test", "--design", "nope"]), 2);
        assert_eq!(run(&["moped", "random-test", "--protocol", "optcopy"]), 2);
    }
}
