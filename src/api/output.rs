//! Result folders written honestly: the one mechanism behind every `--out` (and every
//! Python `out=`).
//!
//! - A command claims its folder before it runs ([`OutDir::claim`]). A folder that holds
//!   anything but a lone `FAILED` marker is refused unless the caller forces it, so an
//!   earlier run's results are never merged with a new run's.
//! - The results go into a temporary sibling folder (`.NAME.partial-PID-N`), which
//!   replaces the folder only once every file is written ([`OutDir::finish`]).
//! - A failure, of the run or of the writing, leaves the folder holding only `FAILED`,
//!   with the error: never an earlier run's complete-looking results. With force, that
//!   means the old contents are gone after a failure too: they were to be replaced. An
//!   experiment with a results store ([`super::store`]) keeps its finished runs beside
//!   the marker: each is complete and keyed, and the next run into the folder takes them.
//! - Every result folder holds the resolved `config.toml` and `run.json`: the command line,
//!   the crate's version, the seed, the workload, the design, the config file and the
//!   `--set` overrides.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::config::SystemConfig;
use crate::error::MopedError;

/// The marker a failed run leaves in its folder.
pub const FAILED: &str = "FAILED";

/// The marker of a folder holding a results store (`api::store`), naming its experiment:
/// a failure keeps such a folder's finished runs.
pub const STORE_FILE: &str = "store.json";

/// How the results were asked for; the caller knows (the command line, a Python call).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Invocation {
    /// The command line, or the Python call written as one.
    pub command: Vec<String>,
    /// The config file given, if any.
    pub config_file: Option<String>,
    /// The `KEY=VALUE` overrides, in the order given.
    pub overrides: Vec<String>,
}

/// What a finished run was, for `run.json` beside its `config.toml`.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub config: SystemConfig,
    /// A seed, or the seeds of an experiment.
    pub seed: serde_json::Value,
    /// The program, workload or workloads folder.
    pub workload: String,
    /// The design, or the designs of an experiment.
    pub design: String,
}

/// A claimed result folder and the temporary folder its results are written into.
#[derive(Debug)]
pub struct OutDir {
    dest: PathBuf,
    tmp: PathBuf,
    invocation: Invocation,
    /// The earlier results at this folder's place whose runs may be reused, when the
    /// folder holds a results store (see [`OutDir::hold_store`]).
    earlier: Option<PathBuf>,
    /// A failure keeps the finished runs: this folder, or one it was claimed in, holds a
    /// results store.
    keeps_runs: bool,
    /// The temporary folders of the claims this one was made inside, innermost first, each
    /// with the folder it becomes (see [`OutDir::user_path`]).
    outer: Vec<(PathBuf, PathBuf)>,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> MopedError + '_ {
    move |e| MopedError::Io(format!("{}: {e}", path.display()))
}

/// Whether `dir` holds nothing a run could be mistaken for: nothing, or a lone marker.
fn is_vacant(dir: &Path) -> Result<Result<(), String>, MopedError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(io_err(dir))?;
    names.retain(|n| n != FAILED);
    names.sort();
    Ok(match names.first() {
        None => Ok(()),
        Some(first) => Err(format!("{} entries, e.g. `{first}`", names.len())),
    })
}

