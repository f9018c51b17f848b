"""The matching experiment's plots, in the forms of the matching papers' graphs: cost
against queue depth on log-log axes, one line per engine.

* ``matching-preposted``: the preposted benchmark, a receive matched behind ``depth - 1``
  posted receives. Left, the matching engine's busy cycles per match; right, CMP cycles per
  operation (half a ping-pong), the software path beside the engines. A dotted line marks
  the two-level queue's 256-entry first level (its CAM), past which a search walks lists.
* ``matching-unload``: the unload benchmark, ``depth`` receives posted and then matched
  last first, from uniform and from skewed sources (two panels): engine cycles per match.
  Solid lines with filled markers are simulations of the whole CMP; dashed lines with
  hollow markers the engine model alone, fed the same queue operations, for queues deeper
  than a process can hold at one MOPED.
* ``matching-unexpected`` (when the frame has such rows): CMP cycles per receive that finds
  its message at ``position`` in a queue of ``depth`` unexpected messages.
* ``matching-stream64`` (when there is a ``stream64.csv``, written where the ``microcoded``
  engine ran): the microcoded match unit paper's benchmark in the forms of its Figures 6
  and 7, 64 messages each matched against a posted list after traversing a percentage of
  it, against that percentage, one colour per list length. Left, the time of the 64
  searches at 500 MHz; middle, cycles per item traversed; right, that time relative to
  ideal hardware (8 cycles per header and 8 per item), with a line at 1.0. Solid lines
  are the unit running its match program, dashed ones ideal hardware.

Drawn with matplotlib's Agg canvas (no display, no global backend change)::

    moped.plot.matching("results/matching", "results/matching")

or ``python -m moped.plot DIR`` for a folder holding ``matching.csv``.
"""

from __future__ import annotations

import math
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args
from moped._core import InputError
from moped.matching_results import (
    MATCHING_COLUMNS,
    STREAM64_COLUMNS,
    read_matching,
    read_stream64,
)

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Sequence

    import pandas
    from matplotlib.axes import Axes

__all__ = ["FIRST_LEVEL", "matching"]

#: Entries of the two-level queue's first level (``moped.matching.cam_entries``' default).
FIRST_LEVEL = 256
#: Each matcher's label, colour and marker.
ENGINE_STYLE = {
    "software": ("software (MPICH lists)", "black", "o"),
    "fsm": ("FSM", "#1f77b4", "s"),
    "cam": ("two-level CAM", "#d62728", "^"),
    "cam4": ("two-level CAM, 4 lists", "#ff7f0e", "v"),
    "cam64": ("two-level CAM, 64 lists", "#9467bd", "D"),
    "alpu": ("ALPU", "#2ca02c", "P"),
    "hash": ("hash", "#8c564b", "X"),
    "microcoded": ("microcoded match unit", "#e377c2", "*"),
}
#: The clock stream64.csv's microseconds are at (the microcoded match unit paper's).
STREAM64_CLOCK_MHZ = 500


def _frame(data: Any) -> pandas.DataFrame:
    """The rows of matching.csv from a DataFrame, a folder or a matching.csv path."""
    return _rows(data, "df_or_dir", "matching", read_matching, MATCHING_COLUMNS)


def _rows(
    data: Any, name: str, what: str, read: Callable[[Any], pandas.DataFrame], columns: Any
) -> pandas.DataFrame:
    """The ``what`` rows given as a frame (checked for ``columns``) or as the path of a
    folder or of ``what``.csv, which ``read`` reads."""
    if isinstance(data, (str, PathLike)):
        return read(data)
    if not (hasattr(data, "columns") and hasattr(data, "to_dict")):
        raise TypeError(
            f"{name} must be a DataFrame, a results folder or a {what}.csv path, "
            f"not {type(data).__name__}"
        )
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise InputError(f"{what} rows lack the columns {', '.join(missing)}")
    return data


def _engines(df: pandas.DataFrame) -> list[str]:
    present = set(df["engine"])
    return [e for e in ENGINE_STYLE if e in present] + sorted(present - set(ENGINE_STYLE))


def _style(engine: str, i: int) -> tuple[str, str | None, str]:
    return ENGINE_STYLE.get(engine, (engine, f"C{i % 10}", "o"))


def _positive(xs: list[float], ys: list[Any]) -> tuple[list[float], list[float]]:
    """The points a log axis can show: finite, positive values."""
    out_x, out_y = [], []
    for x, y in zip(xs, ys, strict=True):
        try:
            v = float(y)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v) and v > 0 and x > 0:
            out_x.append(float(x))
            out_y.append(v)
    return out_x, out_y


def _series(
    ax: Axes,
    df: pandas.DataFrame,
    engines: list[str],
    x: str,
    y: str,
    hollow: bool = False,
) -> int:
    """One line per engine of ``y`` against ``x`` (rows sorted by ``x``); the lines drawn."""
    drawn = 0
    for i, engine in enumerate(engines):
        rows = df[df["engine"] == engine].sort_values([x, "depth"])
        xs, ys = _positive(list(rows[x]), list(rows[y]))
        if not xs:
            continue
        label, colour, marker = _style(engine, i)
        _line(ax, xs, ys, label, colour, marker, dashed=hollow, hollow=hollow)
        drawn += 1
    return drawn


