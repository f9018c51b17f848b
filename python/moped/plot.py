"""The Figure-10 plot: each MOPED design's metrics normalised to the baseline.

One panel per metric (execution cycles, L1 misses, private L2 misses, global L2 misses);
in each, bars per design (BASEMOPED, OPTCOPY, OPTCACHE) per benchmark give
``design / baseline``, with the baseline itself as a line at 1.0, as in the paper's graphs
(below it: a reduction), and the 95 % interval as error bars where several seeds ran. The
benchmark groups (IMB with 16 kB messages, NPB, and IMB with 1 MB messages when present)
sit side by side in every panel.

Two variants of the same figure: ``wide`` (the four panels in a row, for a figure that
spans a two-column page) and ``2x2`` (two by two, for one column). The y axis of a panel
always shows the 1.0 line with room above it; a bar more than ``clip_above`` times its
baseline is cut at the top of the panel and its value printed there, so that one outlier
does not flatten the rest (only the tallest few are: where more rise that high, the axis
grows to show all but those). Where the results were run with scaled iteration counts or a
configuration other than the paper's Table 1, a caption under the panels says so. Drawn
with matplotlib's Agg canvas (no display, no global backend change), as PNG, SVG and PDF::

    moped.plot.figure10(moped.analysis.reductions_frame(df), "results/fig10")

or from a results folder: ``moped.plot.figure10("results/fig10", "results/fig10")``, or
``python -m moped.plot DIR``.

:func:`breakdown` draws where the ranks' cycles go (``breakdown.csv``, which ``moped
figure10`` writes beside ``reductions.json``): one panel per benchmark group, in each a bar
per design per benchmark, stacked by activity (compute, MPI calls, copies, list searches,
polling, reduction arithmetic, MOPED's ports and waits, idle), each part the activity's
cycles summed over the ranks over the baseline's cycles on the same benchmark. A bar thus
reaches the design's cycles over the baseline's, the baseline's own 1.0 (a dashed line)::

    moped.plot.breakdown("results/fig10/breakdown.csv", "results/fig10")

:func:`matching` (from :mod:`moped.plot_matching`) draws the matching experiment's plots,
:func:`scaling` (from :mod:`moped.plot_scaling`) how host time grows with the cores;
``python -m moped.plot DIR`` draws them too when DIR holds ``breakdown.csv``,
``matching.csv``, ``engines.csv`` or ``scaling.csv``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import InputError
from moped.config import SystemConfig, default_values, flatten, read_text
from moped.designs import DESIGNS, LABELS, MOPED_DESIGNS
from moped.plot_engines import engines
from moped.plot_matching import SAVE_FORMATS, _save, matching
from moped.plot_scaling import scaling

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

__all__ = [
    "ACTIVITY_STYLE",
    "BREAKDOWN_COLUMNS",
    "CLIP_ABOVE",
    "FORMATS",
    "VARIANTS",
    "breakdown",
    "draw_breakdown",
    "draw_figure10",
    "engines",
    "figure10",
    "figure10_notes",
    "main",
    "matching",
    "scaling",
]

#: The panels, in the paper's order, with their titles.
PANELS = (
    ("cycles", "execution cycles"),
    ("l1_misses", "L1 misses"),
    ("l2_misses_private", "private L2 misses"),
    ("l2_misses_global", "global L2 misses"),
)
#: The benchmark groups, left to right within a panel, with their labels under the axis.
GROUPS = {"imb": "IMB, 16 kB", "npb": "NPB", "imb-1m": "IMB, 1 MB"}
#: Benchmark order within a group (the paper's).
ORDER = ("PP", "XC", "BC", "RD", "GA", "AA", "SP", "CG", "MG", "FT", "BT")
#: Each MOPED design's label and colour, light to dark in the paper's order.
DESIGN_STYLE = {
    d: (LABELS[d], colour)
    for d, colour in zip(MOPED_DESIGNS, ("#9ecae1", "#3182bd", "#08306b"), strict=True)
}
#: The legend's entry for the line at 1.0.
BASELINE_LABEL = "baseline (= 1)"
#: A bar more than this many times its baseline is cut at the top of its panel, its
#: value printed: above it the axis would be spent on increases the reductions the figure
#: is about cannot be read against.
CLIP_ABOVE = 2.5
#: The most bars of a panel that are clipped: where more are above ``clip_above``, the
#: axis grows to show all but the tallest few, whose labels would crowd one another.
MAX_CLIPPED = 3
#: The formats written by default.
FORMATS: tuple[str, ...] = tuple(SAVE_FORMATS)


@dataclass(frozen=True)
class Variant:
    """One layout of the figure: the file stem, the size in inches and the panel grid."""

    stem: str
    size: tuple[float, float]
    grid: tuple[int, int]


#: The layouts, sized for a page's full width (7 in) and for one of its columns (3.4 in),
#: so that at print size the text is the 6 to 7.5 pt it is drawn at.
VARIANTS = {
    "wide": Variant("figure10", (7.0, 2.35), (1, 4)),
    "2x2": Variant("figure10-2x2", (3.4, 3.45), (2, 2)),
}

# Font sizes in points, for the figure at its own size.
_TITLE, _TEXT, _TICKS, _CAPTION, _SMALL = 7.5, 7.0, 6.5, 6.0, 5.5
#: Where a clipped bar's label starts below the top of its panel, in points: low enough
#: that the bar shows above it too, running into the frame, so that it reads as cut.
_LABEL_DROP = 4.5
#: The height of a row of clipped bars' labels, in points.
_LABEL_ROW = _SMALL + 2.5
#: The room left above the tallest unclipped bar, as a share of its height, so that the
#: line at 1.0 never lies on the frame.
_HEADROOM = 0.1


def _number(v: Any) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError) as e:
        raise InputError(f"reductions: {v!r} is not a number") from e
    return f if math.isfinite(f) else None


def _source(reductions: Any) -> tuple[Any, Path | None]:
    """``reductions`` read where it is a path (of a results folder or of its
    ``reductions.json``), with the folder it lies in; else as given, with no folder."""
    if not isinstance(reductions, (str, PathLike)):
        return reductions, None
    path = Path(fspath(reductions))
    if path.is_dir():
        path = path / "reductions.json"
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), path.parent
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read: {e}") from e


def _load(reductions: Any, notes: Sequence[str] | None) -> tuple[Any, list[str]]:
    """``reductions`` read (see :func:`_source`), and ``notes`` checked, or where None,
    those of the folder it was read from."""
    data, folder = _source(reductions)
    if notes is None:
        return data, figure10_notes(folder) if folder is not None else []
    if isinstance(notes, str) or not isinstance(notes, Iterable):
        raise TypeError(f"notes must be a sequence of str, not {type(notes).__name__}")
    return data, [_args.text("notes", n) for n in notes]


def _rows(reductions: Any) -> list[dict[str, Any]]:
    """Reduction rows as dicts from a DataFrame or dicts."""
    if hasattr(reductions, "to_dict") and hasattr(reductions, "columns"):
        reductions = reductions.to_dict("records")
    if isinstance(reductions, (bytes, str, Mapping)) or not isinstance(reductions, Iterable):
        raise TypeError(
            "reductions must be a DataFrame, a list of dicts, a results folder or its "
            f"reductions.json path, not {type(reductions).__name__}"
        )
    out = []
    for r in reductions:
        if not isinstance(r, Mapping):
            raise TypeError(f"reductions: a row must be a mapping, not {type(r).__name__}")
        missing = [k for k in ("group", "benchmark", "design", "metric") if k not in r]
        if missing:
            raise InputError(f"reduction row {dict(r)!r} lacks {', '.join(missing)}")
        out.append(
            {
                "group": str(r["group"]),
                "benchmark": str(r["benchmark"]),
                "design": str(r["design"]),
                "metric": str(r["metric"]),
                "ratio": _number(r.get("ratio")),
                "ci_low": _number(r.get("ci_low")),
                "ci_high": _number(r.get("ci_high")),
            }
        )
    return out


def _order(names: Iterable[str], order: Sequence[str]) -> list[str]:
    known = [n for n in order if n in set(names)]
    return known + sorted(set(names) - set(order))


def _setting(value: Any) -> str:
    """A configuration value as ``--set`` takes it."""
    if value is None:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value)


#: How report.md states the iteration scale (``src/api/figure10.rs``, ``notes``).
_SCALED = re.compile(r"Iteration counts scaled by (\S+) relative to the workload specs")
#: The changed configuration keys a caption names before it refers to config.toml.
_MAX_CHANGES = 6


def figure10_notes(folder: str | PathLike[str]) -> list[str]:
    """The caption of the Figure-10 plot of a results folder, as sentences, from what the
    folder records: the iteration scale (``report.md``), each configuration key whose value
    in ``config.toml`` is not the paper's Table 1 default, and the seeds behind the error
    bars (``run.json``). Files the folder lacks are passed over; a folder run as the paper
    ran it, on one seed, has none."""
    folder = Path(_args.path("folder", folder))
    notes = []
    report = folder / "report.md"
    if report.is_file():
        scaled = _SCALED.search(read_text(fspath(report), InputError))
        if scaled:
            notes.append(f"Iteration counts scaled by {scaled.group(1)}.")
    config = folder / "config.toml"
    if config.is_file():
        text = read_text(fspath(config), InputError)
        used = flatten(SystemConfig.from_toml(text, file=fspath(config)).to_dict())
        table1 = default_values()
        changed = [
            f"{k}={_setting(used.get(k))}"
            for k in sorted(used.keys() | table1.keys())
            if used.get(k) != table1.get(k)
        ]
        if len(changed) > _MAX_CHANGES:
            rest = len(changed) - _MAX_CHANGES + 1
            changed[_MAX_CHANGES - 1 :] = [f"{rest} more (config.toml)"]
        if changed:
            notes.append(f"Changed from Table 1: {', '.join(changed)}.")
    run = folder / "run.json"
    if run.is_file():
        try:
            seeds = json.loads(read_text(fspath(run), InputError)).get("seed")
        except ValueError as e:
            raise InputError(f"{run}: cannot read: {e}") from e
        if isinstance(seeds, list) and len(seeds) > 1:
            listed = ", ".join(str(s) for s in seeds)
            notes.append(f"Mean of seeds {listed}; error bars: 95 % interval.")
    return notes


def _slots(
    rows: list[dict[str, Any]],
) -> tuple[list[tuple[float, str, str]], list[tuple[str, float, float]]]:
    """Each bar group's x position, group and benchmark, and each benchmark group's label
    and first and last x: the groups left to right, a gap between them."""
    groups = [g for g in GROUPS if any(r["group"] == g for r in rows)]
    groups += sorted({r["group"] for r in rows} - set(GROUPS))
    slots: list[tuple[float, str, str]] = []
    spans: list[tuple[str, float, float]] = []
    x = 0.0
    for g in groups:
        if slots:
            x += 0.6
        start = x
        for b in _order({r["benchmark"] for r in rows if r["group"] == g}, ORDER):
            slots.append((x, g, b))
            x += 1.0
        spans.append((GROUPS.get(g, g), start, x - 1.0))
    return slots, spans


def _cut(ratios: Iterable[float | None], clip_above: float) -> float:
    """The height above which a panel's bars are clipped: ``clip_above``, or where more
    than :data:`MAX_CLIPPED` bars rise above it, the next one's."""
    tall = sorted((v for v in ratios if v is not None and v > clip_above), reverse=True)
    return tall[MAX_CLIPPED] if len(tall) > MAX_CLIPPED else clip_above


