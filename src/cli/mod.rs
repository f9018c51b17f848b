//! The `moped` command line. [`main_with_args`] parses, runs one subcommand and returns the
//! exit status: 0 on success, 1 for a user error (bad file, failed run, failed test), 2 for
//! a usage error. It never panics on any input; a bug that panics is reported as an internal
//! error (status 101) instead of unwinding into the caller (the Python extension calls it).
//!
//! One file per group of commands: `experiments` (the simulations that write result
//! folders), `checks` (the random tester, the exhaustive checker, the benchmarks) and
//! `tables` (protocol tables, generated SLICC, GOAL output, comparisons); `args` holds
//! what each command accepts.

mod args;
mod checks;
mod experiments;
mod progress;
mod reference;
mod tables;

use std::io::{self, Write};

use clap::{Parser, Subcommand};

use crate::api::MopedError;

use args::*;
use checks::*;
pub use experiments::print_miss_summary;
use experiments::*;
pub use reference::cli_reference;
use tables::*;

/// Exit status of a panic caught at the top (a bug, not a user error).
const EXIT_INTERNAL: i32 = 101;
/// Exit status of a command stopped by Ctrl-C or SIGTERM: 128 + the signal's number, as
/// shells report it (130 and 143).
fn exit_interrupted() -> i32 {
    128 + crate::sim::interrupt::signal().unwrap_or(signal_hook::consts::SIGINT)
}

/// Makes Ctrl-C (SIGINT) and SIGTERM stop the command: the running simulations stop at
/// their next look at the flag, their partial result folders are removed, and the command
/// exits 130 or 143. A phase that never looks (reading a large file, writing results) is
/// ended a second later all the same, its partial folders removed first. For the binary
/// only: inside Python, Python's own handler keeps SIGINT.
pub fn stop_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    // Without a handler (the signals cannot be caught), they keep their defaults.
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            crate::sim::interrupt::request_by(signal);
            std::thread::sleep(std::time::Duration::from_secs(1));
            crate::api::output::remove_partial_folders();
            let _ = writeln!(io::stderr(), "error: interrupted");
            std::process::exit(128 + signal);
        }
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
    /// Record a real MPI run (`moped trace --out DIR -- mpiexec -n 16 ./app`) as a workload
    /// `moped mpi --workload DIR` runs, and as a GOAL schedule.
    Trace(TraceArgs),
    /// MPI matching engines on the queue benchmarks: matching.csv and a report of the papers' claims.
    Matching(MatchingArgs),
    /// The LHS paper in its own setting (DIMMnet-2, the emulated DIMMnet-3): its Figs. 4
    /// to 6 and claims, lhs.csv and report.md.
    Lhs(LhsArgs),
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
    /// The catalogue: every configuration key, every statistic or every command's help, without a simulation.
    Info {
        #[command(subcommand)]
        command: InfoCommand,
    },
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
    /// Stopped by Ctrl-C or SIGTERM: status 130 or 143.
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
            exit_interrupted()
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
        Command::Lhs(a) => cmd_lhs(a, command),
        Command::Goal(a) => cmd_goal(&a),
        Command::Trace(a) => cmd_trace(&a, command),
        Command::Gem5 {
            command: Gem5Command::Slicc { dir, check },
        } => cmd_gem5_slicc(&dir, check),
        Command::Compare(a) => cmd_compare(a),
        Command::Info { command } => cmd_info(command),
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
