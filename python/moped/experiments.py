"""The paper's experiments as one call each.

:func:`figure10` runs the sweep behind Figure 10: the 16 kB IMB benchmarks (PP, XC, BC,
RD, GA, AA) and the class-S NPB skeletons (SP, CG, MG, FT, BT) under the baseline and the
three MOPED designs, plus PP, XC and BC with 1 MB messages when ``large`` is set; then it
writes the records, the reduction tables, the plot and the report::

    df = moped.experiments.figure10("results/fig10", seeds=(1, 2, 3))

Spec files are looked up in ``workloads_dir`` (default: the ``workloads/`` folder of the
current directory or its nearest parent that has one) as ``imb/<stem>-16k.toml``,
``npb/<stem>-S.toml`` and ``imb/<stem>-1m.toml`` (``STEMS``: pingpong, pingping, bcast,
reduce, gather, alltoall; sp, cg, mg, ft, bt), the stem in lower case (any case is
accepted).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped._core import MopedError
from moped.batch import Task, frame, run_tasks

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from moped import SystemConfig

__all__ = ["DESIGNS", "figure10", "figure10_specs", "find_workloads_dir"]

#: The designs of Figure 10, the baseline first.
DESIGNS = ("baseline", "basemoped", "optcopy", "optcache")
#: The spec file stem of each benchmark (the paper's short names).
STEMS = {
    "PP": "pingpong",
    "XC": "pingping",
    "BC": "bcast",
    "RD": "reduce",
    "GA": "gather",
    "AA": "alltoall",
    "SP": "sp",
    "CG": "cg",
    "MG": "mg",
    "FT": "ft",
    "BT": "bt",
}
#: (group, benchmarks, spec folder, file name suffix).
SUITES = (
    ("imb", ("PP", "XC", "BC", "RD", "GA", "AA"), "imb", "-16k.toml"),
    ("npb", ("SP", "CG", "MG", "FT", "BT"), "npb", "-S.toml"),
)
LARGE_SUITE = ("imb-1m", ("PP", "XC", "BC"), "imb", "-1m.toml")


def find_workloads_dir(start: str | PathLike[str] | None = None) -> Path:
    """The ``workloads/`` folder of ``start`` (default: the current directory) or of its
    nearest parent that has one."""
    here = (Path.cwd() if start is None else Path(start)).resolve()
    for d in (here, *here.parents):
        if (d / "workloads").is_dir():
            return d / "workloads"
    raise MopedError(
        f"no workloads/ folder in {here} or any parent: run from the repository or pass "
        "workloads_dir="
    )


def _spec(folder: Path, name: str) -> Path | None:
    exact = folder / name
    if exact.is_file():
        return exact
    if folder.is_dir():
        for c in sorted(folder.iterdir()):
            if c.name.lower() == name.lower() and c.is_file():
                return c
    return None


def figure10_specs(
    workloads_dir: str | PathLike[str] | None = None, large: bool = False
) -> list[tuple[str, str, Path]]:
    """(group, benchmark, spec path) of every Figure-10 workload, in the paper's order;
    raises :class:`moped.MopedError` listing every spec file that is missing."""
    root = find_workloads_dir() if workloads_dir is None else Path(workloads_dir)
    if not root.is_dir():
        raise MopedError(f"{fspath(root)}: no such workloads folder")
    suites = [*SUITES, LARGE_SUITE] if large else list(SUITES)
    found, missing = [], []
    for group, benches, folder, suffix in suites:
        for b in benches:
            name = f"{STEMS[b]}{suffix}"
            path = _spec(root / folder, name)
            if path is None:
                missing.append(fspath(root / folder / name))
            else:
                found.append((group, b, path))
    if missing:
        raise MopedError(f"missing workload spec(s) for Figure 10: {', '.join(missing)}")
    return found


def _notes(
    records: list[dict[str, Any]],
    seeds: tuple[int, ...],
    iteration_scale: float | None,
    config_note: str,
) -> list[str]:
    notes = [f"Seeds: {', '.join(str(s) for s in seeds)}.", config_note]
    if iteration_scale is not None:
        notes.append(
            f"Iteration counts scaled by {iteration_scale:g} relative to the workload specs."
        )
    by_note: dict[str, list[str]] = {}
    for r in records:
        run = f"{r['group']} {r['benchmark']} {r['design']} seed {r['seed']}"
        raw = r.get("notes") or []
        for n in [raw] if isinstance(raw, str) else raw:
            by_note.setdefault(str(n), []).append(run)
    for n, runs in by_note.items():
        notes.append(n if len(runs) == len(records) else f"{n} ({'; '.join(runs)})")
    verified = [r.get("messages_verified") for r in records]
    failed = [
        f"{r['group']} {r['benchmark']} {r['design']} seed {r['seed']}"
        for r in records
        if r.get("messages_verified") is False
    ]
    if failed:
        notes.append(f"Message contents NOT verified in: {'; '.join(failed)}.")
    elif verified and all(v is True for v in verified):
        notes.append("Every received message was checked against its send buffer.")
    return notes


def figure10(
    out: str | PathLike[str],
    large: bool = False,
    seeds: Iterable[int] = (1,),
    executor: Any = None,
    iteration_scale: float | None = None,
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
    progress: bool = True,
    workloads_dir: str | PathLike[str] | None = None,
) -> pandas.DataFrame:
    """Runs Figure 10's sweep and writes into ``out``:

    * ``runs/<group>-<benchmark>-<design>-s<seed>.json``: each run's record as returned
      by the simulator (the run's own files go to the folder of the same name);
    * ``records.json`` (the run records the analysis reads), ``runs.csv`` (the frame);
    * ``reductions.csv`` and ``reductions.json``, ``figure10.png`` and ``figure10.svg``,
      ``report.md``, and ``config.toml`` (the configuration used).

    ``executor``: any ``concurrent.futures``-style executor (see :func:`moped.sweep`);
    ``progress`` prints one line per finished run to stderr. Returns one row per run.
    """
    from moped import _config_toml, analysis
    from moped.plot import figure10 as draw

    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise MopedError("figure10 needs at least one seed")
    specs = figure10_specs(workloads_dir, large)
    out_dir = Path(out)
    runs_dir = out_dir / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    config_toml = _config_toml(config)
    default = config_toml == _config_toml(None)
    config_note = (
        "System configuration: the paper's Table 1 (config.toml)."
        if default
        else "System configuration: changed from the paper's Table 1 (see config.toml)."
    )
    (out_dir / "config.toml").write_text(config_toml, encoding="utf-8")

    tasks, names = [], []
    for group, bench, path in specs:
        for design in DESIGNS:
            for seed in seeds:
                name = f"{group}-{bench.lower()}-{design}-s{seed}"
                (runs_dir / name).mkdir(exist_ok=True)
                tasks.append(
                    Task(
                        workload=fspath(path),
                        design=design,
                        seed=seed,
                        config=config,
                        iterations=iteration_scale,
                        out=fspath(runs_dir / name),
                    )
                )
                names.append(name)
    records = run_tasks(tasks, executor, progress)
    for name, rec in zip(names, records, strict=True):
        text = json.dumps(rec, indent=2, sort_keys=True) + "\n"
        (runs_dir / f"{name}.json").write_text(text, encoding="utf-8")
    run_records = analysis.to_records(records)
    (out_dir / "records.json").write_text(json.dumps(run_records, indent=2) + "\n", "utf-8")
    df = frame(records)
    df.to_csv(out_dir / "runs.csv", index=False)

    analysis.write_tables(out_dir, run_records)
    draw(out_dir / "reductions.json", out_dir)
    notes = _notes(records, seeds, iteration_scale, config_note)
    (out_dir / "report.md").write_text(analysis.report(run_records, notes), encoding="utf-8")
    return df