def _clipped_label(v: float) -> str:
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


def _legend(fig: Figure, handles: list[Any], ncols: int) -> None:
    """The figure's legend, in a row (or rows of ``ncols``) above its panels."""
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncols=ncols,
        fontsize=_TEXT,
        frameon=False,
        handlelength=1.4,
        handletextpad=0.4,
        columnspacing=1.0,
        borderaxespad=0.2,
    )


def _clip_mark(ax: Axes, x: float, value: float) -> Annotation:
    """The printed value of a bar cut at the top of its panel, just under the top."""
    return ax.annotate(
        _clipped_label(value),
        xy=(x, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(0, -_LABEL_DROP),
        textcoords="offset points",
        ha="center",
        va="top",
        fontsize=_SMALL,
        zorder=5,
        bbox={"boxstyle": "square,pad=0.12", "fc": "white", "ec": "none"},
    )


def _panel(
    ax: Axes,
    by_key: dict[tuple[str, str, str, str], dict[str, Any]],
    slots: list[tuple[float, str, str]],
    designs: list[str],
    metric: str,
    cut: float,
) -> tuple[float, list[Annotation]]:
    """Draws one metric's bars, those above ``cut`` labelled with their value; returns the
    height its tallest unclipped bar (or the 1.0 line) reaches and the labels."""
    width = 0.8 / max(len(designs), 1)
    ceiling = 1.0
    labels = []
    for k, d in enumerate(designs):
        label, colour = DESIGN_STYLE.get(d, (d, None))
        xs: list[float] = []
        hs: list[float] = []
        lo: list[float] = []
        hi: list[float] = []
        for sx, g, b in slots:
            r = by_key.get((g, b, d, metric))
            bx = sx + (k - (len(designs) - 1) / 2) * width
            if r is None:
                continue
            ratio = r["ratio"]
            if ratio is None:
                # Undefined (a zero baseline): marked, not drawn.
                ax.text(bx, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=_SMALL)
                continue
            xs.append(bx)
            hs.append(ratio)
            # The interval is the reduction's (1 - ratio): its ends swap.
            if r["ci_low"] is not None and r["ci_high"] is not None:
                lo.append(max(ratio - (1.0 - r["ci_high"]), 0.0))
                hi.append(max((1.0 - r["ci_low"]) - ratio, 0.0))
            else:
                lo.append(0.0)
                hi.append(0.0)
            if ratio > cut:
                labels.append(_clip_mark(ax, bx, ratio))
            else:
                ceiling = max(ceiling, ratio + hi[-1])
        has_ci = any(v > 0 for v in lo + hi)
        ax.bar(
            xs,
            hs,
            width,
            label=label,
            color=colour,
            yerr=[lo, hi] if has_ci else None,
            capsize=1.5 if has_ci else 0,
            error_kw={"linewidth": 0.6, "capthick": 0.6},
            zorder=2,
        )
    return ceiling, labels


def _stack(labels: list[Annotation]) -> int:
    """Moves clipped bars' labels that would overlap their left neighbour's down a row;
    returns the rows used."""
    ends: list[float] = []
    for label in sorted(labels, key=lambda t: t.xy[0]):
        box = label.get_window_extent()
        row = next((i for i, end in enumerate(ends) if box.x0 > end), len(ends))
        if row == len(ends):
            ends.append(box.x1)
        ends[row] = box.x1
        label.xyann = (0, -_LABEL_DROP - row * _LABEL_ROW)
    return len(ends)


def draw_figure10(
    reductions: Any,
    variant: str = "wide",
    *,
    notes: Sequence[str] | None = None,
    clip_above: float = CLIP_ABOVE,
) -> Figure:
    """The Figure-10 plot of ``reductions`` (a DataFrame from
    :func:`moped.analysis.reductions_frame`, its rows as dicts, or a results folder or its
    ``reductions.json``) as a matplotlib Figure in layout ``variant`` (a key of
    :data:`VARIANTS`), with ``notes`` as its caption: by default :func:`figure10_notes` of
    the folder ``reductions`` was read from, none for a frame or rows. See the module's
    description."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    variant = _args.text("variant", variant)
    if variant not in VARIANTS:
        raise InputError(f"variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    clip_above = _args.number("clip_above", clip_above)
    if not clip_above > 1.0:
        raise InputError(f"clip_above = {clip_above}: expected a number above 1")
    data, notes = _load(reductions, notes)
    rows = _rows(data)
    if not rows:
        raise InputError("no reductions to plot")
    layout = VARIANTS[variant]
    by_key = {(r["group"], r["benchmark"], r["design"], r["metric"]): r for r in rows}
    designs = _order({r["design"] for r in rows}, tuple(DESIGN_STYLE))
    slots, spans = _slots(rows)

    fig = Figure(figsize=layout.size, layout="constrained")
    FigureCanvasAgg(fig)
    n_rows, n_cols = layout.grid
    axes = list(fig.subplots(n_rows, n_cols, sharex=True, squeeze=False).flat)
    ceilings, labels = [], []
    for i, (ax, (metric, title)) in enumerate(zip(axes, PANELS, strict=True)):
        cut = _cut((r["ratio"] for r in rows if r["metric"] == metric), clip_above)
        ceiling, clipped = _panel(ax, by_key, slots, designs, metric, cut)
        ceilings.append(ceiling)
        labels.append(clipped)
        ax.axhline(1.0, color="black", linewidth=0.8, zorder=3, label=BASELINE_LABEL)
        for a, b in zip(spans[:-1], spans[1:], strict=True):
            ax.axvline((a[2] + b[1]) / 2, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xticks([s[0] for s in slots], [s[2] for s in slots])
        ax.set_xlim(slots[0][0] - 0.6, slots[-1][0] + 0.6)
        ax.set_title(title, fontsize=_TITLE, pad=3)
        ax.tick_params(labelsize=_TICKS, length=2, pad=1.5, width=0.6)
        # Upright, two benchmark names would need more than a bar group's width.
        ax.tick_params(axis="x", length=0, rotation=90)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.grid(True, linewidth=0.4, color="#dddddd")
        ax.set_axisbelow(True)
        for side in ax.spines.values():
            side.set_linewidth(0.6)
        if i // n_cols == n_rows - 1:
            # The benchmark groups' names, under their benchmarks' names.
            for name, first, last in spans:
                ax.annotate(
                    name,
                    xy=((first + last) / 2, 0),
                    xycoords=("data", "axes fraction"),
                    # Below the benchmarks' names, upright two letters' width.
                    xytext=(0, -1.75 * _TICKS - 3),
                    textcoords="offset points",
                    ha="center",
                    va="top",
                    fontsize=_TICKS,
                )
        ax.set_ylim(0.0, ceilings[-1] * (1 + _HEADROOM))

    # The line at 1.0 first, then the designs' bars.
    handles, _ = axes[0].get_legend_handles_labels()
    _legend(fig, handles, len(handles))
    fig.supylabel("design / baseline", fontsize=_TEXT)
    if notes:
        # Wrapped to the figure's width, at about half an em a character.
        chars = int(layout.size[0] * 72 / (0.55 * _CAPTION))
        fig.supxlabel(textwrap.fill(" ".join(notes), chars), fontsize=_CAPTION, x=0.01, ha="left")
    # Clipped bars' labels sit in a band at the top of their panel: once the layout has
    # placed the panels, the labels that collide are stacked, and the band widened to
    # hold them above the tallest unclipped bar.
    if any(labels):
        fig.draw_without_rendering()
        for ax, ceiling, clipped in zip(axes, ceilings, labels, strict=True):
            if not clipped:
                continue
            band = (_LABEL_DROP + _stack(clipped) * _LABEL_ROW + 1) / 72 * fig.dpi
            share = min(band / ax.bbox.height, 0.5)
            ax.set_ylim(0.0, ceiling * (1 + _HEADROOM) / (1 - share))
    return fig


def figure10(
    reductions: Any,
    out_dir: str | PathLike[str],
    *,
    variants: Iterable[str] = tuple(VARIANTS),
    formats: Iterable[str] = FORMATS,
    notes: Sequence[str] | None = None,
    clip_above: float = CLIP_ABOVE,
) -> list[Path]:
    """Draws the Figure-10 plot of ``reductions`` (a DataFrame from
    :func:`moped.analysis.reductions_frame`, its rows as dicts, or a results folder or its
    ``reductions.json``) into ``out_dir``, in each layout of ``variants`` (``wide`` as
    ``figure10.*``, ``2x2`` as ``figure10-2x2.*``) and each of ``formats`` (``png``,
    ``svg``, ``pdf``); returns the paths written. ``notes``, the caption, are by default
    :func:`figure10_notes` of the folder ``reductions`` was read from (none for a frame)."""
    out_dir = _args.path("out_dir", out_dir)
    # Read once, for every layout.
    data, notes = _load(reductions, notes)
    if isinstance(variants, str) or not isinstance(variants, Iterable):
        raise TypeError(f"variants must be an iterable of str, not {type(variants).__name__}")
    formats = _formats(formats)
    figures = [
        (draw_figure10(data, v, notes=notes, clip_above=clip_above), VARIANTS[v].stem)
        for v in variants
    ]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fig, stem in figures:
        paths += _save_paper(fig, out, stem, formats)
    return paths


def _save_paper(fig: Figure, out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    """Writes a paper figure as ``out/stem.EXT`` for each of ``formats``, at 300 dpi; its
    SVG's ids hashed with a fixed salt (not a random one), so that a redrawn figure is byte
    for byte the same in every format."""
    from matplotlib import rc_context

    with rc_context({"svg.hashsalt": "moped"}):
        return _save(fig, out, stem, formats, dpi=300)


def _formats(formats: Iterable[str]) -> list[str]:
    """``formats`` checked to be names of :data:`FORMATS`."""
    if isinstance(formats, str) or not isinstance(formats, Iterable):
        raise TypeError(f"formats must be an iterable of str, not {type(formats).__name__}")
    out = [_args.text("formats", f) for f in formats]
    unknown = [f for f in out if f not in SAVE_FORMATS]
    if unknown:
        raise InputError(f"formats {unknown}: expected some of {', '.join(SAVE_FORMATS)}")
    return out


#: The columns of ``breakdown.csv``, in order (the Rust side's
#: ``analysis::breakdown::CSV_HEADER``).
BREAKDOWN_COLUMNS = (
    "group",
    "benchmark",
    "design",
    "activity",
    "rank_cycles",
    "share",
    "of_baseline",
)
#: Each activity of ``breakdown.csv`` (``mpi.cycles.<activity>``), in the order its parts
#: are stacked from the bottom, with its legend entry and colour: the program's own work
#: and the idle tail in greys, MOPED's ports and waits in greens, the software path's MPI
#: work in the colours between.
ACTIVITY_STYLE = {
    "compute": ("compute", "#525252"),
    "mpi_call": ("MPI calls", "#6baed6"),
    "mpi_copy": ("copies", "#d62728"),
    "mpi_search": ("list searches", "#ff7f0e"),
    "mpi_poll": ("polling", "#9467bd"),
    "mpi_reduce": ("reduction arithmetic", "#8c564b"),
    "moped_port": ("MOPED ports", "#2ca02c"),
    "moped_wait": ("MOPED waits", "#a1d99b"),
    "idle": ("idle", "#d9d9d9"),
}
#: Each design's label under its bar in the breakdown figure, short for a bar's width;
#: the caption spells them out.
SHORT_LABELS = dict(zip(DESIGNS, ("base", "BM", "OC", "OCa"), strict=True))
#: The breakdown figure's size in inches: a page's full width, for up to 12 benchmarks;
#: wider for more, :data:`_BREAKDOWN_CLUSTER` a benchmark, so that the labels under its
#: bars stay apart.
BREAKDOWN_SIZE = (7.0, 2.9)
#: The width in inches of a benchmark's cluster of bars where the figure grows with them.
_BREAKDOWN_CLUSTER = 0.5
#: The legend's entry for the breakdown figure's dashed line at 1.0.
BREAKDOWN_BASELINE_LABEL = "baseline's cycles (= 1)"


@dataclass(frozen=True)
class _Part:
    """One line of ``breakdown.csv``: an activity's part of a (benchmark, design) bar,
    ``of_baseline`` None where there was no baseline run."""

    group: str
    benchmark: str
    design: str
    activity: str
    of_baseline: float | None


def _nonnegative(value: str, column: str, where: str, optional: bool = False) -> float | None:
    """A cell of ``breakdown.csv`` as a finite number not below 0 (None for an empty
    ``optional`` one); else InputError naming ``where`` (the file and line)."""
    if optional and value == "":
        return None
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v >= 0):
        raise InputError(f"{where}: {column} {value!r} is not a number (of 0 or more)")
    return v


def _breakdown_part(cells: dict[str, str], where: str) -> _Part:
    """A line of ``breakdown.csv``, its cells by column, checked; ``where`` names it."""
    for c in ("group", "benchmark", "design"):
        if not cells[c]:
            raise InputError(f"{where}: {c} is empty")
    activity = cells["activity"]
    if activity not in ACTIVITY_STYLE:
        raise InputError(
            f"{where}: unknown activity {activity!r} (expected one of {', '.join(ACTIVITY_STYLE)})"
        )
    _nonnegative(cells["rank_cycles"], "rank_cycles", where)
    _nonnegative(cells["share"], "share", where)
    return _Part(
        cells["group"],
        cells["benchmark"],
        cells["design"],
        activity,
        _nonnegative(cells["of_baseline"], "of_baseline", where, optional=True),
    )


def _read_breakdown(csv_path: str | PathLike[str]) -> list[_Part]:
    """The lines of ``breakdown.csv`` (the file, or a folder holding it), checked: every
    column of :data:`BREAKDOWN_COLUMNS`, a known activity, numbers where numbers go, each
    (group, benchmark, design, activity) once. A missing or malformed file raises
    :class:`moped.InputError` naming the file and the line."""
    p = Path(_args.path("csv_path", csv_path))
    path = p / "breakdown.csv" if p.is_dir() else p
    if not path.is_file():
        raise InputError(f"{fspath(path)}: no such file (write it with moped figure10)")
    parts: list[_Part] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f)
            try:
                header = next(reader, None)
                if header is None:
                    raise InputError(
                        f"{fspath(path)}: is empty (expected the header "
                        f"{','.join(BREAKDOWN_COLUMNS)})"
                    )
                missing = [c for c in BREAKDOWN_COLUMNS if c not in header]
                if missing:
                    raise InputError(
                        f"{fspath(path)}, line 1: lacks the columns {', '.join(missing)}"
                    )
                index = {c: header.index(c) for c in BREAKDOWN_COLUMNS}
                for fields in reader:
                    where = f"{fspath(path)}, line {reader.line_num}"
                    if not fields:
                        continue
                    if len(fields) != len(header):
                        raise InputError(
                            f"{where}: {len(fields)} fields, expected {len(header)} "
                            f"({','.join(header)})"
                        )
                    part = _breakdown_part({c: fields[i] for c, i in index.items()}, where)
                    key = (part.group, part.benchmark, part.design, part.activity)
                    if key in seen:
                        raise InputError(
                            f"{where}: {', '.join(key)} again (first on line {seen[key]})"
                        )
                    seen[key] = reader.line_num
                    parts.append(part)
            except csv.Error as e:
                raise InputError(f"{fspath(path)}, line {reader.line_num}: {e}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{fspath(path)}: cannot read: {e}") from e
    if not parts:
        raise InputError(f"{fspath(path)}: no breakdown rows to plot")
    return parts


def _benchmark_names(ax: Axes, names: list[Annotation]) -> None:
    """Moves the benchmarks' names just below the designs' labels under their bars."""
    if not names:
        return
    bottom = min(
        (t.get_window_extent().y0 for t in ax.get_xticklabels() if t.get_text()),
        default=ax.bbox.y0,
    )
    drop = (ax.bbox.y0 - bottom) * 72 / ax.figure.dpi + 2.0
    for name in names:
        name.xyann = (0, -drop)


def draw_breakdown(csv_path: str | PathLike[str], *, clip_above: float = CLIP_ABOVE) -> Figure:
    """The breakdown figure of ``breakdown.csv`` (the file, or a folder holding it) as a
    matplotlib Figure: one panel per benchmark group (IMB with 16 kB messages, NPB, IMB
    with 1 MB messages, then any other in the file's order), in each a cluster of bars per
    benchmark, a bar per design (labelled as :data:`SHORT_LABELS`), stacked by activity in
    the order and colours of :data:`ACTIVITY_STYLE`, each part its ``of_baseline``. A bar
    more than ``clip_above`` times the baseline is cut at the top and its height printed,
    as in :func:`draw_figure10`; a bar without a baseline run is marked n/a."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    clip_above = _args.number("clip_above", clip_above)
    if not clip_above > 1.0:
        raise InputError(f"clip_above = {clip_above}: expected a number above 1")
    parts = _read_breakdown(csv_path)
    bars: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for part in parts:
        bars.setdefault((part.group, part.benchmark, part.design), {})[part.activity] = (
            part.of_baseline
        )
    # A bar's height; None where a part lacks its baseline.
    totals: dict[tuple[str, str, str], float | None] = {
        key: None if None in bar.values() else sum(v or 0.0 for v in bar.values())
        for key, bar in bars.items()
    }
    present = list(dict.fromkeys(part.group for part in parts))
    groups = [g for g in GROUPS if g in present] + [g for g in present if g not in GROUPS]
    designs = _order({part.design for part in parts}, DESIGNS)
    benches = {g: _order({b for gb, b, _ in bars if gb == g}, ORDER) for g in groups}
    cut = _cut(totals.values(), clip_above)

    clusters = sum(len(b) for b in benches.values())
    size = (max(BREAKDOWN_SIZE[0], 1.0 + _BREAKDOWN_CLUSTER * clusters), BREAKDOWN_SIZE[1])
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(
        fig.subplots(
            1,
            len(groups),
            sharey=True,
            squeeze=False,
            gridspec_kw={"width_ratios": [len(benches[g]) for g in groups]},
        ).flat
    )
    slot = 0.8 / len(designs)
    # A thin gap between neighbouring bars, which may end in the same colour.
    width = 0.88 * slot
    ceiling = 1.0
    clipped: list[list[Annotation]] = []
    names: list[list[Annotation]] = []
    for ax, g in zip(axes, groups, strict=True):
        xs: list[float] = []
        heights: dict[str, list[float]] = {a: [] for a in ACTIVITY_STYLE}
        ticks: list[tuple[float, str]] = []
        labels: list[Annotation] = []
        for i, b in enumerate(benches[g]):
            for k, d in enumerate(designs):
                bar = bars.get((g, b, d))
                if bar is None:
                    continue
                x = i + (k - (len(designs) - 1) / 2) * slot
                ticks.append((x, SHORT_LABELS.get(d, d)))
                total = totals[(g, b, d)]
                if total is None:
                    # No baseline to divide by: marked, not drawn.
                    ax.text(x, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=_SMALL)
                    continue
                xs.append(x)
                for a, hs in heights.items():
                    hs.append(bar.get(a) or 0.0)
                if total > cut:
                    labels.append(_clip_mark(ax, x, total))
                else:
                    ceiling = max(ceiling, total)
        bottoms = [0.0] * len(xs)
        for a, (_, colour) in ACTIVITY_STYLE.items():
            ax.bar(xs, heights[a], width, bottom=bottoms, color=colour, linewidth=0, zorder=2)
            bottoms = [lo + h for lo, h in zip(bottoms, heights[a], strict=True)]
        clipped.append(labels)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", zorder=3)
        ax.set_xticks([x for x, _ in ticks], [t for _, t in ticks])
        ax.set_xlim(-0.55, len(benches[g]) - 0.45)
        ax.set_title(GROUPS.get(g, g), fontsize=_TITLE, pad=3)
        ax.tick_params(labelsize=_TICKS, length=2, pad=1.5, width=0.6)
        ax.tick_params(axis="x", length=0, rotation=90, labelsize=_SMALL)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.grid(True, linewidth=0.4, color="#dddddd")
        ax.set_axisbelow(True)
        for side in ax.spines.values():
            side.set_linewidth(0.6)
        # The benchmarks' names under their bars' labels (placed once those are drawn).
        names.append(
            [
                ax.annotate(
                    b,
                    xy=(i, 0),
                    xycoords=("data", "axes fraction"),
                    xytext=(0, -3.5 * _SMALL),
                    textcoords="offset points",
                    ha="center",
                    va="top",
                    fontsize=_TICKS,
                )
                for i, b in enumerate(benches[g])
            ]
        )
    axes[0].set_ylim(0.0, ceiling * (1 + _HEADROOM))

    handles: list[Any] = [
        Patch(facecolor=colour, label=label) for label, colour in ACTIVITY_STYLE.values()
    ]
    handles.append(
        Line2D([], [], color="black", linewidth=0.8, linestyle="--", label=BREAKDOWN_BASELINE_LABEL)
    )
    _legend(fig, handles, 5)
    fig.supylabel("cycles / baseline's", fontsize=_TEXT)
    key = ", ".join(f"{SHORT_LABELS.get(d, d)} = {LABELS.get(d, d)}" for d in designs)
    caption = f"Bars per benchmark: {key}; each split by where the ranks' cycles went."
    # Wrapped to the figure's width, at about half an em a character.
    chars = int(size[0] * 72 / (0.55 * _CAPTION))
    fig.supxlabel(textwrap.fill(caption, chars), fontsize=_CAPTION, x=0.01, ha="left")
    # Once the layout has placed the panels: the benchmarks' names below the designs'
    # labels, and clipped bars' labels stacked in a band above the tallest whole bar.
    fig.draw_without_rendering()
    for ax, named in zip(axes, names, strict=True):
        _benchmark_names(ax, named)
    if any(clipped):
        share = 0.0
        for ax, labels in zip(axes, clipped, strict=True):
            if labels:
                band = (_LABEL_DROP + _stack(labels) * _LABEL_ROW + 1) / 72 * fig.dpi
                share = max(share, min(band / ax.bbox.height, 0.5))
        axes[0].set_ylim(0.0, ceiling * (1 + _HEADROOM) / (1 - share))
    return fig


def breakdown(
    csv_path: str | PathLike[str],
    out_dir: str | PathLike[str],
    formats: Iterable[str] = FORMATS,
    *,
    clip_above: float = CLIP_ABOVE,
) -> list[Path]:
    """Draws the breakdown figure of ``breakdown.csv`` (the file, or a folder holding it;
    see :func:`draw_breakdown`) into ``out_dir`` as ``breakdown.*``, in each of
    ``formats`` (``png``, ``svg``, ``pdf``); returns the paths written. A malformed file
    raises :class:`moped.InputError` naming the file and the line."""
    out_dir = _args.path("out_dir", out_dir)
    formats = _formats(formats)
    fig = draw_breakdown(csv_path, clip_above=clip_above)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return _save_paper(fig, out, "breakdown", formats)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m moped.plot",
        description=(
            "Draws the plots of a results folder: Figure 10 from reductions.json and the "
            "breakdown of the ranks' cycles from breakdown.csv (moped figure10), "
            "matching-* from matching.csv (moped matching), engines-* from engines.csv "
            "(moped engines), scaling from scaling.csv (moped bench --scaling --out "
            "DIR/scaling.csv); every one the folder holds."
        ),
    )
    p.add_argument("folder", metavar="DIR", type=Path, help="the results folder")
    p.add_argument(
        "-o",
        "--out",
        metavar="OUT",
        type=Path,
        help="the folder to write the plots into (default: DIR)",
    )
    p.add_argument(
        "-f",
        "--format",
        dest="formats",
        action="append",
        choices=FORMATS,
        help="Figure 10's and the breakdown's file format, repeatable (default: all "
        "three); the other plots are written as PNG and SVG",
    )
    p.add_argument(
        "--variant",
        dest="variants",
        action="append",
        choices=tuple(VARIANTS),
        help="Figure 10's layout, repeatable (default: both): wide, the four panels in a "
        "row for a page's width (figure10.*), or 2x2 for one column (figure10-2x2.*)",
    )
    p.add_argument(
        "--clip-above",
        metavar="RATIO",
        type=float,
        default=CLIP_ABOVE,
        help="cut Figure 10's and the breakdown's bars higher than RATIO times the "
        f"baseline at the top of their panel and print their values (default: {CLIP_ABOVE})",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m moped.plot DIR``: draws DIR/reductions.json, DIR/breakdown.csv,
    DIR/matching.csv, DIR/engines.csv and DIR/scaling.csv, whichever DIR holds, into DIR
    (or ``--out``)."""
    args = _parser().parse_args(argv)
    folder: Path = args.folder
    out: Path = args.out if args.out is not None else folder
    reductions, parts = folder / "reductions.json", folder / "breakdown.csv"
    rows, engine_rows = folder / "matching.csv", folder / "engines.csv"
    scale_rows = folder / "scaling.csv"
    if not any(f.is_file() for f in (reductions, parts, rows, engine_rows, scale_rows)):
        print(
            f"{folder}: holds neither reductions.json (moped figure10, or "
            "moped.analysis.write_tables), breakdown.csv (moped figure10), matching.csv "
            "(moped matching), engines.csv (moped engines) nor scaling.csv (moped bench "
            "--scaling)",
            file=sys.stderr,
        )
        return 1
    formats = list(dict.fromkeys(args.formats or FORMATS))
    paths = []
    try:
        if reductions.is_file():
            paths += figure10(
                reductions,
                out,
                variants=list(dict.fromkeys(args.variants or VARIANTS)),
                formats=formats,
                clip_above=args.clip_above,
            )
        if parts.is_file():
            paths += breakdown(parts, out, formats, clip_above=args.clip_above)
        if rows.is_file():
            paths += matching(rows, out)
        if engine_rows.is_file():
            paths += engines(engine_rows, out)
        if scale_rows.is_file():
            paths += scaling(scale_rows, out)
    except _core.MopedError as e:
        print(f"python -m moped.plot: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
