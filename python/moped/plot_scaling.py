"""How host time grows with the simulated cores: the plot of ``moped bench --scaling``.

Three log-log panels, one line per benchmark (the random tester, IMB Alltoall): host
seconds against cores, host seconds against the coherence messages simulated, and host
nanoseconds per event against cores. A slope of 1 on the first two is linear growth.
Drawn with matplotlib's Agg canvas (no display, no global backend change)::

    moped.plot.scaling("docs/scaling.csv", "docs")

or ``python -m moped.plot DIR`` for a folder holding ``scaling.csv``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import InputError
from moped.matching_results import _read
from moped.plot_engines import _figure
from moped.plot_matching import (
    _legend,
    _log_axes,
    _positive,
    _readable_log_ticks,
    _rows,
    _save,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from matplotlib.axes import Axes

__all__ = ["SCALING_COLUMNS", "read_scaling", "scaling"]

#: The columns of ``scaling.csv``, in order (the Rust side's ``bench::SCALING_CSV_HEADER``).
SCALING_COLUMNS: tuple[str, ...] = tuple(_core.SCALING_CSV_HEADER)
_FLOATS = ("host_seconds", "ns_per_event")
_INTS = tuple(c for c in SCALING_COLUMNS if c not in ("bench", *_FLOATS))
#: Each benchmark's label, colour and marker.
BENCH_STYLE = {
    "tester": ("random tester (20,000 checks)", "#1f77b4", "o"),
    "alltoall": ("IMB Alltoall (64 B, one iteration)", "#d62728", "s"),
}


def read_scaling(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``scaling.csv`` (``moped bench --scaling --out FILE``), from the file or
    from a folder holding it, typed: ``bench`` as str, ``host_seconds`` and
    ``ns_per_event`` as float64, the rest as int64. A missing or malformed file raises
    :class:`moped.InputError`."""
    return _read(
        path,
        "scaling.csv",
        SCALING_COLUMNS,
        writer="moped bench --scaling --out",
        texts=("bench",),
        ints=_INTS,
        floats=_FLOATS,
    )


def _lines(ax: Axes, df: pandas.DataFrame, x: str, y: str) -> None:
    for i, bench in enumerate(dict.fromkeys(df["bench"])):
        rows = df[df["bench"] == bench].sort_values(x)
        xs, ys = _positive(list(rows[x]), list(rows[y]))
        label, colour, marker = BENCH_STYLE.get(bench, (bench, f"C{i % 10}", "o"))
        ax.plot(xs, ys, label=label, color=colour, marker=marker, markersize=4, linewidth=1.2)


def scaling(df_or_dir: Any, out_dir: str | PathLike[str]) -> list[Path]:
    """Draws ``scaling.png`` and ``scaling.svg`` of ``df_or_dir`` (a frame with the columns
    of :data:`SCALING_COLUMNS`, a folder holding ``scaling.csv`` or the file) into
    ``out_dir``. Returns the paths written."""
    out = Path(_args.path("out_dir", out_dir))
    df = _rows(df_or_dir, "df_or_dir", "scaling", read_scaling, SCALING_COLUMNS)
    if df.empty:
        raise InputError("no scaling rows to plot")
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = _figure((12, 4.2), 3)
    _lines(axes[0], df, "cores", "host_seconds")
    _log_axes(axes[0], "simulated cores (= ranks)", "host seconds", "host time against cores")
    _lines(axes[1], df, "messages", "host_seconds")
    _log_axes(axes[1], "coherence messages simulated", "host seconds", "host time against messages")
    _lines(axes[2], df, "cores", "ns_per_event")
    _log_axes(axes[2], "simulated cores (= ranks)", "host ns per event", "cost of an event")
    from matplotlib.ticker import NullLocator

    cores = sorted(set(df["cores"]))
    for ax in (axes[0], axes[2]):
        ax.set_xticks(cores, [f"{c:,}" for c in cores])
        ax.xaxis.set_minor_locator(NullLocator())
    _readable_log_ticks(axes[2])
    _legend(fig, axes)
    return _save(fig, out, "scaling")
