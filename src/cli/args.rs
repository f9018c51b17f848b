//! What each command accepts (clap's derive), and the parsers of its values.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::api::{self, Design};
use crate::config::PrefetchKind;

#[derive(Subcommand, Debug)]
pub(super) enum Gem5Command {
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
pub(super) struct CompareArgs {
    /// gem5's output folder (m5out: stats.txt with config.ini, config.json or moped.json).
    #[arg(long, value_name = "DIR")]
    pub(super) gem5: PathBuf,
    /// The embedded run's folder (written by `moped run` or `moped mpi`).
    #[arg(long, value_name = "DIR")]
    pub(super) embedded: PathBuf,
    /// Largest accepted |gem5 - embedded|, in percent of the gem5 value.
    #[arg(long, default_value_t = crate::analysis::compare::DEFAULT_TOLERANCE_PCT, allow_negative_numbers = true, value_name = "PCT")]
    pub(super) tolerance: f64,
    /// The dump of gem5's stats.txt to compare: from 0, or from the end when negative (-1 is the last).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, value_name = "N")]
    pub(super) dump: i64,
    /// Output format (default: a text table, or with --out the file's extension: .md, .json, .csv).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(super) format: Option<CompareFormat>,
    /// Write the comparison into FILE; the text table still goes to stdout.
    #[arg(long, value_name = "FILE")]
    pub(super) out: Option<PathBuf>,
    /// Exit with status 1 when a metric differs by more than the tolerance.
    #[arg(long)]
    pub(super) check: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CompareFormat {
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
pub(super) struct MpiArgs {
    /// Workload: a spec (`.toml`, e.g. workloads/imb/pingpong-16k.toml), a GOAL schedule (`.goal`) or a folder `moped trace` recorded.
    #[arg(long, value_name = "FILE")]
    pub(super) workload: PathBuf,
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds; a failure leaves only FAILED).
    #[arg(long)]
    pub(super) force: bool,
    /// Design: baseline, basemoped, optcopy or optcache.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    pub(super) protocol: Design,
    /// Seed of the simulator's random choices and of the buffers' initial bytes.
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub(super) seed: u64,
    /// Scale the iteration counts by F (0 < F <= 1); the scaling is reported with the results.
    #[arg(long, value_name = "F")]
    pub(super) iterations: Option<f64>,
    /// Run an IMB or NPB spec on P ranks, one per core: at least P cores and, past 16, x86-64
    /// page tables and memory for all the run may touch, at least 16 GiB (unless the config
    /// or --set changed those).
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(super) ranks: Option<u64>,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Override one config field, e.g. `--set l2.latency=12` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) set: Vec<(String, String)>,
    /// Skip the workload's warm-up: cold caches, statistics from the first cycle (the same
    /// as `--set workload.warmup=false`).
    #[arg(long)]
    pub(super) no_warmup: bool,
    /// A GOAL schedule's messages touched: each sender writes its send buffer before each
    /// send, each receiver reads its receive buffer after each receive, one word every
    /// STRIDE bytes (64 if left out: every line); `--set workload.touch_buffers=STRIDE`.
    #[arg(long, value_name = "STRIDE", num_args = 0..=1, default_missing_value = "64")]
    pub(super) touch_buffers: Option<u64>,
    #[command(flatten)]
    pub(super) heartbeat: HeartbeatArgs,
}

/// Whether a single run prints its heartbeat on stderr.
#[derive(Args, Debug)]
pub(super) struct HeartbeatArgs {
    /// Show the run's heartbeat on stderr (simulated cycle, events per second, messages
    /// verified and time left where known): a bar when stderr is a terminal (the default
    /// there), else a line every 5 s of host time.
    #[arg(long, conflicts_with = "quiet")]
    pub(super) progress: bool,
    /// No heartbeat.
    #[arg(long)]
    pub(super) quiet: bool,
}

impl HeartbeatArgs {
    /// Whether to beat: as asked, else when stderr is a terminal.
    pub(super) fn on(&self) -> bool {
        use std::io::IsTerminal;
        self.progress || (!self.quiet && std::io::stderr().is_terminal())
    }
}

#[derive(Args, Debug)]
pub(super) struct GoalArgs {
    /// Workload: a spec (`.toml`, e.g. workloads/queue/preposted-256.toml) or a GOAL schedule (`.goal`).
    #[arg(value_name = "SPEC")]
    pub(super) spec: PathBuf,
    /// The schedule file to write.
    #[arg(long, value_name = "FILE")]
    pub(super) out: PathBuf,
    /// Leave out the workload's warm-up (IMB's warm-up calls, NPB's untimed start-up).
    #[arg(long)]
    pub(super) no_warmup: bool,
}

#[derive(Args, Debug)]
pub(super) struct TraceArgs {
    /// Folder for the trace: a `rank-R.trace` per process, and `schedule.goal`, the same run
    /// as a GOAL schedule (created if missing; refused if it holds results). Run it with
    /// `moped mpi --workload DIR`.
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the recording succeeds).
    #[arg(long)]
    pub(super) force: bool,
    /// Instructions per ns of the program's own time between MPI calls (1.0: Table 1's
    /// 1 GHz core at one cycle per instruction).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub(super) instructions_per_ns: f64,
    /// The MPI command to record, after `--`, e.g. `-- mpiexec -n 16 ./app` (its MPI's
    /// `mpicc`, or the compiler MPICC names, builds the tracer).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub(super) command: Vec<String>,
}

