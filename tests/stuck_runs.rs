//! Runs that cannot end, and runs the user ends: the command line's exit statuses and
//! messages for deadlocks, never-completing polls and Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-stuck-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn moped(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// A GOAL schedule of `n` one-MiB messages from rank 0 to rank 1, one after the other:
/// seconds of host time at least.
fn long_goal(n: usize) -> String {
    let mut s = String::from("num_ranks 2\n\nrank 0 {\n");
    for i in 0..n {
        s += &format!("  s{i}: send 1048576b to 1 tag 1\n");
        if i > 0 {
            s += &format!("  s{i} requires s{}\n", i - 1);
        }
    }
    s += "}\n\nrank 1 {\n";
    for i in 0..n {
        s += &format!("  r{i}: recv 1048576b from 0 tag 1\n");
        if i > 0 {
            s += &format!("  r{i} requires r{}\n", i - 1);
        }
    }
    s + "}\n"
}

#[test]
fn ctrl_c_stops_moped_mpi_with_status_130() {
    let d = scratch("sigint");
    std::fs::write(d.join("long.goal"), long_goal(400)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(["mpi", "--workload", "long.goal", "--out", "out"])
        .args(["--set", "system.cores=2"])
        .current_dir(&d)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Into the simulation (the handler is set before anything else runs).
    std::thread::sleep(std::time::Duration::from_millis(700));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let _ = std::fs::remove_dir_all(d);
}
