"""The paper's experiments as one call each.

:func:`figure10` runs the sweep behind Figure 10: the 16 kB IMB benchmarks (PP, XC, BC,
RD, GA, AA) and the class-S NPB skeletons (SP, CG, MG, FT, BT) under the baseline and the
three MOPED designs, plus PP, XC and BC with 1 MB messages when ``large`` is set; then it
writes the records, the reduction tables, the plot and the report::

    df = moped.experiments.figure10("results/fig10", seeds=(1, 2, 3))

It is the pipeline of ``moped figure10`` (``src/api/figure10.rs``): the same plan, runs,
analysis and files. Spec files are looked up in ``workloads_dir`` (default: the
``workloads/`` folder of the current directory or its nearest parent that has one) as
``imb/<stem>-16k.toml``, ``npb/<stem>-S.toml`` and ``imb/<stem>-1m.toml``, the stem in
lower case (any case is accepted).

:func:`matching` runs the MPI queue benchmarks (preposted, unload, unexpected) under the
software MPI path and each MOPED matching engine, as ``moped matching`` does
(``src/api/matching``), and returns the rows of ``matching.csv``; :func:`read_matching`
reads them back from a finished folder, :func:`read_stream64` the microcoded match unit's
``stream64.csv``::

    df = moped.experiments.matching("results/matching", quick=True, engines=["fsm", "cam"])

:func:`lhs` runs the LHS paper's experiments in its own setting, DIMMnet-2 and the
emulated DIMMnet-3 (``configs/dimmnet2.toml``, ``configs/dimmnet3.toml``), as ``moped
lhs`` does (``src/api/lhs``), and returns the rows of ``lhs.csv`` (:func:`read_lhs`)::

    df = moped.experiments.lhs("results/lhs", quick=True, set={"nic.vl_cycles": 40})

:func:`engines` runs IMB Uniband, Biband and PingPong under MOPED with one and two engines
in each scheme of the multi-CPU NIC paper (base, SO, RO, DSR, SR), as ``moped engines``
does (``src/api/engines``), and returns the rows of ``engines.csv``
(:func:`read_engines` reads them back)::

    df = moped.experiments.engines("results/engines", quick=True, schemes=["base", "RO"])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args, _core, _progress
from moped._core import MopedError
from moped.batch import Task, frame, run_tasks
from moped.config import check_config, config_toml
from moped.designs import DESIGNS
from moped.engines_results import (
    ENGINES_COLUMNS,
    SCHEMES,
    TIGON_COLUMNS,
    read_engines,
    read_tigon,
)
from moped.matching_results import (
    ENGINES,
    LHS_COLUMNS,
    MATCHING_COLUMNS,
    STREAM64_COLUMNS,
    read_lhs,
    read_matching,
    read_stream64,
)
from moped.store import write_parquet

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from moped.config import SystemConfig

__all__ = [
    "DESIGNS",
    "ENGINES",
    "ENGINES_COLUMNS",
    "LHS_COLUMNS",
    "MATCHING_COLUMNS",
    "SCHEMES",
    "STREAM64_COLUMNS",
    "TIGON_COLUMNS",
    "engines",
    "figure10",
    "figure10_specs",
    "find_workloads_dir",
    "lhs",
    "matching",
    "read_engines",
    "read_lhs",
    "read_matching",
    "read_stream64",
    "read_tigon",
]


def find_workloads_dir(start: str | PathLike[str] | None = None) -> Path:
    """The ``workloads/`` folder of ``start`` (default: the current directory) or of its
    nearest parent that has one."""
    here = (Path.cwd() if start is None else Path(_args.path("start", start))).resolve()
    for d in (here, *here.parents):
        if (d / "workloads").is_dir():
            return d / "workloads"
    raise MopedError(
        f"no workloads/ folder in {here} or any parent: run from the repository or pass "
        "workloads_dir="
    )


def _workloads(workloads_dir: str | PathLike[str] | None) -> Path:
    if workloads_dir is None:
        root = find_workloads_dir()
    else:
        root = Path(_args.path("workloads_dir", workloads_dir))
    if not root.is_dir():
        raise MopedError(f"{fspath(root)}: no such workloads folder")
    return root


def figure10_specs(
    workloads_dir: str | PathLike[str] | None = None, large: bool = False
) -> list[tuple[str, str, int, str]]:
    """Figure 10's runs in the paper's order, as ``(spec path, design, seed 1, results
    folder name)``; raises :class:`moped.MopedError` listing every spec file that is
    missing."""
    large = _args.flag("large", large)
    return _core.figure10_plan(fspath(_workloads(workloads_dir)), large, [1])


def figure10(
    out: str | PathLike[str],
    large: bool = False,
    seeds: Iterable[int] = (1,),
    executor: Any = None,
    iteration_scale: float | None = None,
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
    progress: bool | Callable[[str], None] = True,
    workloads_dir: str | PathLike[str] | None = None,
    force: bool = False,
    sensitivity: bool = False,
    fresh: bool = False,
) -> pandas.DataFrame:
    """Runs Figure 10's sweep and writes into ``out`` what ``moped figure10`` writes:

    * ``runs/<spec>-<design>-s<seed>/``: each run's statistics and ``record.json``;
    * ``records.json`` (every run's outcome), ``runs.csv`` (every run with its key, its
      configuration as columns and its metrics: :func:`moped.load_results`);
    * ``reductions.csv`` and ``reductions.json``, ``figure10.png`` and ``figure10.svg``,
      ``report.md``, and ``config.toml`` (the configuration used).

    Without ``executor`` the runs go to the simulator's own thread pool (every core);
    with one (any ``concurrent.futures``-style executor, see :func:`moped.sweep`) each run
    is submitted to it. ``progress`` shows the runs: a bar on a terminal or in a notebook, a
    line per finished run otherwise, each line to a callable given instead. Returns
    one row per run of Figure 10.

    ``sensitivity`` (the simulator's own pool only) reruns the sweep under each
    alternative modelling choice, as ``moped figure10 --sensitivity`` does: their runs go
    into ``sensitivity/<name>/``, every bar into ``sensitivity.csv`` (columns alternative,
    benchmark, design, metric, reduction) and a section of ``report.md``.

    ``out`` must be missing, empty, hold only a FAILED marker or hold an earlier Figure 10,
    unless ``force`` (its contents are then replaced). An earlier Figure 10 there (finished,
    or failed with some runs finished) is resumed on the simulator's own pool: each run
    whose key (workload bytes, configuration, design, seed, iteration scale, moped's
    version and sources) is
    unchanged is taken from it, not simulated again, unless ``fresh``. The results are
    written into a hidden sibling folder that takes ``out``'s place only when every file is
    written; a failure (a run's, Ctrl-C) leaves ``out`` holding FAILED with the error and,
    on the simulator's own pool, the runs that finished, for the next call to reuse.
    """
    from moped.plot import figure10 as draw

    out_dir = Path(_args.path("out", out))
    large = _args.flag("large", large)
    if isinstance(seeds, str) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds must be an iterable of int, not {type(seeds).__name__}")
    seeds = [_args.integer("seeds", s) for s in seeds]
    iteration_scale = _args.optional_number("iteration_scale", iteration_scale)
    progress = _progress.check(progress)
    force = _args.flag("force", force)
    sensitivity = _args.flag("sensitivity", sensitivity)
    fresh = _args.flag("fresh", fresh)
    if sensitivity and executor is not None:
        raise MopedError(
            "figure10: sensitivity runs on the simulator's own pool; pass executor=None"
        )
    check_config(config)
    if not seeds:
        raise MopedError("figure10 needs at least one seed")
    root = fspath(_workloads(workloads_dir))
    toml = config_toml(config)
    args = (root, large, seeds, iteration_scale, toml)
    if executor is None:
        runs = _progress.Runs(progress, "figure10")
        try:
            outcomes = json.loads(
                _core.figure10(
                    fspath(out_dir), *args, None, runs.callback(), force, sensitivity, fresh
                )
            )
        finally:
            runs.close()
    else:
        plan = _core.figure10_plan(root, large, seeds)
        claim = _core.figure10_claim(fspath(out_dir), root, seeds, force)
        try:
            tasks = [
                Task(
                    workload=spec,
                    design=design,
                    seed=seed,
                    config=config,
                    iterations=iteration_scale,
                    out=fspath(Path(claim.path) / "runs" / name),
                )
                for spec, design, seed, name in plan
            ]
            outcomes = run_tasks(tasks, executor, progress)
        except BaseException as e:
            claim.fail(f"{type(e).__name__}: {e}")
            raise
        _core.figure10_finish(claim, json.dumps(outcomes), *args)
    df = frame(outcomes)
    draw(out_dir / "reductions.json", out_dir)
    write_parquet(out_dir)
    return df


def _stored(
    name: str,
    out: str,
    progress: _progress.Progress,
    call: Callable[[Any], Mapping[str, Any]],
) -> Mapping[str, Any]:
    """Runs the experiment ``name`` into ``out`` through ``call``, which hands the
    simulator the runs' progress callback: the runs shown as ``progress`` asks, the number
    taken from the earlier results said, and the Parquet copy of the store's table
    written. Returns what ``call`` returned."""
    runs = _progress.Runs(progress, name)
    try:
        done = call(runs.callback())
    finally:
        runs.close()
    reused = int(done.get("reused", 0))
    if reused:
        said = f"reused {reused} runs from the earlier results in {out} (fresh=True runs them all)"
        _progress.say(progress, f"{name}: {said}")
    write_parquet(out)
    return done


def _names(what: str, names: Any) -> list[str] | None:
    """``names`` (the argument ``what``) as a list: None (every one), a comma-separated
    str, or an iterable of str."""
    if names is None:
        return None
    if isinstance(names, str):
        return [e.strip() for e in names.split(",") if e.strip()]
    if not isinstance(names, Iterable) or isinstance(names, (bytes, Mapping)):
        raise TypeError(f"{what} must be an iterable of str or None, not {type(names).__name__}")
    return [_args.text(what, e) for e in names]


def matching(
    out: str | PathLike[str],
    *,
    quick: bool = False,
    jobs: int | None = None,
    engines: Iterable[str] | str | None = None,
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
    force: bool = False,
    progress: bool | Callable[[str], None] = True,
    figure10: bool = True,
    workloads_dir: str | PathLike[str] | None = None,
    fresh: bool = False,
) -> pandas.DataFrame:
    """Runs the MPI queue benchmarks and writes into ``out`` what ``moped matching`` writes:

    * ``matching.csv`` (the returned frame) and ``report.md`` (the matching papers'
      claims checked);
    * ``<engine>/runs/<point>/``: each simulation's statistics and record, and ``specs/``,
      the benchmark points as workload specs;
    * with the ``microcoded`` engine, ``stream64.csv`` (:func:`read_stream64`, columns
      :data:`STREAM64_COLUMNS`): the microcoded match unit paper's benchmark, 64 messages
      matched against posted lists of 10, 30, 100 and 300 items (10 and 30 with
      ``quick``) over the share of the list traversed, beside ideal hardware;
    * with ``software-lhs``, ``lhs.csv`` (:func:`read_lhs`, columns :data:`LHS_COLUMNS`):
      the LHS paper's unexpected search, N unexpected messages and the receive for the
      x-th, under the list and LHS (64- and 16-byte entries), each with the L1 prefetcher
      off, next-line and stride;
    * ``matching-preposted``, ``matching-unload`` and ``matching-unexpected`` as ``.png``
      and ``.svg`` (:func:`moped.plot.matching`), and ``matching-stream64`` where
      ``stream64.csv`` was written;
    * with ``figure10`` (the default), ``figure10_engines.csv`` and ``figure10/``: Figure
      10's 16 kB IMB and class S NPB runs under BASEMOPED with each engine beside the
      software baseline, with the search depths that explain the difference (a tenth of
      the iterations with ``quick``; the specs from ``workloads_dir``, by default the
      repository's ``workloads/``).

    ``engines`` picks what matches messages, from :data:`ENGINES` (default: all): the
    software path runs under the baseline, every engine under BASEMOPED. ``quick`` keeps
    queues up to 300 entries deep (engine-level unload rows up to 1,000), a few minutes
    instead of the full sweep. The simulations run on ``jobs`` host threads (default:
    every core); ``progress`` shows the runs: a bar on a terminal or in a notebook, a line
    per finished run otherwise, each line to a callable given instead.

    One row per benchmark point and engine (columns :data:`MATCHING_COLUMNS`): ``level``
    is ``cmp`` for a simulation of the whole CMP (``cycles``: CMP cycles per operation)
    and ``engine`` for the engine model alone fed the unload benchmark's queue operations
    (deeper queues than a process can hold at one MOPED, and the two-level queue paper's
    64 to 10,000 distinct ``senders``; ``cycles`` is NaN there); ``setting`` rows are the
    preposted benchmark in that paper's setting (``ns``: the match at the engine's clock,
    the network's 200 ns and the ALPU's offload round trip). ``engine_cycles`` is the
    receiver's matching engine's cycles per operation at its own clock ``mhz`` (NaN for
    the software path); ``ns`` and ``engine_ns`` are the same in nanoseconds.

    ``out`` must be missing, empty, hold only a FAILED marker or hold an earlier run of
    this experiment, unless ``force`` (its contents are then replaced). An earlier run
    there is resumed: each simulation whose key is unchanged is taken from it (see
    :mod:`moped.store`), unless ``fresh``. Every simulation is a row of ``runs.csv``
    (:func:`moped.load_results`). A failure (a run's, Ctrl-C) leaves FAILED with the error
    and the simulations that finished.
    """
    from moped.plot import matching as draw

    out_dir = _args.path("out", out)
    quick = _args.flag("quick", quick)
    if jobs is not None:
        jobs = _args.integer("jobs", jobs, lo=1, hi=1024)
    names = _names("engines", engines)
    force = _args.flag("force", force)
    progress = _progress.check(progress)
    check_config(config)
    figure10 = _args.flag("figure10", figure10)
    workloads = fspath(_workloads(workloads_dir)) if figure10 else None
    fresh = _args.flag("fresh", fresh)
    _stored(
        "matching",
        out_dir,
        progress,
        lambda report: _core.matching(
            out_dir, config_toml(config), names, quick, jobs, report, force, workloads, fresh
        ),
    )
    df = read_matching(out_dir)
    # Handed the frame, the plot cannot look beside matching.csv for stream64.csv itself;
    # the file is there only when the microcoded engine ran.
    stream64 = Path(out_dir) / "stream64.csv"
    draw(df, out_dir, stream64=stream64 if stream64.is_file() else None)
    return df


def lhs(
    out: str | PathLike[str],
    *,
    quick: bool = False,
    jobs: int | None = None,
    set: Mapping[str, Any] | None = None,
    force: bool = False,
    progress: bool | Callable[[str], None] = True,
    fresh: bool = False,
) -> pandas.DataFrame:
    """Runs the LHS paper's experiments (Tanabe and Ohta, IEICE Trans. 2013, section 4)
    in its own setting and writes into ``out`` what ``moped lhs`` writes:

    * ``lhs.csv`` (the returned frame, columns :data:`LHS_COLUMNS`): a row per run of the
      unexpected search (N messages, the receive for the x-th), ``setting`` ``dimmnet2``
      or ``dimmnet3``, ``condition`` the paper's (``fig5-2``: Fig. 5's condition 2) or
      ours, with its time per message searched (``search_ns_per_entry``) and counters;
    * ``report.md``: the like-for-like speed-up first, then the paper's claims one by one
      beside ours, the tables behind its Figs. 4 to 6 and the counters per message;
    * ``<host>-<condition>/runs/<point>/``: each simulation's statistics and record.

    ``set`` overrides keys of both hosts' presets (``{"nic.vl_cycles": 40}``) before each
    condition sets the factors it varies. ``quick`` keeps searches up to 256 entries deep
    (about a second) instead of the sweep to 16,384. The simulations run on ``jobs`` host
    threads (default: every core); ``progress`` shows the runs, as :func:`matching`'s. ``out``
    must be missing, empty, hold only a FAILED marker or hold an earlier run of this
    experiment (resumed, its unchanged runs reused, unless ``fresh``), unless ``force``.
    """
    out_dir = _args.path("out", out)
    quick = _args.flag("quick", quick)
    if jobs is not None:
        jobs = _args.integer("jobs", jobs, lo=1, hi=1024)
    pairs = [(k, _set_value(k, v)) for k, v in _args.mapping("set", set or {}).items()]
    force = _args.flag("force", force)
    progress = _progress.check(progress)
    fresh = _args.flag("fresh", fresh)
    _stored(
        "lhs",
        out_dir,
        progress,
        lambda report: _core.lhs(out_dir, pairs, quick, jobs, report, force, fresh),
    )
    return read_lhs(out_dir)


def _set_value(key: str, value: Any) -> str:
    """A ``set`` value as ``--set`` writes it (TOML: a bool as true or false, a number as
    written, a str as is)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TypeError(f"set[{key!r}] must be a bool, int, float or str, not {type(value).__name__}")


def engines(
    out: str | PathLike[str],
    *,
    quick: bool = False,
    jobs: int | None = None,
    schemes: Iterable[str] | str | None = None,
    costs: str = "emp",
    design: str = "optcopy",
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
    force: bool = False,
    progress: bool | Callable[[str], None] = True,
    figure10: bool = True,
    workloads_dir: str | PathLike[str] | None = None,
    only: str | None = None,
    fresh: bool = False,
) -> pandas.DataFrame:
    """Runs the multi-CPU NIC paper's schemes (each of ``schemes``, default: all of
    :data:`SCHEMES`) on two hosts, every message verified, and writes into ``out`` what
    ``moped engines`` writes. ``only`` is ``"tigon"`` or ``"cmp"`` to run one host.

    * The paper's testbed (two Tigon2 NICs running EMP, Gigabit Ethernet between them): its
      latency, unidirectional and bidirectional tests on one and two processors per NIC,
      ``tigon.csv`` (:func:`read_tigon`, columns :data:`TIGON_COLUMNS`; the returned frame
      with ``only="tigon"``) and ``tigon_sensitivity.csv`` (the chosen values varied).
    * The transplant into MOPED: IMB Uniband, Biband (a window of 64 non-blocking messages,
      then an acknowledgement) and PingPong on two ranks with one and with two engines, at
      one and at two active copies for every scheme, ``engines.csv`` (the returned frame
      otherwise, columns :data:`ENGINES_COLUMNS`): per scheme, engines, active copies,
      benchmark and message size, the timed cycles, bandwidth in bytes per CMP cycle,
      latency (PingPong's half round trip; a window's cycles per message), the engines'
      busy cycles, lock waits and hand-offs, and the busiest engine of one MOPED with the
      step it spent most of its cycles in;
    * ``report.md``: the testbed beside the paper's figures, and the paper's claims as it
      words them, each with its verdict on both hosts and the measured state behind a
      failure;
    * ``engines-bandwidth`` and ``engines-latency`` as ``.png`` and ``.svg``
      (:func:`moped.plot.engines`);
    * ``<scheme>-x<engines>/runs/<point>/``: each simulation's statistics and record;
    * with ``figure10`` (the default), ``figure10_schemes.csv`` and ``figure10/``: Figure
      10's 16 kB IMB and class S NPB runs under the baseline, the configured device, one
      engine at the step costs and the best two-engine scheme, and a section of the report
      on what the best scheme changes (a tenth of the iterations with ``quick``; the specs
      from ``workloads_dir``, by default the repository's ``workloads/``).

    ``costs`` is ``"emp"`` (EMP's firmware on the Tigon2: Table 1's times at 88 MHz) or
    ``"config"`` (the configuration's ``[moped.steps]``); ``design`` one of basemoped,
    optcopy, optcache. ``quick`` runs two message sizes per benchmark. ``out`` must be
    missing, empty, hold only a FAILED marker or hold an earlier run of this experiment
    (resumed: each CMP simulation whose key is unchanged is taken from it, unless
    ``fresh``; the testbed's runs take seconds and run again), unless ``force``.
    """
    from moped.plot_engines import engines as draw

    out_dir = _args.path("out", out)
    quick = _args.flag("quick", quick)
    if jobs is not None:
        jobs = _args.integer("jobs", jobs, lo=1, hi=1024)
    names = _names("schemes", schemes)
    costs = _args.text("costs", costs)
    design = _args.text("design", design)
    force = _args.flag("force", force)
    progress = _progress.check(progress)
    check_config(config)
    figure10 = _args.flag("figure10", figure10)
    if only is not None:
        only = _args.text("only", only)
    workloads = fspath(_workloads(workloads_dir)) if figure10 else None
    fresh = _args.flag("fresh", fresh)
    _stored(
        "engines",
        out_dir,
        progress,
        lambda report: _core.engines(
            out_dir,
            config_toml(config),
            names,
            costs,
            design,
            quick,
            jobs,
            report,
            force,
            workloads,
            only,
            fresh,
        ),
    )
    if only == "tigon":
        return read_tigon(out_dir)
    df = read_engines(out_dir)
    draw(df, out_dir)
    return df