#[derive(Args, Debug)]
pub(super) struct MatchingArgs {
    /// Folder for the results (created if missing; refused if it holds other results). A
    /// folder holding an earlier run of this experiment is resumed: its runs whose
    /// workload, configuration, design and seed are unchanged are reused.
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds).
    #[arg(long)]
    pub(super) force: bool,
    /// Simulate every run again, reusing none of the --out folder's earlier runs.
    #[arg(long)]
    pub(super) fresh: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(super) jobs: Option<u64>,
    /// Only queues up to 300 entries deep (a few minutes instead of the full sweep).
    #[arg(long)]
    pub(super) quick: bool,
    /// Engines to run, comma-separated: software, fsm, cam, cam4, cam64, alpu, hash,
    /// microcoded (default: all).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(super) engines: Vec<String>,
    /// Leave out Figure 10 under each engine (the 16 kB IMB and class S NPB runs).
    #[arg(long)]
    pub(super) no_figure10: bool,
    /// The workload specs folder, for Figure 10's runs.
    #[arg(long, default_value = "workloads", value_name = "DIR")]
    pub(super) workloads: PathBuf,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Override one config field, e.g. `--set moped.matching.list_cycles=2` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) set: Vec<(String, String)>,
}

#[derive(Args, Debug)]
pub(super) struct LhsArgs {
    /// Folder for the results (created if missing; refused if it holds other results). A
    /// folder holding an earlier run of this experiment is resumed: its runs whose
    /// workload, configuration, design and seed are unchanged are reused.
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds).
    #[arg(long)]
    pub(super) force: bool,
    /// Simulate every run again, reusing none of the --out folder's earlier runs.
    #[arg(long)]
    pub(super) fresh: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(super) jobs: Option<u64>,
    /// Searches up to 256 entries deep (seconds instead of the full sweep to 16,384).
    #[arg(long)]
    pub(super) quick: bool,
    /// Override one field of both hosts' presets (configs/dimmnet2.toml and
    /// dimmnet3.toml), e.g. `--set nic.vl_cycles=40` (repeatable); each condition then sets
    /// the factors it varies.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) set: Vec<(String, String)>,
}