impl OutDir {
    /// Claims `dest` for a run's results and makes its temporary sibling folder. A folder
    /// holding results is refused unless `force`; so is a path that names no folder.
    pub fn claim(dest: &Path, force: bool, invocation: Invocation) -> Result<OutDir, MopedError> {
        let refuse =
            |why: String| MopedError::Io(format!("output folder {}: {why}", dest.display()));
        let name = match dest.file_name() {
            Some(n) if dest.components().next_back() != Some(std::path::Component::ParentDir) => {
                n.to_string_lossy().into_owned()
            }
            _ => return Err(refuse("must end in a folder's name".into())),
        };
        if dest.exists() || dest.is_symlink() {
            if !dest.is_dir() || dest.is_symlink() {
                return Err(refuse("exists and is not a folder".into()));
            }
            if let Err(held) = is_vacant(dest)? {
                if !force {
                    return Err(refuse(format!(
                        "is not empty ({held}); pass --force to replace its contents"
                    )));
                }
            }
        }
        // Unique per claim, so two claims of one process never share a temporary folder.
        static CLAIMS: AtomicU64 = AtomicU64::new(0);
        let n = CLAIMS.fetch_add(1, Ordering::Relaxed);
        let tmp = dest.with_file_name(format!(".{name}.partial-{}-{n}", std::process::id()));
        // The hidden folder is ours, not the user's: trouble making it names the folder
        // the user asked for.
        let unusable = |e: std::io::Error| refuse(format!("cannot be written ({e})"));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(unusable)?;
        }
        std::fs::create_dir_all(&tmp).map_err(unusable)?;
        live_partials().push(tmp.clone());
        Ok(OutDir {
            dest: dest.to_path_buf(),
            tmp,
            invocation,
            earlier: None,
            keeps_runs: false,
            outer: Vec::new(),
        })
    }

    /// Where `path`, a file written into this claim's temporary folder or one it was
    /// claimed inside (a workload spec an experiment wrote), will be once the claims are
    /// finished: what a run's files name, instead of a folder that is gone by then.
    pub fn user_path(&self, path: &Path) -> PathBuf {
        let mut p = path.to_path_buf();
        for (tmp, dest) in
            std::iter::once((&self.tmp, &self.dest)).chain(self.outer.iter().map(|(t, d)| (t, d)))
        {
            if let Ok(rest) = p.strip_prefix(tmp) {
                p = dest.join(rest);
            }
        }
        p
    }

    /// Makes this folder hold the results store of `experiment` (`store.json`, see
    /// [`super::store`]): a failure keeps its finished runs, in this folder and in those
    /// claimed inside it, and with `earlier` (an earlier result folder of the same
    /// experiment) each run whose key is unchanged is taken from the same place there.
    pub fn hold_store(
        &mut self,
        experiment: &str,
        earlier: Option<PathBuf>,
    ) -> Result<(), MopedError> {
        mark_store(&self.tmp, experiment)?;
        self.keeps_runs = true;
        self.earlier = earlier;
        Ok(())
    }

    /// The earlier results at this folder's place, when its runs may be reused from there.
    pub fn earlier(&self) -> Option<&Path> {
        self.earlier.as_deref()
    }

    /// The folder the results will be in.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// The temporary folder the results are written into until [`OutDir::finish`].
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// A folder for one run inside this one's temporary folder, claimed the same way.
    pub fn child(&self, name: &str) -> Result<OutDir, MopedError> {
        let mut child = OutDir::claim(&self.tmp.join(name), false, self.invocation.clone())?;
        child.earlier = self.earlier.as_ref().map(|e| e.join(name));
        child.keeps_runs = self.keeps_runs;
        child.outer = std::iter::once((self.tmp.clone(), self.dest.clone()))
            .chain(self.outer.iter().cloned())
            .collect();
        Ok(child)
    }

    /// Ends the run whose `outcome` is given: on success `fill` writes its files into
    /// [`OutDir::path`] and says what ran; `config.toml` and `run.json` join them and the
    /// folder takes its place. Any error leaves the folder holding only [`FAILED`].
    pub fn finish<T>(
        self,
        outcome: Result<T, MopedError>,
        fill: impl FnOnce(&T, &Path) -> Result<RunInfo, MopedError>,
    ) -> Result<T, MopedError> {
        let written = outcome.map_err(|e| self.named_for_user(e)).and_then(|t| {
            let info = fill(&t, &self.tmp).map_err(|e| self.named_for_user(e))?;
            self.write_record(&info)
                .map_err(|e| self.named_for_user(e))?;
            self.replace_dest()?;
            Ok(t)
        });
        if let Err(e) = &written {
            self.leave_failed(e);
        }
        written
    }

    /// Ends a claim whose runs, made elsewhere, failed with `error`: the folder holds only
    /// [`FAILED`].
    pub fn fail(self, error: &MopedError) {
        self.leave_failed(error);
    }

    /// A file error met while writing into the temporary folder, naming the folder the
    /// user gave instead.
    fn named_for_user(&self, e: MopedError) -> MopedError {
        match e {
            MopedError::Io(msg) => {
                let tmp = self.tmp.display().to_string();
                MopedError::Io(msg.replace(&tmp, &self.dest.display().to_string()))
            }
            e => e,
        }
    }

    fn write_record(&self, info: &RunInfo) -> Result<(), MopedError> {
        write_record(&self.tmp, &self.invocation, info)
    }

    /// Moves the finished temporary folder into place, replacing what was claimed.
    fn replace_dest(&self) -> Result<(), MopedError> {
        if self.dest.exists() {
            std::fs::remove_dir_all(&self.dest).map_err(io_err(&self.dest))?;
        }
        std::fs::rename(&self.tmp, &self.dest).map_err(io_err(&self.dest))
    }

    /// Leaves `dest` holding only the marker with `error`; the error itself is what the
    /// caller reports, so trouble writing the marker is not added to it.
    fn leave_failed(&self, error: &MopedError) {
        if self.dest.is_dir() {
            let _ = std::fs::remove_dir_all(&self.dest);
        }
        let text = format!(
            "this run failed; no results were written\ncommand: {}\nerror: {error}\n",
            self.invocation.command.join(" ")
        );
        let _ = std::fs::create_dir_all(&self.dest)
            .and_then(|()| std::fs::write(self.dest.join(FAILED), text));
        if self.keeps_runs {
            keep_runs(&self.tmp, &self.dest);
            let _ = std::fs::rename(self.tmp.join(STORE_FILE), self.dest.join(STORE_FILE));
        }
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// Moves every `runs` folder under `from` (at any depth: an experiment's parts keep
/// theirs in folders of their own) to the same place under `to`.
fn keep_runs(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        // A hidden folder is a claim not finished: nothing of it is complete.
        .filter(|p| p.is_dir() && !p.is_symlink())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir
            .file_name()
            .expect("a listed folder has a name")
            .to_owned();
        let dest = to.join(&name);
        if name == "runs" {
            let _ = std::fs::create_dir_all(to);
            let _ = std::fs::rename(&dir, &dest);
        } else {
            keep_runs(&dir, &dest);
        }
    }
}

