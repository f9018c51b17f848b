//! A real MPI run recorded as a workload (`moped trace -- mpiexec -n 16 ./app`): the PMPI
//! library `trace/moped_pmpi.c` is built with the system's `mpicc`, preloaded into the
//! command, and each process writes its calls into the result folder, which `moped mpi
//! --workload DIR` then runs (`workload::trace`); a GOAL schedule of the same run is
//! written beside it for LogGOPSim.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::output::{OutDir, RunInfo};
use crate::config::SystemConfig;
use crate::error::MopedError;
use crate::workload::trace::{load_trace, TraceOptions};

/// The tracer's source, built on the machine that records.
const PMPI_SOURCE: &str = include_str!("../../trace/moped_pmpi.c");

/// The schedule written beside the rank files.
pub const GOAL_FILE: &str = "schedule.goal";

/// A recorded run.
#[derive(Debug)]
pub struct Recorded {
    /// The processes that wrote a trace.
    pub ranks: usize,
    /// Calls of the workload the trace becomes, every rank's together; or why the model
    /// cannot run the recording (which is kept).
    pub calls: Result<usize, String>,
    /// Whether [`GOAL_FILE`] was written, or why not.
    pub goal: Result<(), String>,
}

impl Recorded {
    /// A recording in `dir` that reads back with `error`.
    fn unreadable(dir: &Path, error: String) -> Recorded {
        let ranks = std::fs::read_dir(dir).map_or(0, |d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".trace"))
                .count()
        });
        Recorded {
            ranks,
            calls: Err(error),
            goal: Err("the recording cannot be read as a workload".into()),
        }
    }
}

/// The MPI C compiler: `mpicc` unless `MPICC` names another.
pub fn mpicc() -> PathBuf {
    std::env::var_os("MPICC").map_or_else(|| PathBuf::from("mpicc"), PathBuf::from)
}

/// Builds the tracer into `dir` with `mpicc`; the library's path.
fn build_library(mpicc: &Path, dir: &Path) -> Result<PathBuf, MopedError> {
    let src = dir.join("moped_pmpi.c");
    let lib = dir.join("libmoped_pmpi.so");
    std::fs::write(&src, PMPI_SOURCE)
        .map_err(|e| MopedError::Io(format!("{}: {e}", src.display())))?;
    let out = Command::new(mpicc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .map_err(|e| {
            MopedError::Io(format!(
                "cannot run the MPI compiler `{}` ({e}); install an MPI (Debian: `apt-get \
                 install mpich libmpich-dev`) or name its compiler in MPICC",
                mpicc.display()
            ))
        })?;
    if !out.status.success() {
        return Err(MopedError::Io(format!(
            "`{}` could not build the tracer:\n{}",
            mpicc.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    if !lib.is_file() {
        return Err(MopedError::Io(format!(
            "`{}` reported success but wrote no tracer library ({})",
            mpicc.display(),
            lib.display()
        )));
    }
    Ok(lib)
}

/// Runs `command` with the tracer preloaded and its processes' traces written into
/// `out`, checked by reading them back as a workload; a GOAL schedule of the run is
/// written beside them.
pub fn record(command: &[String], out: OutDir, opts: TraceOptions) -> Result<Recorded, MopedError> {
    let (program, args) = command.split_first().ok_or_else(|| {
        MopedError::Io("no command to trace: `moped trace --out DIR -- mpiexec -n 16 ./app`".into())
    })?;
    let dir = std::path::absolute(out.path()).map_err(|e| MopedError::Io(e.to_string()))?;
    let build = dir.join(".tracer");
    std::fs::create_dir_all(&build)
        .map_err(|e| MopedError::Io(format!("{}: {e}", build.display())))?;
    let outcome = build_library(&mpicc(), &build).and_then(|lib| {
        let preload = match std::env::var_os("LD_PRELOAD") {
            Some(old) if !old.is_empty() => {
                let mut p = lib.into_os_string();
                p.push(":");
                p.push(old);
                p
            }
            _ => lib.into_os_string(),
        };
        let status = Command::new(program)
            .args(args)
            .env("LD_PRELOAD", preload)
            .env("MOPED_TRACE_DIR", &dir)
            .status()
            .map_err(|e| MopedError::Io(format!("cannot run `{program}`: {e}")))?;
        let _ = std::fs::remove_dir_all(&build);
        if !status.success() {
            return Err(MopedError::Io(format!(
                "the traced command `{}` failed ({status})",
                command.join(" ")
            )));
        }
        // Read back from the folder as it was named, so errors name it as the user did.
        // A recording the model cannot run yet is kept all the same: it is the user's
        // only copy of the run.
        let mut w = match load_trace(out.path(), opts) {
            Ok(w) => w,
            Err(e) => {
                let (tmp, dest) = (out.path().display(), out.dest().display());
                let e = e.replace(&tmp.to_string(), &dest.to_string());
                return Ok(Recorded::unreadable(out.path(), e));
            }
        };
        if let Some(name) = out.dest().file_name() {
            w.name = name.to_string_lossy().into_owned();
        }
        // GOAL cannot say everything a run does (a wildcard tag beside collectives): the
        // trace itself is the workload, the schedule a copy where one can be written.
        let goal = crate::workload::goal::write_goal(&w);
        if let Ok(text) = &goal {
            let path = dir.join(GOAL_FILE);
            std::fs::write(&path, text)
                .map_err(|e| MopedError::Io(format!("{}: {e}", path.display())))?;
        }
        Ok(Recorded {
            ranks: w.ranks.len(),
            calls: Ok(w.ranks.iter().map(|r| r.calls.len()).sum()),
            goal: goal.map(|_| ()),
        })
    });
    out.finish(outcome, |_, _| {
        Ok(RunInfo {
            config: SystemConfig::default(),
            seed: serde_json::Value::Null,
            workload: command.join(" "),
            design: "recorded MPI run".into(),
        })
    })
}