#[derive(Args, Debug)]
pub(super) struct EnginesArgs {
    /// Folder for the results (created if missing; refused if it holds other results). A
    /// folder holding an earlier run of this experiment is resumed: its runs whose
    /// workload, configuration, design and seed are unchanged are reused.
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds).
    #[arg(long)]
    pub(super) force: bool,
    /// Simulate every run again, reusing none of the --out folder's earlier runs.
    #[arg(long)]
    pub(super) fresh: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(super) jobs: Option<u64>,
    /// Two message sizes per benchmark instead of the full range (a minute or two).
    #[arg(long)]
    pub(super) quick: bool,
    /// Schemes to run, comma-separated: base, SO, RO, DSR, SR (default: all).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(super) schemes: Vec<String>,
    /// Run on one host only: `tigon` (the paper's testbed, seconds) or `cmp` (the
    /// transplant into MOPED); default both.
    #[arg(long, value_name = "HOST")]
    pub(super) only: Option<String>,
    /// Leave out Figure 10 under the best scheme (the 16 kB IMB and class S NPB runs).
    #[arg(long)]
    pub(super) no_figure10: bool,
    /// The workload specs folder, for Figure 10's runs.
    #[arg(long, default_value = "workloads", value_name = "DIR")]
    pub(super) workloads: PathBuf,
    /// Step costs: `emp` (EMP's firmware on the Tigon2) or `config` (the configuration's
    /// [moped.steps]).
    #[arg(long, default_value = "emp", value_name = "FROM")]
    pub(super) costs: String,
    /// Design: basemoped, optcopy or optcache.
    #[arg(long, default_value_t = Design::OptCopy, value_parser = parse_design, value_name = "NAME")]
    pub(super) protocol: Design,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Override one config field, e.g. `--set moped.handoff_cycles=40` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) set: Vec<(String, String)>,
}

#[derive(Args, Debug)]
pub(super) struct Figure10Args {
    /// Folder for the results (created if missing; refused if it holds other results). A
    /// folder holding an earlier Figure 10 is resumed: its runs whose workload,
    /// configuration, design, seed and iteration scale are unchanged are reused.
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds; a failure leaves only FAILED).
    #[arg(long)]
    pub(super) force: bool,
    /// Simulate every run again, reusing none of the --out folder's earlier runs.
    #[arg(long)]
    pub(super) fresh: bool,
    /// Also run PingPong, PingPing and Bcast at 1 MB (12 more runs).
    #[arg(long)]
    pub(super) large: bool,
    /// Host threads running simulations (default: every host core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(super) jobs: Option<u64>,
    /// Seeds 1..=K per run (confidence intervals need K >= 2).
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = clap::value_parser!(u64).range(1..=100))]
    pub(super) seeds: u64,
    /// Scale every workload's iteration count by F (0 < F <= 1); reported in the results.
    #[arg(long, value_name = "F")]
    pub(super) iterations: Option<f64>,
    /// The folder holding the workload specs.
    #[arg(long, default_value = "workloads", value_name = "DIR")]
    pub(super) workloads: PathBuf,
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Override one config field, e.g. `--set l2.latency=12` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) set: Vec<(String, String)>,
    /// Skip every workload's warm-up: cold caches, statistics from the first cycle (the
    /// same as `--set workload.warmup=false`).
    #[arg(long)]
    pub(super) no_warmup: bool,
    /// A GOAL schedule's messages touched: each sender writes its send buffer before each
    /// send, each receiver reads its receive buffer after each receive, one word every
    /// STRIDE bytes (64 if left out: every line); `--set workload.touch_buffers=STRIDE`.
    #[arg(long, value_name = "STRIDE", num_args = 0..=1, default_missing_value = "64")]
    pub(super) touch_buffers: Option<u64>,
    /// Also rerun Figure 10 under each alternative modelling choice (warm-up, queue
    /// layout, frame order, page walks, core model, port latency, buffer alignment, memory
    /// bandwidth) and write sensitivity.csv and a section of report.md (as many runs again
    /// per alternative).
    #[arg(long)]
    pub(super) sensitivity: bool,
}

#[derive(Args, Debug)]
pub(super) struct RunArgs {
    /// System config (TOML); fields left out take the Table 1 defaults.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Program file (TOML, one `[[core]]` table per group of cores).
    #[arg(long, value_name = "FILE")]
    pub(super) program: PathBuf,
    /// Folder for the results (created if missing; refused if it holds results).
    #[arg(long, value_name = "DIR")]
    pub(super) out: PathBuf,
    /// Replace the contents of a non-empty --out folder (once the run succeeds; a failure leaves only FAILED).
    #[arg(long)]
    pub(super) force: bool,
    /// Coherence protocol (design) name.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    pub(super) protocol: Design,
    /// Seed of the simulator's random choices.
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub(super) seed: u64,
    /// Override one config field, e.g. `--set l2.latency=12` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub(super) set: Vec<(String, String)>,
    /// Print the miss summary of the totals only, not of every core.
    #[arg(long)]
    pub(super) totals_only: bool,
    #[command(flatten)]
    pub(super) heartbeat: HeartbeatArgs,
}