/// Writes `config.toml` and `run.json` into `dir`: what [`OutDir::finish`] adds to every
/// result folder, for a folder written in place (Figure 10 finished from runs made
/// elsewhere).
pub fn write_record(dir: &Path, inv: &Invocation, info: &RunInfo) -> Result<(), MopedError> {
    let run = serde_json::json!({
        "command": inv.command,
        "version": env!("CARGO_PKG_VERSION"),
        "seed": info.seed,
        "workload": info.workload,
        "design": info.design,
        "config_file": inv.config_file,
        "overrides": inv.overrides,
    });
    let text = serde_json::to_string_pretty(&run).expect("json values serialize");
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(io_err(&p))
    };
    write("config.toml", info.config.to_toml_string())?;
    write("run.json", text + "\n")
}

/// Marks `dir` as holding the store of `experiment`.
pub fn mark_store(dir: &Path, experiment: &str) -> Result<(), MopedError> {
    let path = dir.join(STORE_FILE);
    let text = serde_json::json!({ "format": "moped-store-1", "experiment": experiment });
    std::fs::write(&path, format!("{text:#}\n")).map_err(io_err(&path))
}

/// [`OutDir::finish`] where there is a folder; the outcome as it is where there is none.
pub fn finish<T>(
    out: Option<OutDir>,
    outcome: Result<T, MopedError>,
    fill: impl FnOnce(&T, &Path) -> Result<RunInfo, MopedError>,
) -> Result<T, MopedError> {
    match out {
        Some(out) => out.finish(outcome, fill),
        None => outcome,
    }
}

