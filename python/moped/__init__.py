"""moped: a cycle-level simulator of a 16-core CMP with directory MOESI coherence, built to
study MOPED, a device that moves MPI message data through the coherence protocol.

The simulator is Rust (``moped._core``); this package adds a configuration class, result
objects and helpers::

    import moped

    cfg = moped.SystemConfig(l2={"latency": 12})
    res = moped.run("workloads/examples/stream.toml", config=cfg)
    print(res.stats["system"]["total"]["l2"]["misses_memory"], res.cycles)
    df = res.to_pandas()

Sweeps and the paper's Figure 10: :func:`sweep` runs many workloads on any
``concurrent.futures``-style executor, :mod:`moped.analysis` turns run records into
reductions against the baseline and checks the paper's claims, :mod:`moped.plot` draws
the figure, and ``moped.experiments.figure10(out)`` does all of it.

Matching: ``moped.experiments.matching(out)`` runs the MPI queue benchmarks under the
software path and every MOPED matching engine and returns the rows of ``matching.csv``;
:func:`read_matching` reads them from a finished folder (:func:`read_stream64` the
microcoded match unit's ``stream64.csv``, :func:`read_lhs` the LHS experiment's
``lhs.csv``), :func:`moped.plot.matching` draws them.

Engines: ``moped.experiments.engines(out)`` runs each scheme of the multi-CPU NIC paper on
its testbed (two Tigon2 NICs running EMP) and IMB Uniband, Biband and PingPong under MOPED
with one and two engines;
:func:`read_engines` reads ``engines.csv`` back (:func:`read_tigon` the paper's testbed's
``tigon.csv``), :func:`moped.plot.engines` draws it.

gem5: :func:`read_stats` reads any gem5-format ``stats.txt`` into a DataFrame, and
:func:`compare` sets a gem5 run beside an embedded run of the same workload;
:func:`host_speed` gives a run's host speed and :func:`speed_ratio` how many times faster
the embedded simulator ran the same traffic.

Results: :func:`load_results` reads a results folder's table of runs (``runs.csv``), a row
per run with its design, seed, iteration scale and every configuration key as columns;
running ``moped figure10`` again into the same folder reuses the runs that did not change.

Catalogue: :func:`info_config` lists every configuration key (type, default, allowed
values, description), :func:`info_stats` every statistic a run writes.

Host speed: :func:`read_scaling` reads ``moped bench --scaling``'s CSV, and
:func:`moped.plot.scaling` draws how host time grows with the cores.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

from moped import _args, _core, analysis, experiments
from moped._core import (
    ConfigError,
    InputError,
    MopedError,
    ProgramError,
    ProtocolError,
    SimulationError,
    StatsError,
)
from moped.batch import SweepError, Task, sweep
from moped.config import SystemConfig, config_toml, read_text
from moped.designs import BASELINE, DESIGNS
from moped.engines_results import read_engines, read_tigon
from moped.gem5 import compare, host_speed, read_stats, speed_ratio
from moped.matching_results import read_lhs, read_matching, read_stream64
from moped.plot_scaling import read_scaling
from moped.results import Result, Stat, read_stats_txt
from moped.store import load_results

if TYPE_CHECKING:  # pragma: no cover
    from moped import plot

__version__: str = _core.__version__


def __getattr__(name: str) -> Any:
    # moped.plot is imported on first use, not with the package: `python -m moped.plot`
    # runs it as __main__, and runpy warns when its package has imported it already.
    if name == "plot":
        return importlib.import_module("moped.plot")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DESIGNS",
    "ConfigError",
    "InputError",
    "MopedError",
    "ProgramError",
    "ProtocolError",
    "Result",
    "SimulationError",
    "Stat",
    "StatsError",
    "SweepError",
    "SystemConfig",
    "Task",
    "__version__",
    "analysis",
    "compare",
    "experiments",
    "host_speed",
    "info_config",
    "info_stats",
    "lint_protocol",
    "load_results",
    "load_goal",
    "plot",
    "protocol_names",
    "protocol_table",
    "random_test",
    "read_engines",
    "read_lhs",
    "read_matching",
    "read_scaling",
    "read_stats",
    "read_stats_txt",
    "read_stream64",
    "read_tigon",
    "run",
    "speed_ratio",
    "sweep",
]


def run(
    program: str | PathLike[str],
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
    protocol: str = BASELINE,
    seed: int = 1,
    out: str | PathLike[str] | None = None,
    force: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> Result:
    """Simulates a program file (see docs/programs.md for its format) and returns its statistics.

    ``config`` is a :class:`SystemConfig`, a dict of overrides, a TOML file path, or None for
    the paper's Table 1. With ``out``, stats.txt, stats.json, stats.csv, config.toml and
    run.json are written into that folder too: it must be missing, empty or hold only a
    FAILED marker (else :class:`InputError`) unless ``force`` (its contents are then
    replaced), and a failed run leaves only FAILED there.

    ``progress``, a callable, is called every half second of host time while the run goes
    on with a dict: ``cycle`` (simulated so far), ``events``, ``host_seconds``,
    ``events_per_second``, and ``done``, ``of`` and ``eta_seconds`` (None where the run's
    end is not known, as for a program file). An exception it raises is printed, and the
    run goes on.
    """
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, not {type(progress).__name__}")
    program = _args.path("program", program)
    protocol = _args.text("protocol", protocol)
    seed = _args.integer("seed", seed)
    out_dir = _args.optional_path("out", out)
    force = _args.flag("force", force)
    raw = _core.run(config_toml(config), program, protocol, seed, out_dir, force, progress)
    return Result.from_core(raw, out=out_dir)


def random_test(
    cores: int = 4,
    checks: int = 1000,
    seed: int = 1,
    design: str = BASELINE,
    prefetch: str = "none",
    cache_ops: bool = False,
) -> dict[str, int]:
    """Runs the random coherence tester under ``design`` (its MOPEDs read, own and fill the
    lines the cores store to, unless it is the baseline), the cores' L1s with the
    ``prefetch`` prefetcher (``"none"``, ``"next_line"`` or ``"stride"``), and with
    ``cache_ops`` a tenth of the cores' picks flushing or software-prefetching a line;
    raises :class:`SimulationError` (naming the seed and the replay command) on a failure,
    else returns its counters."""
    return _core.random_test(
        _args.integer("cores", cores),
        _args.integer("checks", checks),
        _args.integer("seed", seed),
        _args.text("design", design),
        _args.text("prefetch", prefetch),
        _args.flag("cache_ops", cache_ops),
    )


def info_config() -> list[dict[str, str]]:
    """Every key of the system configuration: ``key`` (dotted, as ``--set`` and
    :class:`SystemConfig`'s override tables name it), ``type``, ``default`` (as TOML writes
    it), ``allowed`` and ``description``; the list ``moped info config`` prints."""
    params: list[dict[str, str]] = json.loads(_core.info_config_json())["params"]
    return params


def info_stats() -> list[dict[str, Any]]:
    """Every statistic a run writes: ``name`` (``{N}`` for an index), ``kind``
    (``counter``, ``number`` or ``distribution``), ``unit``, ``description`` and ``runs``
    (``mpi:<design>``, ``run:<design>``: which runs write it); the list ``moped info
    stats`` prints. It is read from small runs of each kind, about a second."""
    stats: list[dict[str, Any]] = json.loads(_core.info_stats_json())["stats"]
    return stats


def protocol_names() -> list[str]:
    """Names of the shipped protocols."""
    return _core.protocol_names()


def protocol_table(name: str = BASELINE) -> str:
    """The transition tables of a protocol's machines, as Markdown."""
    return _core.protocol_markdown(_args.text("name", name))


def lint_protocol(path: str | PathLike[str]) -> None:
    """Checks one protocol machine file; raises :class:`ProtocolError` (``file:line:col:``)."""
    p = _args.path("path", path)
    _core.lint_protocol(read_text(p, ProtocolError), p)


def load_goal(path: str | PathLike[str]) -> dict[str, Any]:
    """Reads a GOAL schedule (LogGOPSim's text format) as the simulator would run it and
    returns a summary: ``name``, ``notes`` and per rank its ``calls``, ``sends``,
    ``recvs``, ``any_source_recvs`` and ``buffer_bytes``. A malformed schedule raises
    :class:`ProgramError` naming ``file:line:col``. Run one with
    ``moped.sweep([{"workload": path, "design": "optcopy"}])``."""
    p = _args.path("path", path)
    return json.loads(_core.parse_goal(read_text(p, ProgramError), p))