#[derive(Args, Debug)]
pub(super) struct RandomTestArgs {
    /// Number of cores (1 to 1,024: `system.cores`).
    #[arg(long, default_value_t = 16)]
    pub(super) cores: usize,
    /// Checks to complete per seed.
    #[arg(long, default_value_t = 10_000)]
    pub(super) checks: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Number of consecutive seeds to run, from --seed on.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) seeds: u64,
    /// Design whose protocol runs; the MOPED designs give a share of the operations to
    /// MOPED line reads, owns and fills.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    pub(super) design: Design,
    /// The L1 prefetcher the cores' caches run (`l1.prefetch`): none, next_line or stride.
    #[arg(long, default_value = "none", value_parser = <PrefetchKind as std::str::FromStr>::from_str, value_name = "KIND")]
    pub(super) prefetch: PrefetchKind,
    /// A tenth of the cores' picks flush a check's line out of their caches (clflush) or
    /// prefetch it (a software prefetch); neither may change a value.
    #[arg(long)]
    pub(super) cache_ops: bool,
}

#[derive(Args, Debug)]
pub(super) struct CheckArgs {
    /// Configurations to check (default: c1, c2 and c3, and m1, m2 and m3 for a MOPED design).
    #[arg(value_enum)]
    pub(super) configs: Vec<CheckConfig>,
    /// Protocol to check.
    #[arg(long, default_value_t = Design::Baseline, value_parser = parse_design, value_name = "NAME")]
    pub(super) protocol: Design,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CheckConfig {
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
    pub(super) fn name(self) -> &'static str {
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
pub(super) struct BenchArgs {
    /// Multiplies the work of every benchmark.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(super) scale: u32,
    /// Runs of each benchmark; the median time is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(super) repeat: u32,
    /// Instead: the host time of `moped matching --quick` (every engine, one host thread).
    #[arg(long)]
    pub(super) matching: bool,
    /// Instead: how host time grows with the cores (16, 64, 256, 1,024): the random tester
    /// (20,000 checks) and IMB Alltoall (64 B, one iteration, up to 256 ranks), once each;
    /// with `--out FILE`, also as CSV.
    #[arg(long, conflicts_with = "matching")]
    pub(super) scaling: bool,
    /// With `--scaling`: the CSV file to write.
    #[arg(long, requires = "scaling")]
    pub(super) out: Option<PathBuf>,
    /// Instead: `moped figure10`'s 44 runs with fast-forward of polling on and then off, and
    /// the ratio of their wall times and events per second.
    #[arg(long, conflicts_with_all = ["matching", "scaling"])]
    pub(super) figure10: bool,
    /// With `--figure10`: scale every workload's iteration count by F (0 < F <= 1).
    #[arg(long, requires = "figure10", value_name = "F")]
    pub(super) iterations: Option<f64>,
    /// With `--figure10`: host threads running simulations (default: every host core).
    #[arg(long, requires = "figure10", value_name = "N")]
    pub(super) jobs: Option<usize>,
}

#[derive(Subcommand, Debug)]
pub(super) enum ProtocolCommand {
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

#[derive(Subcommand, Debug)]
pub(super) enum InfoCommand {
    /// Every key of the configuration: type, default, allowed values, description.
    Config {
        /// Output format.
        #[arg(long, value_enum, default_value_t = InfoFormat::Md)]
        format: InfoFormat,
    },
    /// Every statistic a run writes: name (with `{N}` for indices), kind, unit, the runs
    /// that write it, description.
    Stats {
        /// Output format.
        #[arg(long, value_enum, default_value_t = InfoFormat::Md)]
        format: InfoFormat,
    },
    /// Every command's --help as one Markdown page (docs/cli-reference.md).
    Cli,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InfoFormat {
    /// Markdown tables.
    Md,
    /// JSON: `{"format": ..., "params" | "stats": [...]}`.
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    /// Markdown tables.
    Md,
}

pub(super) fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE (e.g. l2.latency=12)")),
    }
}

pub(super) fn parse_design(s: &str) -> Result<Design, String> {
    s.parse().map_err(|e: api::UnknownDesign| e.to_string())
}
