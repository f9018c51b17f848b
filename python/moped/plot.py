"""The Figure-10 plot: each MOPED design's metrics normalised to the baseline.

One panel per metric (execution cycles, L1 misses, private L2 misses, global L2 misses);
in each, bars per design (BASEMOPED, OPTCOPY, OPTCACHE) per benchmark give
``design / baseline``, with a line at 1.0 as in the paper's graphs (below it: a reduction)
and the 95 % interval as error bars where several seeds ran. The 16 kB runs (IMB, then
NPB) form the first row, the 1 MB runs, when present, a second. Drawn with matplotlib's
Agg canvas (no display, no global backend change)::

    moped.plot.figure10(moped.analysis.reductions_frame(df), "results/fig10")

or from a folder holding ``reductions.json``: ``python -m moped.plot DIR``.

:func:`matching` (from :mod:`moped.plot_matching`) draws the matching experiment's plots,
:func:`scaling` (from :mod:`moped.plot_scaling`) how host time grows with the cores;
``python -m moped.plot DIR`` draws them too when DIR holds ``matching.csv``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike, fspath
from pathlib import Path
from typing import Any

from moped import _args
from moped._core import InputError
from moped.designs import LABELS, MOPED_DESIGNS
from moped.plot_engines import engines
from moped.plot_matching import matching
from moped.plot_scaling import scaling

__all__ = ["engines", "figure10", "main", "matching", "scaling"]

#: The panels, in the paper's order, with their titles.
PANELS = (
    ("cycles", "execution cycles"),
    ("l1_misses", "L1 misses"),
    ("l2_misses_private", "private L2 misses"),
    ("l2_misses_global", "global L2 misses"),
)
#: Rows of panels: a title and the groups drawn in it, left to right.
ROWS = (("16 kB messages", ("imb", "npb")), ("1 MB messages", ("imb-1m",)))
#: Benchmark order within a group (the paper's).
ORDER = ("PP", "XC", "BC", "RD", "GA", "AA", "SP", "CG", "MG", "FT", "BT")
#: Each MOPED design's label and colour, light to dark in the paper's order.
DESIGN_STYLE = {
    d: (LABELS[d], colour)
    for d, colour in zip(MOPED_DESIGNS, ("#9ecae1", "#3182bd", "#08306b"), strict=True)
}
GROUP_LABEL = {"imb": "IMB", "npb": "NPB", "imb-1m": "IMB 1 MB"}


def _number(v: Any) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError) as e:
        raise InputError(f"reductions: {v!r} is not a number") from e
    return f if math.isfinite(f) else None


def _rows(reductions: Any) -> list[dict[str, Any]]:
    """Reduction rows as dicts from a DataFrame, dicts, or a reductions.json path."""
    if isinstance(reductions, (str, PathLike)):
        path = fspath(reductions)
        try:
            with open(path, encoding="utf-8") as f:
                reductions = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: cannot read: {e}") from e
    if hasattr(reductions, "to_dict") and hasattr(reductions, "columns"):
        reductions = reductions.to_dict("records")
    if isinstance(reductions, (bytes, Mapping)) or not isinstance(reductions, Iterable):
        raise TypeError(
            "reductions must be a DataFrame, a list of dicts or a reductions.json path, "
            f"not {type(reductions).__name__}"
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


def figure10(reductions: Any, out_dir: str | PathLike[str]) -> list[Path]:
    """Draws the Figure-10 plot of ``reductions`` (a DataFrame from
    :func:`moped.analysis.reductions_frame`, its rows as dicts, or a ``reductions.json``
    path) into ``out_dir`` as ``figure10.png`` and ``figure10.svg``; returns both paths."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out_dir = _args.path("out_dir", out_dir)
    rows = _rows(reductions)
    by_key = {(r["group"], r["benchmark"], r["design"], r["metric"]): r for r in rows}
    present_rows = [
        (title, groups) for title, groups in ROWS if any(r["group"] in groups for r in rows)
    ]
    others = sorted({r["group"] for r in rows} - {g for _, gs in ROWS for g in gs})
    present_rows += [(g, (g,)) for g in others]
    if not present_rows:
        raise InputError("no reductions to plot")
    designs = _order({r["design"] for r in rows}, tuple(DESIGN_STYLE))

    fig = Figure(figsize=(4.4 * len(PANELS), 3.4 * len(present_rows) + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(present_rows), len(PANELS), squeeze=False)
    width = 0.8 / max(len(designs), 1)
    # Every row spans as many benchmark slots as the widest, so bars have one width.
    widest = max(
        sum(len({r["benchmark"] for r in rows if r["group"] == g}) for g in groups)
        + 0.6 * (sum(1 for g in groups if any(r["group"] == g for r in rows)) - 1)
        for _, groups in present_rows
    )
    for i, (row_title, groups) in enumerate(present_rows):
        slots: list[tuple[float, str, str]] = []
        spans: list[tuple[str, float, float]] = []
        x = 0.0
        for g in groups:
            benches = _order({r["benchmark"] for r in rows if r["group"] == g}, ORDER)
            if not benches:
                continue
            if slots:
                x += 0.6
            start = x
            for b in benches:
                slots.append((x, g, b))
                x += 1.0
            spans.append((g, start, x - 1.0))
        for j, (metric, metric_title) in enumerate(PANELS):
            ax = axes[i][j]
            for k, d in enumerate(designs):
                label, colour = DESIGN_STYLE.get(d, (d, None))
                xs, hs, lo, hi = [], [], [], []
                for sx, g, b in slots:
                    r = by_key.get((g, b, d, metric))
                    bx = sx + (k - (len(designs) - 1) / 2) * width
                    if r is None:
                        continue
                    if r["ratio"] is None:
                        # Undefined (a zero baseline): marked, not drawn.
                        ax.text(bx, 0.01, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
                        continue
                    xs.append(bx)
                    hs.append(r["ratio"])
                    if r["ci_low"] is not None and r["ci_high"] is not None:
                        lo.append(max(r["ratio"] - (1.0 - r["ci_high"]), 0.0))
                        hi.append(max((1.0 - r["ci_low"]) - r["ratio"], 0.0))
                    else:
                        lo.append(0.0)
                        hi.append(0.0)
                has_ci = any(v > 0 for v in lo + hi)
                ax.bar(
                    xs,
                    hs,
                    width,
                    label=label,
                    color=colour,
                    yerr=[lo, hi] if has_ci else None,
                    capsize=2 if has_ci else 0,
                    error_kw={"linewidth": 0.8},
                )
            ax.axhline(1.0, color="black", linewidth=0.8)
            for a, b in zip(spans[:-1], spans[1:], strict=True):
                ax.axvline((a[2] + b[1]) / 2, color="grey", linewidth=0.6, linestyle=":")
            ax.set_xticks([s[0] for s in slots], [s[2] for s in slots])
            ax.set_xlim(-0.6, widest - 0.4)
            ax.set_ylim(bottom=0.0)
            ax.set_title(f"{metric_title}, {row_title}", fontsize=10)
            if len(spans) > 1:
                ax.set_xlabel("   |   ".join(GROUP_LABEL.get(g, g) for g, _, _ in spans))
            if j == 0:
                ax.set_ylabel("design / baseline")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside upper center", ncols=len(handles))

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png, svg = out / "figure10.png", out / "figure10.svg"
    fig.savefig(png, dpi=150)
    fig.savefig(svg, metadata={"Date": None})
    return [png, svg]


USAGE = """usage: python -m moped.plot DIR

Draws the plots of a results folder into it: figure10.png and .svg from DIR/reductions.json
(moped figure10), matching-*.png and .svg from DIR/matching.csv (moped matching),
engines-*.png and .svg from DIR/engines.csv (moped engines), scaling.png and .svg from
DIR/scaling.csv (moped bench --scaling --out DIR/scaling.csv); every one it holds."""


def main(argv: list[str] | None = None) -> int:
    """``python -m moped.plot DIR``: draws DIR/reductions.json, DIR/matching.csv,
    DIR/engines.csv and DIR/scaling.csv, whichever DIR holds, into DIR."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(args) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    folder = Path(args[0])
    reductions, rows = folder / "reductions.json", folder / "matching.csv"
    engine_rows, scale_rows = folder / "engines.csv", folder / "scaling.csv"
    if not any(f.is_file() for f in (reductions, rows, engine_rows, scale_rows)):
        print(
            f"{folder}: holds neither reductions.json (write it with "
            "moped.analysis.write_tables), matching.csv (moped matching), engines.csv "
            "(moped engines) nor scaling.csv (moped bench --scaling)",
            file=sys.stderr,
        )
        return 1
    paths = []
    if reductions.is_file():
        paths += figure10(reductions, folder)
    if rows.is_file():
        paths += matching(rows, folder)
    if engine_rows.is_file():
        paths += engines(engine_rows, folder)
    if scale_rows.is_file():
        paths += scaling(scale_rows, folder)
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