def _line(
    ax: Axes,
    xs: list[Any],
    ys: list[Any],
    label: str,
    colour: str | None,
    marker: str,
    dashed: bool = False,
    hollow: bool = False,
) -> None:
    """One marked line of the experiments' plots: dashed and hollow markers on request."""
    ax.plot(
        xs,
        ys,
        label=label,
        color=colour,
        marker=marker,
        markersize=4,
        linewidth=1.2,
        linestyle="--" if dashed else "-",
        markerfacecolor="none" if hollow else colour,
    )


def _log_axes(ax: Axes, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)


def _first_level(ax: Axes, first_level: int) -> None:
    ax.axvline(first_level, color="grey", linewidth=0.8, linestyle=":")
    ax.text(
        first_level,
        0.98,
        f"{first_level}-entry first level ",
        transform=ax.get_xaxis_transform(),
        rotation=90,
        fontsize=7,
        color="grey",
        va="top",
        ha="right",
    )


#: What :func:`_save` can write, each with the metadata that keeps its bytes free of the
#: time it was written (so a redrawn figure is byte for byte the same).
SAVE_FORMATS = {"png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


def _save(
    fig: Any, out: Path, stem: str, formats: Sequence[str] = ("png", "svg"), dpi: int = 150
) -> list[Path]:
    """Writes ``fig`` as ``out/stem.EXT`` for each of ``formats``; returns the paths."""
    from matplotlib import rc_context

    paths = []
    # TrueType (type 42) fonts in PDFs: publishers reject the type 3 fonts that are
    # matplotlib's default there.
    with rc_context({"pdf.fonttype": 42}):
        for fmt in formats:
            path = out / f"{stem}.{fmt}"
            fig.savefig(path, dpi=dpi, metadata=SAVE_FORMATS[fmt])
            paths.append(path)
    return paths


def _legend(fig: Any, axes: list[Axes], extra: list[Any] | None = None) -> None:
    """One legend below the panels: each line label once, then the ``extra`` handles."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    for h in extra or []:
        handles[h.get_label()] = h
    if handles:
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncols=min(len(handles), 4),
            fontsize=8,
        )


def _readable_log_ticks(ax: Axes) -> None:
    """Plain numbers on a log y axis spanning less than a decade and a half, with 2 and 5
    times each power of ten labelled too, where its powers of ten alone leave it bare."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    lo, hi = ax.get_ylim()
    if lo > 0 and hi / lo < 30:
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(plain)
        ax.yaxis.set_major_formatter(plain)


def _preposted(df: pandas.DataFrame, engines: list[str], out: Path, first_level: int) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = df[(df["benchmark"] == "preposted") & (df["level"] == "cmp")]
    fig = Figure(figsize=(10, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    _series(left, rows, engines, "depth", "engine_cycles")
    _log_axes(
        left, "preposted queue depth", "engine cycles per match", "matching engine, preposted"
    )
    _series(right, rows, engines, "depth", "cycles")
    _log_axes(
        right,
        "preposted queue depth",
        "CMP cycles per operation (half a round trip)",
        "whole CMP, preposted",
    )
    _readable_log_ticks(right)
    for ax in (left, right):
        _first_level(ax, first_level)
    _legend(fig, [right, left])
    return _save(fig, out, "matching-preposted")


def _unload(df: pandas.DataFrame, engines: list[str], out: Path, first_level: int) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    rows = df[df["benchmark"] == "unload"]
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(1, 2, sharey=True))
    for ax, sources in zip(axes, ("uniform", "skewed"), strict=True):
        mine = rows[rows["sources"] == sources]
        _series(ax, mine[mine["level"] == "cmp"], engines, "depth", "engine_cycles")
        _series(
            ax,
            mine[mine["level"] == "engine"],
            engines,
            "depth",
            "engine_cycles",
            hollow=True,
        )
        _log_axes(
            ax,
            "unload queue depth",
            "engine cycles per match" if ax is axes[0] else "",
            f"unload, {sources} sources",
        )
        _first_level(ax, first_level)
    key = [
        Line2D([], [], color="grey", marker="o", markersize=4, label="whole-CMP simulation"),
        Line2D(
            [],
            [],
            color="grey",
            marker="o",
            markersize=4,
            linestyle="--",
            markerfacecolor="none",
            label="engine model alone (engine level)",
        ),
    ]
    _legend(fig, axes, key)
    return _save(fig, out, "matching-unload")


def _unexpected(df: pandas.DataFrame, engines: list[str], out: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    rows = df[(df["benchmark"] == "unexpected") & (df["level"] == "cmp")]
    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    _series(ax, rows, engines, "position", "cycles")
    _log_axes(
        ax,
        "position of the matched message in the unexpected queue (of its depth)",
        "CMP cycles per receive",
        "whole CMP, unexpected",
    )
    points = sorted(
        {(int(p), int(d)) for p, d in zip(rows["position"], rows["depth"], strict=True)}
    )
    ax.set_xticks([p for p, _ in points], [f"{p}\n(of {d})" for p, d in points], fontsize=7)
    ax.xaxis.set_minor_locator(NullLocator())
    _readable_log_ticks(ax)
    _legend(fig, [ax])
    return _save(fig, out, "matching-unexpected")


def _stream64_frame(data: Any, df_or_dir: Any) -> pandas.DataFrame | None:
    """The rows of stream64.csv from ``data`` (a DataFrame, a folder or a stream64.csv
    path), or when ``data`` is None from beside ``df_or_dir`` where that is a path: None
    when there is no such file there."""
    if data is None:
        if not isinstance(df_or_dir, (str, PathLike)):
            return None
        p = Path(df_or_dir)
        csv = (p if p.is_dir() else p.parent) / "stream64.csv"
        return read_stream64(csv) if csv.is_file() else None
    return _rows(data, "stream64", "stream64", read_stream64, STREAM64_COLUMNS)


def _stream64(rows: pandas.DataFrame, out: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    # The unit as configured; its one-factor variants are report.md's table.
    unit = rows[rows["engine"] == "microcoded"]
    if len(unit) > 0:
        rows = unit
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    absolute, per_item, relative = fig.subplots(1, 3)
    panels = (
        (absolute, "microseconds", "ideal_microseconds"),
        (per_item, "cycles_per_item", "ideal_cycles_per_item"),
        (relative, "relative_to_ideal", None),
    )
    lists = sorted({int(n) for n in rows["list_items"]})
    percents = sorted({int(p) for p in rows["percent_traversed"]})
    messages = "/".join(str(m) for m in sorted({int(m) for m in rows["messages"]}))
    for i, n in enumerate(lists):
        mine = rows[rows["list_items"] == n].sort_values("percent_traversed")
        xs = list(mine["percent_traversed"])
        colour = f"C{i % 10}"
        for ax, unit, ideal in panels:
            ax.plot(
                xs,
                list(mine[unit]),
                label=f"{n}-item list",
                color=colour,
                marker="o",
                markersize=3.5,
                linewidth=1.2,
            )
            if ideal is not None:
                ax.plot(xs, list(mine[ideal]), color=colour, linewidth=1.0, linestyle="--")
    absolute.set_yscale("log")
    _readable_log_ticks(absolute)
    relative.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    # Below the line, away from the unit's points, which lie above it.
    relative.text(
        percents[-1], 1.0, "ideal hardware ", fontsize=7, color="grey", va="top", ha="right"
    )
    labels = (
        (
            absolute,
            f"time for the {messages} messages (µs at {STREAM64_CLOCK_MHZ} MHz)",
            "absolute time",
        ),
        (per_item, "cycles per item traversed", "time per item traversed"),
        (relative, "time relative to ideal hardware", "relative to ideal hardware"),
    )
    for ax, ylabel, title in labels:
        ax.set_xlabel("list traversed to the match (%)")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(percents)
        ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    # The relative panel's floor is ideal hardware itself: start its axis at 0 so the
    # distance above the line at 1.0 reads as overhead.
    relative.set_ylim(bottom=0)
    key = [
        Line2D([], [], color="grey", marker="o", markersize=3.5, label="microcoded match unit"),
        Line2D(
            [],
            [],
            color="grey",
            linestyle="--",
            label="ideal hardware (8 cycles per header, 8 per item)",
        ),
    ]
    _legend(fig, [absolute], key)
    return _save(fig, out, "matching-stream64")


def matching(
    df_or_dir: Any,
    out_dir: str | PathLike[str],
    first_level: int = FIRST_LEVEL,
    stream64: Any = None,
) -> list[Path]:
    """Draws the matching experiment's plots of ``df_or_dir`` (the frame
    :func:`moped.experiments.matching` returns, a folder holding ``matching.csv`` or the
    file) into ``out_dir``: ``matching-preposted`` and ``matching-unload``,
    ``matching-unexpected`` when there are unexpected rows, and ``matching-stream64`` when
    there are stream64 rows, each as ``.png`` and ``.svg``. ``first_level`` places the mark
    of the two-level queue's first level. ``stream64`` gives the rows of ``stream64.csv``
    (a frame as :func:`moped.read_stream64` returns, a folder holding the file or the
    file); by default they are read from beside ``matching.csv`` when ``df_or_dir`` is a
    path and the file is there. Returns the paths written."""
    out = Path(_args.path("out_dir", out_dir))
    first_level = _args.integer("first_level", first_level, lo=1)
    df = _frame(df_or_dir)
    if df.empty:
        raise InputError("no matching rows to plot")
    streamed = _stream64_frame(stream64, df_or_dir)
    if streamed is not None and streamed.empty:
        raise InputError("no stream64 rows to plot")
    engines = _engines(df)
    out.mkdir(parents=True, exist_ok=True)
    paths = _preposted(df, engines, out, first_level)
    paths += _unload(df, engines, out, first_level)
    if ((df["benchmark"] == "unexpected") & (df["level"] == "cmp")).any():
        paths += _unexpected(df, engines, out)
    if streamed is not None:
        paths += _stream64(streamed, out)
    return paths
