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

/// Sends `signal` to a long `moped mpi` run in folder `d` once it is simulating; its exit
/// status and stderr.
fn stopped_by(d: &Path, signal: &str) -> (Option<i32>, String) {
    std::fs::write(d.join("long.goal"), long_goal(400)).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(["mpi", "--workload", "long.goal", "--out", "out"])
        .args(["--set", "system.cores=2"])
        .current_dir(d)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Into the simulation (the handler is set before anything else runs).
    std::thread::sleep(std::time::Duration::from_millis(700));
    let kill = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), err)
}

#[test]
fn ctrl_c_stops_moped_mpi_with_status_130() {
    let d = scratch("sigint");
    let (code, err) = stopped_by(&d, "-INT");
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn sigterm_stops_moped_mpi_as_ctrl_c_does_with_status_143_and_nothing_hidden_left() {
    let d = scratch("sigterm");
    let (code, err) = stopped_by(&d, "-TERM");
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    left.sort();
    assert!(left.is_empty(), "hidden entries left: {left:?}");
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn an_unusable_out_folder_is_named_as_the_user_gave_it() {
    let d = scratch("unusable");
    std::fs::write(d.join("w.goal"), "num_ranks 1\nrank 0 {\n  c: calc 10\n}\n").unwrap();
    // A file where the folder's parent should be: nothing can be made under it.
    std::fs::write(d.join("plain"), "a file").unwrap();
    let out = moped(&["mpi", "--workload", "w.goal", "--out", "plain/res"], &d);
    let err = String::from_utf8_lossy(&out.stderr);
    // A bad argument: a usage error.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("output folder plain/res: cannot be written"),
        "{err}"
    );
    assert!(!err.contains("partial"), "{err}");
    let _ = std::fs::remove_dir_all(d);
}

/// Runs `moped mpi` on the GOAL schedule `goal` under `design` with `set` overrides; the
/// exit status and stderr.
fn mpi(name: &str, goal: &str, design: &str, set: &[&str]) -> (Option<i32>, String) {
    let d = scratch(name);
    std::fs::write(d.join("w.goal"), goal).unwrap();
    let mut args = vec!["mpi", "--workload", "w.goal", "--out", "out"];
    args.extend(["--protocol", design, "--set", "system.cores=2"]);
    for s in set {
        args.extend(["--set", s]);
    }
    let out = moped(&args, &d);
    let _ = std::fs::remove_dir_all(d);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_names(e: &str, wants: &[&str]) {
    for w in wants {
        assert!(e.contains(w), "`{w}` missing from: {e}");
    }
}

#[test]
fn a_receive_no_send_matches_is_a_deadlock_at_once() {
    let goal = "num_ranks 2\nrank 0 {\n  r: recv 64b from 1 tag 3\n}\nrank 1 {\n  c: calc 10\n}\n";
    for design in ["baseline", "optcopy"] {
        let (code, err) = mpi("norecv", goal, design, &[]);
        assert_eq!(code, Some(1), "{err}");
        assert_names(&err, &["deadlock", "rank 0 call 1", "from rank 1, tag 3"]);
    }
}

#[test]
fn a_send_longer_than_its_receive_is_refused_before_the_run_naming_both_calls() {
    let goal = "num_ranks 2\nrank 0 {\n  s: send 16b to 1 tag 5\n}\n\
                rank 1 {\n  c: calc 10\n  r: recv 8b from 0 tag 5\n}\n";
    for design in ["baseline", "optcopy"] {
        let (code, err) = mpi("truncate", goal, design, &[]);
        assert_eq!(code, Some(1), "{err}");
        assert_names(
            &err,
            &[
                "rank 1 call 1 at w.goal:7:3: receives up to 8 bytes",
                "from rank 0 (call 0 at w.goal:3:3, tag 5) has 16 bytes (truncation)",
            ],
        );
        assert!(!err.contains("never received"), "{err}");
    }
}

/// Ranks 0 and 1 each send the other 1 MiB and only then receive: eager sends would pass
/// each other; MPICH's rendezvous (and MOPED, which matches before it copies) wait
/// forever for the other side's receive.
const CROSS: &str = "num_ranks 2\n\
    rank 0 {\n  s: send 1048576b to 1 tag 1\n  r: recv 1048576b from 1 tag 1\n  r requires s\n}\n\
    rank 1 {\n  s: send 1048576b to 0 tag 1\n  r: recv 1048576b from 0 tag 1\n  r requires s\n}\n";

#[test]
fn a_rendezvous_cross_deadlock_is_refused_before_the_run() {
    for design in ["baseline", "optcopy"] {
        let (code, err) = mpi("cross", CROSS, design, &[]);
        assert_eq!(code, Some(1), "{err}");
        assert_names(
            &err,
            &[
                "deadlock",
                "rank 0 call 1 at w.goal:4:3 waits for request 0 (call 0 at w.goal:3:3: \
                 send of 1048576 B to rank 1",
                "rank 1 call 1 at w.goal:9:3 waits for request 0 (call 0 at w.goal:8:3: \
                 send of 1048576 B to rank 0",
                "completes only when a receive matches it",
            ],
        );
        assert!(!err.contains("watchdog"), "{err}");
    }
}

/// The same cross, but each receive takes ANY_SOURCE: whether a receive is matched then
/// depends on timing, so nothing is refused before the run, and the watchdog finds it.
#[test]
fn a_cross_deadlock_with_wildcard_receives_trips_the_mpi_watchdog() {
    let cross_any = CROSS
        .replace("from 1 tag 1", "from -1 tag 1")
        .replace("from 0 tag 1", "from -1 tag 1");
    for design in ["baseline", "optcopy"] {
        let (code, err) = mpi(
            "crossany",
            &cross_any,
            design,
            &["watchdog.mpi_cycles=2000000"],
        );
        assert_eq!(code, Some(1), "{err}");
        assert_names(
            &err,
            &[
                "watchdog.mpi_cycles",
                "rank 0: call 1 at w.goal:4:3 (MPI_Wait)",
                "rank 1: call 1 at w.goal:9:3 (MPI_Wait)",
                "send to rank 1 tag 1, 1048576 bytes (",
                "; call 0 at w.goal:3:3)",
                "send to rank 0 tag 1, 1048576 bytes",
            ],
        );
        // The watchdog's own list of pending calls, not a second, Debug-formatted one.
        assert!(!err.contains("MPI ranks") && !err.contains("None"), "{err}");
    }
}

/// A program that completes in some timings and not in others is not refused: rank 0's
/// first receive takes ANY_SOURCE, and only if it matches rank 2's message can the second
/// (from rank 1) complete. The logical run matches rank 1's first; the simulated run
/// decides by timing, and either completes or is named by the watchdog.
#[test]
fn a_program_that_may_complete_is_never_refused_before_the_run() {
    let goal = "num_ranks 3\n\
        rank 0 {\n  a: recv 64b from -1 tag 1\n  b: recv 64b from 1 tag 1\n  b requires a\n}\n\
        rank 1 {\n  s: send 64b to 0 tag 1\n}\n\
        rank 2 {\n  c: calc 5000\n  s: send 64b to 0 tag 1\n  s requires c\n}\n";
    let (code, err) = mpi(
        "maybe",
        goal,
        "baseline",
        &["system.cores=3", "watchdog.mpi_cycles=2000000"],
    );
    assert!(!err.contains("deadlock"), "{err}");
    assert!(
        code == Some(0) || err.contains("watchdog.mpi_cycles"),
        "{err}"
    );
}

fn run_program(name: &str, program: &str, set: &[&str]) -> (Option<i32>, String) {
    let d = scratch(name);
    std::fs::write(d.join("p.toml"), program).unwrap();
    let mut args = vec![
        "run",
        "--program",
        "p.toml",
        "--out",
        "out",
        "--protocol",
        "optcopy",
    ];
    args.extend(["--set", "system.cores=2"]);
    for s in set {
        args.extend(["--set", s]);
    }
    let out = moped(&args, &d);
    let _ = std::fs::remove_dir_all(d);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const PROCESSES: &str = "[[process]]\nrank = 0\ncore = 0\nregions = [[0x100000, 0x1000]]\n\
    [[process]]\nrank = 1\ncore = 1\nregions = [[0x100000, 0x1000]]\n";

/// A `moped_poll` of a receive no send matches, and of a send no receive matches, each
/// fails naming the poll's place and what was posted.
#[test]
fn a_poll_that_never_completes_trips_the_poll_watchdog() {
    for (post, posted) in [
        ("moped_recv r0 src=1", "recv from rank 1 tag 9, 256 bytes"),
        ("moped_send r0 dst=1", "send to rank 1 tag 9, 256 bytes"),
    ] {
        let program = format!(
            "{PROCESSES}[[core]]\ncores = [0]\nops = '''\nmoped_reserve r0\n\
             {post} tag=9 va=0x100000 size=256\nmoped_poll r0\n'''\n"
        );
        let (code, err) = run_program("poll", &program, &["watchdog.poll_cycles=1000000"]);
        assert_eq!(code, Some(1), "{err}");
        assert_names(
            &err,
            &[
                "watchdog.poll_cycles",
                "core 0",
                "p.toml:14:1: moped_poll r0",
                posted,
            ],
        );
    }
}

#[test]
fn reserving_more_descriptors_than_exist_fails_at_the_poll_of_the_refused_one() {
    let mut ops = String::new();
    for r in 0..5 {
        ops += &format!("moped_reserve r{r}\n");
    }
    let program = format!(
        "{PROCESSES}[[core]]\ncores = [0]\nops = '''\n{ops}\
         moped_send r4 dst=1 tag=9 va=0x100000 size=256\nmoped_poll r4\n'''\n"
    );
    let (code, err) = run_program("reserve", &program, &["moped.descriptor_entries=4"]);
    assert_eq!(code, Some(1), "{err}");
    assert_names(
        &err,
        &[
            "p.toml:18:1",
            "poll of r4 answered error",
            "refused reservation",
        ],
    );
    assert!(!err.contains("watchdog"), "{err}");
}
