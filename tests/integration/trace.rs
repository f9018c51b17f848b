//! `moped trace`: a real MPI program recorded and run under every design, where an MPI is
//! installed (the tests say why they skip otherwise); and the trace reader's errors,
//! which need no MPI.

use std::path::{Path, PathBuf};
use std::process::Command;

use moped::config::SystemConfig;
use moped::design::Design;
use moped::mpi::{run_workload, MpiParams};
use moped::workload::trace::{load_trace, TraceOptions};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-trace-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Whether `tool --version` runs.
fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_recorded_mpi_program_runs_under_every_design_with_every_message_verified() {
    let mpicc = moped::api::trace::mpicc();
    if !have(&mpicc.to_string_lossy()) || !have("mpiexec") {
        eprintln!(
            "skipped: no MPI here (`{}` and `mpiexec` are needed; Debian: apt-get install \
             mpich libmpich-dev)",
            mpicc.display()
        );
        return;
    }
    let d = scratch("record");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_c/exchange.c");
    let built = Command::new(&mpicc)
        .args(["-O1", "-o"])
        .arg(d.join("exchange"))
        .arg(&src)
        .status()
        .unwrap();
    assert!(built.success());
    let out = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args([
            "trace",
            "--out",
            "rec",
            "--",
            "mpiexec",
            "-n",
            "4",
            "./exchange",
        ])
        .current_dir(&d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("recorded 4 ranks"), "{stdout}");
    let w = load_trace(&d.join("rec"), TraceOptions::default()).unwrap();
    assert_eq!(w.ranks.len(), 4);
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 4;
    // 8 ping-pong messages, the ring's 4, the sendrecv's 4 and every collective's.
    let mut verified = None;
    for d in [
        Design::Baseline,
        Design::BaseMoped,
        Design::OptCopy,
        Design::OptCache,
    ] {
        let r = run_workload(&cfg, &w, d, 1, MpiParams::default())
            .unwrap_or_else(|e| panic!("{d}: {e}"));
        assert!(r.messages_verified >= 16, "{d}: {}", r.messages_verified);
        assert_eq!(
            *verified.get_or_insert(r.messages_verified),
            r.messages_verified
        );
    }
    // A wildcard tag beside collectives has no GOAL form: the recorder says so.
    assert!(stdout.contains("no GOAL schedule: "), "{stdout}");
    assert!(!d.join("rec/schedule.goal").exists());
    let _ = std::fs::remove_dir_all(d);
}

fn write_ranks(d: &Path, ranks: &[&str]) {
    for (r, text) in ranks.iter().enumerate() {
        std::fs::write(d.join(format!("rank-{r}.trace")), text).unwrap();
    }
}

