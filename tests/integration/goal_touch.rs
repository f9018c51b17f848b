//! GOAL schedules with data (`workload.touch_buffers`, `--touch-buffers`): untouched, no
//! core reads or writes a message, so BASEMOPED and OPTCOPY leave the same lines in memory;
//! touched, the sender writes each message before sending it and the receiver reads it
//! after, and BASEMOPED's exclusive hand-over (the send lines leave the sender's caches)
//! shows as global L2 misses OPTCOPY does not have.

use std::path::{Path, PathBuf};
use std::process::Command;

use moped::config::SystemConfig;
use moped::design::Design;
use moped::mpi::run_workload;
use moped::workload::load_workload_touched;

/// A PingPong of `n` 16 kB messages each way between ranks 0 and 1, as a GOAL schedule.
fn pingpong(n: usize) -> String {
    let mut out = String::from("num_ranks 2\n");
    for (me, peer) in [(0, 1), (1, 0)] {
        out.push_str(&format!("rank {me} {{\n"));
        let mut prev: Option<String> = None;
        for i in 0..n {
            let (first, second) = if me == 0 {
                (
                    format!("s{i}: send 16384b to {peer} tag 7"),
                    format!("r{i}: recv 16384b from {peer} tag 7"),
                )
            } else {
                (
                    format!("r{i}: recv 16384b from {peer} tag 7"),
                    format!("s{i}: send 16384b to {peer} tag 7"),
                )
            };
            let (a, b) = (
                &first[..first.find(':').unwrap()],
                &second[..second.find(':').unwrap()],
            );
            out.push_str(&format!("  {first}\n"));
            if let Some(p) = &prev {
                out.push_str(&format!("  {a} requires {p}\n"));
            }
            out.push_str(&format!("  {second}\n  {b} requires {a}\n"));
            prev = Some(b.to_string());
        }
        out.push_str("}\n");
    }
    out
}

/// A fresh folder of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("goal-touch-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn schedule(dir: &Path) -> PathBuf {
    let path = dir.join("pingpong.goal");
    std::fs::write(&path, pingpong(12)).unwrap();
    path
}

/// The run's global L2 misses (the cores' and the MOPEDs' reads from memory) and cycles.
fn global_misses(path: &Path, design: Design, touch: u64) -> (f64, u64) {
    let mut cfg = SystemConfig::default();
    cfg.workload.touch_buffers = touch;
    let how = (cfg.workload.warmup, touch);
    let (w, group) = load_workload_touched(path, None, None, how).unwrap();
    assert_eq!(group, "goal");
    let run = run_workload(&cfg, &w, design, 1, (&cfg.mpi).into()).unwrap();
    let g = |n: &str| run.stats.get(n).map_or(0.0, |s| s.value.as_f64());
    let misses = g("system.total.l2.misses_memory") + g("system.total.l2.moped_misses_memory");
    (misses, run.cycles)
}

#[test]
fn touched_buffers_separate_basemoped_from_optcopy() {
    let dir = scratch("designs");
    let path = schedule(&dir);
    let (bm, _) = global_misses(&path, Design::BaseMoped, 0);
    let (oc, _) = global_misses(&path, Design::OptCopy, 0);
    // Untouched, both designs read every message from memory: within 2 %.
    assert!((bm - oc).abs() <= 0.02 * bm, "untouched: {bm} against {oc}");
    let (bm_t, bm_cycles) = global_misses(&path, Design::BaseMoped, 64);
    let (oc_t, oc_cycles) = global_misses(&path, Design::OptCopy, 64);
    // Touched, BASEMOPED's sender re-reads from memory the lines its MOPED took; OPTCOPY
    // keeps them on chip.
    assert!(bm_t > 3.0 * oc_t, "touched: {bm_t} against {oc_t}");
    assert!(bm_cycles > oc_cycles, "{bm_cycles} against {oc_cycles}");
}

#[test]
fn the_command_line_option_touches_and_refuses_a_stride_of_part_words() {
    let dir = scratch("cli");
    let path = schedule(&dir);
    let run = |extra: &[&str], out: &str| {
        Command::new(env!("CARGO_BIN_EXE_moped"))
            .args(["mpi", "--quiet", "--protocol", "optcopy", "--workload"])
            .arg(&path)
            .arg("--out")
            .arg(dir.join(out))
            .args(extra)
            .output()
            .unwrap()
    };
    let touched = run(&["--touch-buffers"], "touched");
    assert!(
        touched.status.success(),
        "{}",
        String::from_utf8_lossy(&touched.stderr)
    );
    let run_json = std::fs::read_to_string(dir.join("touched/run.json")).unwrap();
    assert!(run_json.contains("workload.touch_buffers=64"), "{run_json}");
    let bad = run(&["--touch-buffers", "12"], "bad");
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("workload.touch_buffers") && err.contains("multiple of 8"),
        "{err}"
    );
}
