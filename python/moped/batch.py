"""Sweeps: many workload runs on any ``concurrent.futures``-style executor.

A task is one run: a workload spec file, a design, a seed, optionally a
:class:`moped.SystemConfig` and an iteration scale::

    tasks = [
        {"workload": "workloads/imb/pingpong-16k.toml", "design": d, "seed": 1}
        for d in moped.DESIGNS
    ]
    df = moped.sweep(tasks)  # one row per run

The executor is anything whose ``submit(fn, *args)`` returns an object with ``result()``:
a ``ProcessPoolExecutor`` (the default, one worker per CPU), a ``ThreadPoolExecutor``, or
a Dask client's ``get_executor()``. Only ``submit`` and ``result`` are relied on (when the
futures are ``concurrent.futures`` ones, runs are reported as they finish; otherwise in
task order).

Each run goes through :func:`run_workload`, the one call into the simulator; tests
substitute it. It is looked up when the sweep starts and sent to the workers with each
task, so a substitute must be a module-level function its workers can import.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import MopedError
from moped.config import check_config, config_toml

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from moped.config import SystemConfig

__all__ = ["SweepError", "Task", "frame", "run_tasks", "run_workload", "sweep"]

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


class SweepError(MopedError):
    """A task of a sweep failed; ``task`` is the failing :class:`Task`."""

    def __init__(self, message: str, task: Task | None = None) -> None:
        super().__init__(message)
        self.task = task


@dataclass(frozen=True)
class Task:
    """One run of a sweep. ``config`` is a :class:`moped.SystemConfig`, a dict of
    overrides, a TOML file path or None (the paper's Table 1); ``iterations`` scales the
    workload's iteration counts; ``out``, a folder for the run's own output files."""

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


def _execute(
    runner: Callable[..., str | Mapping[str, Any]],
    spec_path: str,
    design: str,
    config_toml: str,
    seed: int,
    iteration_scale: float | None,
    out: str | None,
) -> dict[str, Any]:
    """Runs one task in a worker: the runner's JSON, parsed."""
    raw = runner(spec_path, design, config_toml, seed, iteration_scale, out)
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


def run_tasks(
    tasks: Iterable[Task | Mapping[str, Any]],
    executor: Any = None,
    progress: bool | Callable[[str], None] = False,
) -> list[dict[str, Any]]:
    """Runs the tasks; returns their records (parsed ``run_workload`` JSON) in task order.

    ``progress``: True prints one line per finished run to stderr; a callable gets each
    line instead. A failed task raises :class:`SweepError` naming it (the other tasks are
    cancelled where the executor allows it). Ctrl-C cancels the tasks not started and
    stops the runs in flight, those in this process's threads included.
    """
    if isinstance(tasks, (str, bytes, Mapping)) or not isinstance(tasks, Iterable):
        raise TypeError(f"tasks must be Tasks or dicts, not {type(tasks).__name__}")
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress must be a bool or a callable, not {type(progress).__name__}")
    todo = [Task.of(t) for t in tasks]
    if not todo:
        return []
    runner = run_workload  # looked up now, so a substitute is what the workers get
    report: Callable[[str], None] | None
    if callable(progress):
        report = progress
    elif progress:

        def report(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

    else:
        report = None

    configs: dict[int, str] = {}

    def task_config(task: Task) -> str:
        key = id(task.config)
        if key not in configs:
            configs[key] = config_toml(task.config)
        return configs[key]

    own = executor is None
    if own:
        executor = cf.ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, len(todo)))
    futures: list[Any] = []
    ok = False
    interrupted = False
    try:
        for t in todo:
            args = (t.workload, t.design, task_config(t), t.seed, t.iterations, t.out)
            futures.append(executor.submit(_execute, runner, *args))
        results: list[dict[str, Any] | None] = [None] * len(todo)
        index = {id(f): i for i, f in enumerate(futures)}
        if all(isinstance(f, cf.Future) for f in futures):
            order: Iterable[Any] = cf.as_completed(futures)
        else:
            order = futures
        for done, f in enumerate(order, start=1):
            i = index[id(f)]
            task = todo[i]
            try:
                rec = f.result()
            except SweepError:
                raise
            except Exception as e:
                raise SweepError(f"{task.name}: {type(e).__name__}: {e}", task) from e
            results[i] = _check(task, rec)
            results[i].setdefault("workload", task.workload)
            if report is not None:
                report(_progress_line(done, len(todo), task, results[i]))
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
        if own:
            executor.shutdown(wait=True, cancel_futures=not ok)


def frame(records: Iterable[Mapping[str, Any]]) -> pandas.DataFrame:
    """One row per run record: benchmark, group, design, seed, every metric (NaN where a
    run lacks it), events, host_seconds, messages_verified and workload where present."""
    import pandas as pd

    rows = []
    metric_names: set[str] = set()
    for rec in records:
        metrics = dict(rec.get("metrics", {}))
        metric_names.update(metrics)
        row = {k: rec.get(k) for k in RUN_KEYS}
        row.update(metrics)
        for extra in ("events", "host_seconds", "messages_verified", "workload"):
            if extra in rec:
                row[extra] = rec[extra]
        rows.append(row)
    metric_cols = [m for m in METRIC_ORDER if m in metric_names] + sorted(
        metric_names - set(METRIC_ORDER)
    )
    extras = [
        c
        for c in ("events", "host_seconds", "messages_verified", "workload")
        if any(c in r for r in rows)
    ]
    return pd.DataFrame(rows, columns=[*RUN_KEYS, *metric_cols, *extras])


def sweep(
    tasks: Iterable[Task | Mapping[str, Any]],
    executor: Any = None,
    progress: bool | Callable[[str], None] = False,
) -> pandas.DataFrame:
    """Runs the tasks on ``executor`` (default: a process pool, one worker per CPU) and
    returns one row per run (see :func:`frame`), in task order. Tasks are :class:`Task`\\ s
    or dicts with its keys (``workload``, ``design``, ``seed``, ``config``,
    ``iterations``, ``out``). A failed task raises :class:`SweepError` naming it."""
    return frame(run_tasks(tasks, executor, progress))