#[test]
fn a_recorded_ping_pong_keeps_its_buffers_and_compute() {
    let d = scratch("pingpong");
    write_ranks(
        &d,
        &[
            "moped-trace 1 rank 0 of 2\ninit 100\nsend 1100 1200 1 5 64 4096 w\n\
             recv 1300 1400 1 5 64 4160 w\nfinalize 1500\n",
            "moped-trace 1 rank 1 of 2\ninit 0\nirecv 10 20 -1 -1 64 8192 7 w\n\
             test 21 22 7 0\ntest 23 24 7 1\nsend 30 40 0 5 64 8192 w\nfinalize 50\n",
        ],
    );
    let w = load_trace(&d, TraceOptions::default()).unwrap();
    // Rank 0's two buffers touch: one buffer of 128 bytes; rank 1 reuses one of 64. Rank
    // 1's first test finds nothing; its second completes the receive.
    assert_eq!(w.ranks[0].buffers.len(), 1);
    assert_eq!(w.ranks[0].buffers[0].bytes, 128);
    assert_eq!(w.ranks[1].buffers[0].bytes, 64);
    assert_eq!(w.ranks[0].calls[0], moped::workload::Call::Compute(1000));
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 2;
    let r = run_workload(&cfg, &w, Design::OptCache, 1, MpiParams::default()).unwrap();
    assert_eq!(r.messages_verified, 2);
    // Written as a GOAL schedule (no collective beside the wildcard) and read back.
    let text = moped::workload::goal::write_goal(&w).unwrap();
    assert!(text.contains("calc 1000"), "{text}");
    let g = moped::workload::goal::parse_goal(&text, "pp.goal").unwrap();
    let r = run_workload(&cfg, &g, Design::OptCache, 1, MpiParams::default()).unwrap();
    assert_eq!(r.messages_verified, 2);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn trace_errors_name_the_file_line_and_column() {
    let cases: [(&str, &str); 5] = [
        (
            "moped-trace 1 rank 0 of 1\ninit 0\nunmodelled 1 2 MPI_Allgather\nfinalize 3\n",
            "rank-0.trace:3:16: the program calls MPI_Allgather, which the tracer records but \
             the model cannot run yet",
        ),
        (
            "moped-trace 1 rank 0 of 1\ninit 0\nsend 1 2 x 5 64 0 w\nfinalize 3\n",
            "rank-0.trace:3:10: expected a destination (an integer), not `x`",
        ),
        (
            "moped-trace 1 rank 0 of 1\ninit 0\nfly 1 2\nfinalize 3\n",
            "rank-0.trace:3:1: unknown record `fly`",
        ),
        (
            "moped-trace 1 rank 0 of 1\ninit 0\nbarrier 1 2 w\n",
            "rank-0.trace:4:1: the trace ends without `finalize`",
        ),
        (
            "moped-trace 1 rank 3 of 1\n",
            "rank-0.trace:1:1: expected the header `moped-trace 1 rank 0 of 1`",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let d = scratch(&format!("bad{i}"));
        write_ranks(&d, &[text]);
        let e = load_trace(&d, TraceOptions::default()).unwrap_err();
        assert!(e.contains(want), "{e}");
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn ranks_whose_collectives_differ_are_refused_naming_both() {
    let d = scratch("mismatch");
    write_ranks(
        &d,
        &[
            "moped-trace 1 rank 0 of 2\ninit 0\nbcast 1 2 0 64 4096 w\nfinalize 3\n",
            "moped-trace 1 rank 1 of 2\ninit 0\nbcast 1 2 0 32 4096 w\nfinalize 3\n",
        ],
    );
    let e = load_trace(&d, TraceOptions::default()).unwrap_err();
    assert!(e.contains("rank-1.trace:3:1: rank 1 calls MPI_Bcast of 32 bytes from 0 where rank 0 calls MPI_Bcast of 64 bytes from 0"), "{e}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn collectives_on_a_communicator_of_some_ranks_run_among_its_members() {
    let d = scratch("subcomm");
    // Ranks 0 and 1 share a communicator (as IMB's PingPong does); rank 2 joins only the
    // world's barrier at the end.
    let pair = |r: usize| {
        format!(
            "moped-trace 1 rank {r} of 3\ninit 0\nbarrier 1 2 0,1\nbcast 3 4 1 4096 {} 0,1\n\
             allreduce 5 6 2 8 64 128 0,1\nbarrier 7 8 w\nfinalize 9\n",
            4096 * (r + 1)
        )
    };
    let (r0, r1) = (pair(0), pair(1));
    write_ranks(
        &d,
        &[
            &r0,
            &r1,
            "moped-trace 1 rank 2 of 3\ninit 0\nbarrier 1 2 w\nfinalize 3\n",
        ],
    );
    let w = load_trace(&d, TraceOptions::default()).unwrap();
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 4;
    for design in [Design::Baseline, Design::OptCopy] {
        let r = run_workload(&cfg, &w, design, 1, MpiParams::default())
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        // The pair's barrier (one round: 2 messages), its broadcast (1), its allreduce
        // (2), and the world barrier's 2 rounds of 3.
        assert_eq!(r.messages_verified, 2 + 1 + 2 + 6, "{design}");
    }
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn figure10_takes_a_folder_of_recorded_runs_as_its_benchmarks() {
    let d = scratch("figure10");
    let rec = d.join("pp");
    std::fs::create_dir_all(&rec).unwrap();
    write_ranks(
        &rec,
        &[
            "moped-trace 1 rank 0 of 2\ninit 0\nsend 1 2 1 5 64 4096 w\nfinalize 3\n",
            "moped-trace 1 rank 1 of 2\ninit 0\nrecv 1 2 0 5 64 4096 w\nfinalize 3\n",
        ],
    );
    let tasks = moped::api::figure10::plan(&d, false, &[1]).unwrap();
    assert_eq!(tasks.len(), 4, "the recorded run under each design");
    assert!(tasks.iter().all(|t| t.spec == rec));
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn a_recording_the_model_cannot_read_is_kept_with_the_error() {
    // No MPI needed: a "compiler" that writes an empty library (which the loader then
    // ignores) and a command that writes a trace the reader refuses.
    let d = scratch("kept");
    let cc = d.join("fakecc");
    std::fs::write(
        &cc,
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && : > \"$2\"; shift; done\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&cc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let write = "printf 'moped-trace 1 rank 0 of 1\\ninit 0\\nfly 1 2\\nfinalize 3\\n' \
                 > \"$MOPED_TRACE_DIR/rank-0.trace\"";
    let out = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(["trace", "--out", "rec", "--", "sh", "-c", write])
        .env("MPICC", &cc)
        .current_dir(&d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("kept there, but the recording cannot be run"),
        "{err}"
    );
    assert!(
        err.contains("rec/rank-0.trace:3:1: unknown record `fly`"),
        "{err}"
    );
    let ours = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    assert!(!ours.contains("partial"), "{err}");
    assert!(d.join("rec/rank-0.trace").is_file());
    let _ = std::fs::remove_dir_all(d);
}