impl Drop for OutDir {
    /// A claim dropped unfinished (a panic, an early return) leaves no partial folder.
    fn drop(&mut self) {
        if self.tmp.exists() {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
        live_partials().retain(|p| p != &self.tmp);
    }
}

/// The temporary folders of the claims not yet dropped.
fn live_partials() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    static LIVE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes every claim's temporary folder: for a process about to exit without dropping
/// its claims (a signal's forced exit), so no hidden `.NAME.partial-PID-N` stays behind.
pub fn remove_partial_folders() {
    for tmp in live_partials().drain(..) {
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(case: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("moped-out-{case}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.join("res")
    }

    fn invocation() -> Invocation {
        Invocation {
            command: vec!["moped".into(), "run".into()],
            config_file: None,
            overrides: vec!["l2.latency=12".into()],
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    /// A run that writes `stats.txt` holding `text`, or fails with `error`.
    fn run(dest: &Path, force: bool, outcome: Result<&str, &str>) -> Result<(), MopedError> {
        let out = OutDir::claim(dest, force, invocation())?;
        let outcome = outcome.map_err(|e| MopedError::Io(e.into()));
        out.finish(outcome, |text, dir| {
            std::fs::write(dir.join("stats.txt"), text).unwrap();
            Ok(RunInfo {
                config: SystemConfig::default(),
                seed: 7.into(),
                workload: "w.goal".into(),
                design: "optcopy".into(),
            })
        })
        .map(|_| ())
    }

    #[test]
    fn a_run_lands_whole_with_its_config_and_record() {
        let dest = scratch("whole");
        run(&dest, false, Ok("one")).unwrap();
        assert_eq!(names(&dest), ["config.toml", "run.json", "stats.txt"]);
        assert_eq!(
            names(dest.parent().unwrap()),
            ["res"],
            "no partial folder left"
        );
        let rec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dest.join("run.json")).unwrap()).unwrap();
        assert_eq!(rec["command"], serde_json::json!(["moped", "run"]));
        assert_eq!(rec["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(rec["seed"], 7);
        assert_eq!(rec["workload"], "w.goal");
        assert_eq!(rec["design"], "optcopy");
        assert_eq!(rec["overrides"], serde_json::json!(["l2.latency=12"]));
        let cfg = std::fs::read_to_string(dest.join("config.toml")).unwrap();
        assert_eq!(
            SystemConfig::from_toml_str(&cfg, "config.toml").unwrap(),
            SystemConfig::default()
        );
    }

    /// Issue 24: a non-empty folder was merged silently.
    #[test]
    fn a_folder_with_results_is_refused_without_force() {
        let dest = scratch("refused");
        run(&dest, false, Ok("one")).unwrap();
        let e = run(&dest, false, Ok("two")).unwrap_err().to_string();
        assert!(
            e.contains("is not empty (3 entries, e.g. `config.toml`)"),
            "{e}"
        );
        assert!(e.contains("--force"), "{e}");
        assert_eq!(
            std::fs::read_to_string(dest.join("stats.txt")).unwrap(),
            "one"
        );
        run(&dest, true, Ok("two")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dest.join("stats.txt")).unwrap(),
            "two"
        );
        assert_eq!(names(dest.parent().unwrap()), ["res"]);
    }

    /// Issue 24: a failed run into an earlier run's folder left the earlier stats there.
    #[test]
    fn a_failure_leaves_only_the_marker() {
        let dest = scratch("failed");
        run(&dest, false, Ok("one")).unwrap();
        let e = run(&dest, true, Err("deadlock at cycle 9")).unwrap_err();
        assert_eq!(e.to_string(), "deadlock at cycle 9");
        assert_eq!(names(&dest), [FAILED]);
        let marker = std::fs::read_to_string(dest.join(FAILED)).unwrap();
        assert!(marker.contains("error: deadlock at cycle 9"), "{marker}");
        assert!(marker.contains("command: moped run"), "{marker}");
        // A folder holding only the marker is free again, and a success clears it.
        run(&dest, false, Ok("two")).unwrap();
        assert_eq!(names(&dest), ["config.toml", "run.json", "stats.txt"]);
    }

    #[test]
    fn a_failure_writing_the_results_leaves_the_marker_too() {
        let dest = scratch("fill");
        let out = OutDir::claim(&dest, false, invocation()).unwrap();
        let r = out.finish(Ok(()), |_, _| Err(MopedError::Io("disk full".into())));
        assert!(r.is_err());
        assert_eq!(names(&dest), [FAILED]);
    }

    #[test]
    fn paths_that_name_no_folder_are_refused() {
        let dest = scratch("paths");
        std::fs::write(dest.parent().unwrap().join("file"), "x").unwrap();
        for p in [
            PathBuf::from("."),
            dest.join(".."),
            dest.parent().unwrap().join("file"),
        ] {
            let e = OutDir::claim(&p, true, invocation())
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("output folder"), "{p:?}: {e}");
        }
    }
}
