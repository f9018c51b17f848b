"""Sweeps: many runs on any ``concurrent.futures``-style executor.

A task is one run: a file, a design, a seed, optionally a :class:`moped.SystemConfig` (or
a dict of overrides, or a TOML file) and an iteration scale::

    tasks = [
        {"workload": "workloads/imb/pingpong-16k.toml", "design": d, "seed": 1}
        for d in moped.DESIGNS
    ]
    df = moped.sweep(tasks)  # one row per run

The file is an MPI workload (a spec, or a GOAL schedule ending in ``.goal``) or a program
file, what :func:`moped.run` takes; :func:`workload_kind` tells them apart by their
contents. A program runs on the design's protocol, and has no iterations to scale.

The executor is anything whose ``submit(fn, *args)`` returns an object with ``result()``:
a ``ProcessPoolExecutor`` (the default, one worker per CPU), a ``ThreadPoolExecutor``, or
a Dask client's ``get_executor()``. Only ``submit`` and ``result`` are relied on (when the
futures are ``concurrent.futures`` ones, runs are reported as they finish; otherwise in
task order).

Each run goes through :func:`run_workload` or :func:`run_program`, the calls into the
simulator; tests substitute them. They are looked up when the sweep starts and sent to
the workers with each task, so a substitute must be a module-level function its workers
can import.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from moped import _args, _core, _progress
from moped._core import InputError, MopedError
from moped._frames import _counts_as_integers
from moped.config import (
    SystemConfig,
    check_config,
    config_toml,
    default_values,
    flatten,
    read_text,
)
from moped.results import Result
from moped.store import write_parquet

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = [
    "SweepError",
    "Task",
    "frame",
    "run_program",
    "run_tasks",
    "run_workload",
    "sweep",
    "workload_kind",
]

#: Fields of a run record that name the run.
RUN_KEYS = ("benchmark", "group", "design", "seed")
#: Metric columns first in a sweep's frame, in this order; others follow by name.
METRIC_ORDER = (
    "cycles",
    "l1_misses",
    "l2_misses_private",
    "l2_misses_global",
    "coherence_messages",
    "l2_misses_local",
)
#: Columns after the metrics, where the records have them; the config's follow.
EXTRAS = (
    "events",
    "host_seconds",
    "messages_verified",
    "workload",
    "iterations",
    "notes",
    "reused",
)
#: Columns besides the metrics that hold counts.
COUNTS = ("seed", "events", "messages_verified")
#: A program run's metrics, each the sum of the statistics named: the simulator's one
#: definition, which an MPI run's record uses too (MOPED's own line requests count as L2
#: misses of the L2 that took them), so program and workload rows share columns.
PROGRAM_METRICS: dict[str, tuple[str, ...]] = {
    name: tuple(stats) for name, stats in _core.summed_metrics()
}

#: What a task's file is: an MPI workload (spec or GOAL schedule) or a program file.
Kind = Literal["program", "workload"]


class SweepError(MopedError):
    """A task of a sweep failed; ``task`` is the failing :class:`Task`."""

    def __init__(self, message: str, task: Task | None = None) -> None:
        super().__init__(message)
        self.task = task


@dataclass(frozen=True)
class Task:
    """One run of a sweep. ``workload`` is an MPI workload spec, a GOAL schedule or a
    program file (see :func:`workload_kind`); ``config`` is a :class:`moped.SystemConfig`,
    a dict of overrides, a TOML file path or None (the paper's Table 1); ``iterations``
    scales an MPI workload's iteration counts; ``out``, a folder for the run's own output
    files."""

    workload: str
    design: str
    seed: int = 1
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None
    iterations: float | None = None
    out: str | None = None

    def __post_init__(self) -> None:
        # Checked here, so a wrong task fails when it is made, naming the field, and not
        # in a worker.
        set_ = object.__setattr__
        set_(self, "workload", _args.path("workload", self.workload))
        set_(self, "design", _args.text("design", self.design))
        set_(self, "seed", _args.integer("seed", self.seed))
        set_(self, "iterations", _args.optional_number("iterations", self.iterations))
        set_(self, "out", _args.optional_path("out", self.out))
        check_config(self.config)

    @classmethod
    def of(cls, task: Task | Mapping[str, Any]) -> Task:
        """A Task from itself or from a dict with the same keys."""
        if isinstance(task, Task):
            return task
        if not isinstance(task, Mapping):
            raise TypeError(f"a task must be a Task or a dict, not {type(task).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(task) - names)
        if unknown:
            raise TypeError(f"unknown task key(s) {', '.join(unknown)} in {dict(task)!r}")
        if "workload" not in task or "design" not in task:
            raise TypeError(f"a task needs `workload` and `design`: {dict(task)!r}")
        return cls(**task)

    @property
    def name(self) -> str:
        """How errors and progress lines name the task."""
        scale = "" if self.iterations is None else f", iterations x{self.iterations:g}"
        return f"{Path(self.workload).name} {self.design} seed {self.seed}{scale}"


# A table header (`[[core]]`, `[mpi]`) and a key (`suite =`, `a.b =`) at a line's start.
_TABLE = re.compile(r"\[\[?\s*([A-Za-z0-9_-]+)")
_KEY = re.compile(r"""([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*[=.]""")


def _top_level_names(text: str) -> set[str]:
    """The names a TOML text defines at its top level: the keys before its first table
    header, and its tables' first names. A line scan rather than a TOML parser: a file
    with a syntax error still reaches the simulator's reader, which says where it is, and
    Python 3.10 has no ``tomllib``."""
    names: set[str] = set()
    in_table = False
    fence: str | None = None
    for line in text.splitlines():
        s = line.strip()
        if fence is not None:
            # Inside a multi-line string (a program's `ops`): no keys or tables here.
            if s.count(fence) % 2:
                fence = None
            continue
        if not s or s.startswith("#"):
            continue
        table = _TABLE.match(s)
        if table:
            names.add(table.group(1))
            in_table = True
        elif not in_table:
            key = _KEY.match(s)
            if key:
                names.add(key.group(1).strip("\"'"))
        for quotes in ("'''", '"""'):
            if s.count(quotes) % 2:
                fence = quotes
                break
    return names


def workload_kind(path: str | PathLike[str]) -> Kind:
    """What a task's file is: ``"workload"``, an MPI workload (a GOAL schedule, told by
    its ``.goal`` ending as the simulator tells it, or a spec, TOML with a ``suite``), or
    ``"program"``, a program file as :func:`moped.run` takes (TOML with ``[[core]]``
    tables). A file that cannot be read, or is neither, raises :class:`moped.InputError`
    naming it."""
    p = _args.path("path", path)
    if Path(p).suffix == ".goal":
        return "workload"
    names = _top_level_names(read_text(p, InputError))
    if "core" in names:
        return "program"
    if "suite" in names:
        return "workload"
    raise InputError(
        f"{p}: neither a program file (no [[core]] tables) nor an MPI workload spec "
        "(no `suite`); a GOAL schedule's name ends in .goal"
    )


def run_workload(
    spec_path: str,
    design: str,
    config_toml: str,
    seed: int,
    iteration_scale: float | None,
    out: str | None,
) -> str:
    """Simulates one workload spec under one design; returns the JSON of its run record
    (benchmark, group, design, seed, metrics) plus ``events``, ``host_seconds``,
    ``messages_verified`` and ``notes``. Calls ``moped._core.run_workload``."""
    fn = getattr(_core, "run_workload", None)
    if fn is None:
        raise MopedError(
            "this build of moped._core has no run_workload: the workload runner is not "
            "part of it yet"
        )
    return fn(
        _args.path("spec_path", spec_path),
        _args.text("design", design),
        _args.text("config_toml", config_toml),
        _args.integer("seed", seed),
        _args.optional_number("iteration_scale", iteration_scale),
        _args.optional_path("out", out),
    )


def run_program(
    program_path: str,
    design: str,
    config_toml: str,
    seed: int,
    out: str | None,
) -> dict[str, Any]:
    """Simulates one program file on ``design``'s protocol, as :func:`moped.run` does, and
    returns a run record as :func:`run_workload` does: ``benchmark`` (the file's stem),
    ``group`` (``"program"``), design, seed, ``metrics`` (cycles and those of
    :data:`PROGRAM_METRICS` the statistics have), ``events``, ``host_seconds`` and
    ``notes`` (none). A program has no MPI messages, so no ``messages_verified``."""
    program_path = _args.path("program_path", program_path)
    seed = _args.integer("seed", seed)
    out = _args.optional_path("out", out)
    raw = _core.run(
        _args.text("config_toml", config_toml),
        program_path,
        _args.text("design", design),
        seed,
        out,
        False,
    )
    res = Result.from_core(raw, out=out)
    metrics: dict[str, int | float] = {"cycles": res.cycles}
    for name, stats in PROGRAM_METRICS.items():
        found = [res.flat[s] for s in stats if s in res.flat]
        if found:
            metrics[name] = sum(found)
    rec: dict[str, Any] = {
        "benchmark": Path(program_path).stem,
        "group": "program",
        "design": res.protocol,
        "seed": seed,
        "metrics": metrics,
        "host_seconds": res.host_seconds,
        "notes": [],
    }
    if "sim.events" in res.flat:
        rec["events"] = res.flat["sim.events"]
    return rec


def _execute(runner: Callable[..., str | Mapping[str, Any]], *args: Any) -> dict[str, Any]:
    """Runs one task in a worker: the runner's record, parsed from JSON where it is."""
    raw = runner(*args)
    return json.loads(raw) if isinstance(raw, (str, bytes)) else dict(raw)


def _check(task: Task, rec: Any) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise SweepError(f"{task.name}: the runner returned {type(rec).__name__}", task)
    missing = [k for k in (*RUN_KEYS, "metrics") if k not in rec]
    if missing:
        raise SweepError(f"{task.name}: the run record lacks {', '.join(missing)}", task)
    if rec["design"] != task.design or int(rec["seed"]) != task.seed:
        raise SweepError(
            f"{task.name}: the run record is for {rec['design']} seed {rec['seed']}", task
        )
    return rec


def _progress_line(done: int, total: int, task: Task, rec: dict[str, Any]) -> str:
    cycles = rec.get("metrics", {}).get("cycles")
    cyc = "?" if cycles is None else f"{int(cycles):,}"
    host = rec.get("host_seconds")
    secs = "?" if host is None else f"{float(host):.1f}"
    return (
        f"[{done}/{total}] {rec.get('benchmark', '?')} ({rec.get('group', '?')}) "
        f"{task.design} seed {task.seed}: {cyc} cycles, {secs} s"
    )


def _overrides(config: Any, toml: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The dotted keys a task's config sets, with the values its run uses: those that
    differ from the defaults, and every key of a dict of overrides, even one given its
    default value (the caller named it, so a sweep over it keeps its column)."""
    used = flatten(SystemConfig.from_toml(toml, file="<config>").to_dict())
    given = flatten(config) if isinstance(config, Mapping) else {}
    keys = {k for k, v in used.items() if k not in defaults or defaults[k] != v} | set(given)
    return {k: used[k] if k in used else given[k] for k in sorted(keys)}


def run_tasks(
    tasks: Iterable[Task | Mapping[str, Any]],
    executor: Any = None,
    progress: bool | Callable[[str], None] = False,
    store: Any = None,
) -> list[dict[str, Any]]:
    """Runs the tasks; returns their run records (see :func:`run_workload` and
    :func:`run_program`) in task order, each with ``workload`` (the task's file),
    ``iterations`` (its iteration scale or None) and ``overrides`` (see :func:`sweep`)
    added.

    Every task's file and config is checked before any runs: a file that is neither a
    workload nor a program, or a program given ``iterations``, raises
    :class:`SweepError` naming the task. ``progress``: True shows a bar on a terminal or
    in a notebook and prints one line per finished run to stderr otherwise; a callable
    gets each line instead. A failed task raises
    :class:`SweepError` naming it (the other tasks are cancelled where the executor
    allows it). Ctrl-C cancels the tasks not started and stops the runs in flight, those
    in this process's threads included.

    ``store`` (a claim of :func:`moped._core.store_claim`, see :func:`sweep`) puts each
    run into the claim's ``runs/`` folder, named by its key, or takes it from the earlier
    results the claim resumes (its record then has ``reused`` True); tasks that are the
    same run (same key) run once.
    """
    if isinstance(tasks, (str, bytes, Mapping)) or not isinstance(tasks, Iterable):
        raise TypeError(f"tasks must be Tasks or dicts, not {type(tasks).__name__}")
    progress = _progress.check(progress)
    todo = [Task.of(t) for t in tasks]
    if not todo:
        return []
    # Looked up now, so a substitute is what the workers get.
    runners: dict[Kind, Callable[..., str | Mapping[str, Any]]] = {
        "workload": run_workload,
        "program": run_program,
    }
    shown = _progress.Runs(progress, "sweep", len(todo))

    def report(line: str, done: int, events: Any = 0) -> None:
        shown.finished(done, len(todo), line, int(events or 0))

    defaults = default_values()
    configs: dict[int, tuple[str, dict[str, Any]]] = {}
    kinds: dict[str, Kind] = {}

    def task_config(task: Task) -> tuple[str, dict[str, Any]]:
        key = id(task.config)
        if key not in configs:
            toml = config_toml(task.config)
            configs[key] = (toml, _overrides(task.config, toml, defaults))
        return configs[key]

    def task_kind(task: Task) -> Kind:
        if task.workload not in kinds:
            try:
                kinds[task.workload] = workload_kind(task.workload)
            except MopedError as e:
                raise SweepError(f"{task.name}: {e}", task) from e
        kind = kinds[task.workload]
        if kind == "program" and task.iterations is not None:
            raise SweepError(
                f"{task.name}: iterations scales an MPI workload's iteration counts, and "
                f"{task.workload} is a program file",
                task,
            )
        return kind

    calls: dict[int, tuple[Callable[..., str | Mapping[str, Any]], tuple[Any, ...]]] = {}
    overrides: list[dict[str, Any]] = []
    results: list[dict[str, Any] | None] = [None] * len(todo)
    stored = _Stored(store)
    for i, t in enumerate(todo):
        toml, given = task_config(t)
        kind = task_kind(t)
        overrides.append(given)
        runs, out = stored.place(i, t, toml)
        if not runs:
            continue  # taken from the earlier results, or the same run as an earlier task
        if kind == "program":
            args: tuple[Any, ...] = (t.workload, t.design, toml, t.seed, out)
        else:
            args = (t.workload, t.design, toml, t.seed, t.iterations, out)
        calls[i] = (runners[kind], args)
    for done, (i, rec) in enumerate(stored.reused.items(), start=1):
        results[i] = _finished(todo[i], rec, overrides[i])
        report(_progress_line(done, len(todo), todo[i], rec) + " (reused)", done)

    own = executor is None and bool(calls)
    if own:
        executor = cf.ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, len(calls)))
    futures: list[Any] = []
    ok = False
    interrupted = False
    try:
        index: dict[int, int] = {}
        for i, (runner, args) in calls.items():
            futures.append(executor.submit(_execute, runner, *args))
            index[id(futures[-1])] = i
        if all(isinstance(f, cf.Future) for f in futures):
            order: Iterable[Any] = cf.as_completed(futures)
        else:
            order = futures
        for done, f in enumerate(order, start=len(stored.reused) + 1):
            i = index[id(f)]
            task = todo[i]
            try:
                rec = f.result()
            except SweepError:
                raise
            except Exception as e:
                raise SweepError(f"{task.name}: {type(e).__name__}: {e}", task) from e
            rec = _finished(task, _check(task, rec), overrides[i])
            stored.keep(i, task, rec, task_kind(task))
            results[i] = rec
            report(_progress_line(done, len(todo), task, rec), done, rec.get("events"))
        for i, first in stored.same.items():
            results[i] = dict(results[first] or {}, overrides=dict(overrides[i]))
        ok = True
        return [r for r in results if r is not None]
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if interrupted:
            # Runs in an executor's threads cannot see the main thread's Ctrl-C.
            _core._stop_runs()
        if not ok:
            for f in futures:
                cancel = getattr(f, "cancel", None)
                if callable(cancel):
                    cancel()
        shown.close()
        if own:
            executor.shutdown(wait=True, cancel_futures=not ok)


def _finished(task: Task, rec: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A run's record with what its task adds: its file, iteration scale, overrides."""
    rec.setdefault("workload", task.workload)
    rec["iterations"] = task.iterations
    rec["overrides"] = dict(overrides)
    return rec


class _Stored:
    """Where each task of a sweep into a results store runs (see :func:`run_tasks`)."""

    def __init__(self, claim: Any) -> None:
        self.claim = claim
        #: Task index -> the earlier results' record of its run.
        self.reused: dict[int, dict[str, Any]] = {}
        #: Task index -> the index of an earlier task that is the same run.
        self.same: dict[int, int] = {}
        self.names: dict[str, int] = {}
        self.tomls: dict[int, tuple[str, str]] = {}

    def place(self, i: int, task: Task, toml: str) -> tuple[bool, str | None]:
        """Whether task ``i`` needs a run, and the folder it runs into (its own ``out``
        without a store)."""
        if self.claim is None:
            return True, task.out
        if task.out is not None:
            raise SweepError(
                f"{task.name}: a task's own out and the sweep's out: give one of them", task
            )
        name, earlier = _core.store_take(
            self.claim, task.workload, task.design, toml, task.seed, task.iterations
        )
        if name in self.names:
            self.same[i] = self.names[name]
            return False, None
        self.names[name] = i
        self.tomls[i] = (name, toml)
        if earlier is not None:
            rec = json.loads(earlier)
            rec["reused"] = True
            self.reused[i] = rec
            return False, None
        return True, os.fspath(Path(self.claim.path) / "runs" / name)

    def keep(self, i: int, task: Task, rec: dict[str, Any], kind: Kind) -> None:
        """Records a program's run in the store (a workload's run records itself)."""
        if self.claim is None:
            return
        rec.setdefault("reused", False)
        if kind != "program":
            return
        name, toml = self.tomls[i]
        record = {k: rec[k] for k in (*RUN_KEYS, "metrics", "host_seconds", "notes")}
        record["events"] = rec.get("events", 0)
        _core.store_keep(
            self.claim, name, task.workload, task.design, toml, task.seed, json.dumps(record)
        )


def _notes(notes: Any) -> str:
    """A run's notes in one cell: a CSV keeps a string, not a list."""
    if notes is None:
        return ""
    if isinstance(notes, (list, tuple)):
        return "; ".join(str(n) for n in notes)
    return str(notes)


def frame(records: Iterable[Mapping[str, Any]]) -> pandas.DataFrame:
    """One row per run record: benchmark, group, design, seed, every metric (missing where
    a run lacks it), then where the records have them events, host_seconds,
    messages_verified, workload, iterations (NaN where not scaled) and notes (joined by
    ``"; "``), then one column per config key any record overrides (see :func:`sweep`).

    Counts (cycles, misses, events, ...) are integer columns, ``Int64`` where some run
    lacks the value; means and times stay floats."""
    import pandas as pd

    recs = list(records)
    rows = []
    metric_names: set[str] = set()
    for rec in recs:
        metrics = dict(rec.get("metrics", {}))
        metric_names.update(metrics)
        row = {k: rec.get(k) for k in RUN_KEYS}
        row.update(metrics)
        for extra in EXTRAS:
            if extra in rec:
                row[extra] = _notes(rec[extra]) if extra == "notes" else rec[extra]
        rows.append(row)
    metric_cols = [m for m in METRIC_ORDER if m in metric_names] + sorted(
        metric_names - set(METRIC_ORDER)
    )
    extras = [c for c in EXTRAS if any(c in r for r in rows)]
    given = [dict(rec.get("overrides") or {}) for rec in recs]
    config_cols = sorted({k for g in given for k in g})
    if config_cols:
        # A run that does not override a key used its default: the row says so, and rows
        # of a sweep over a key compare with the run that left it alone.
        defaults = default_values()
        for row, g in zip(rows, given, strict=True):
            for k in config_cols:
                row[k] = g[k] if k in g else defaults.get(k)
    df: pd.DataFrame = pd.DataFrame(rows, columns=[*RUN_KEYS, *metric_cols, *extras, *config_cols])
    if "iterations" in df.columns:
        df["iterations"] = df["iterations"].astype("float64")
    _counts_as_integers(df, [*metric_cols, *(c for c in COUNTS if c in df.columns)])
    return df


def sweep(
    tasks: Iterable[Task | Mapping[str, Any]],
    executor: Any = None,
    progress: bool | Callable[[str], None] = False,
    out: str | PathLike[str] | None = None,
    *,
    force: bool = False,
    fresh: bool = False,
) -> pandas.DataFrame:
    """Runs the tasks on ``executor`` (default: a process pool, one worker per CPU) and
    returns one row per run (see :func:`frame`), in task order. Tasks are :class:`Task`\\ s
    or dicts with its keys (``workload``, ``design``, ``seed``, ``config``,
    ``iterations``, ``out``); a task's ``workload`` may be an MPI workload spec, a GOAL
    schedule or a program file. A failed task raises :class:`SweepError` naming it.

    Besides the run's own columns, a row says what produced it: ``seed``, ``iterations``
    (the iteration scale, NaN where not scaled), ``notes`` (the run's, joined; empty for
    a program) and one column per config key a task sets, dotted (``l2.latency``), with
    the value the run used. A task sets the keys of its dict of overrides, or, with a
    :class:`moped.SystemConfig` or a TOML file, the keys whose values differ from the
    defaults. The columns are the union over the tasks, and a task that does not set a
    key holds that key's default value (not NaN), since that is what its run used: rows
    stay comparable, and a sweep's baseline row sits in its sweep's column::

        df = moped.sweep(
            [{"workload": "prog.toml", "design": "baseline", "config": {"l2.latency": n}}
             for n in (5, 10, 20)]
        )
        df[["l2.latency", "cycles"]]

    With ``out``, the sweep is an experiment with a results store, as ``moped figure10``
    is: each run goes into ``out/runs/<file>-<design>-s<seed>-<key>/`` (tasks keep no
    ``out`` of their own), ``out/runs.csv`` gets a row per run (:func:`moped.load_results`;
    ``runs.parquet`` too where pyarrow is installed), and a sweep run again into ``out``
    takes every run whose key (file bytes, configuration, design, seed, iteration scale,
    moped's version and sources) is unchanged from there instead of simulating it (the
    frame's ``reused`` column says which), unless ``fresh``. ``out`` must be missing,
    empty, hold only a FAILED marker or hold an earlier sweep, unless ``force``; a failure
    leaves FAILED there with the runs that finished, for the next sweep to take.
    """
    force = _args.flag("force", force)
    fresh = _args.flag("fresh", fresh)
    if out is None:
        if force or fresh:
            raise MopedError("sweep: force and fresh are about an out folder; give out")
        return frame(run_tasks(tasks, executor, progress))
    if isinstance(tasks, (str, bytes, Mapping)) or not isinstance(tasks, Iterable):
        raise TypeError(f"tasks must be Tasks or dicts, not {type(tasks).__name__}")
    todo = [Task.of(t) for t in tasks]
    folder = _args.path("out", out)
    what = f"{len(todo)} tasks: " + ", ".join(sorted({Path(t.workload).name for t in todo}))
    claim = _core.store_claim(folder, "sweep", [("tasks", str(len(todo)))], force, fresh)
    try:
        recs = run_tasks(todo, executor, progress, store=claim)
    except BaseException as e:
        claim.fail(f"{type(e).__name__}: {e}")
        raise
    designs = ", ".join(sorted({t.design for t in todo}))
    runs, reused = _core.store_finish(claim, what, designs, sorted({t.seed for t in todo}))
    if reused:
        said = f"reused {reused} of {runs} runs from the earlier results in {folder}"
        _progress.say(progress, f"sweep: {said} (fresh=True runs them all)")
    write_parquet(folder)
    return frame(recs)
