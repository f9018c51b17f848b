"""The engines experiment's plots: bandwidth and latency against message size, one line
per scheme, as the multi-CPU NIC paper's Figure 1 draws them.

* ``engines-bandwidth``: IMB Uniband (left) and Biband (right), bytes per CMP cycle
  against message size on log-log axes. The base case with one engine is the black line;
  each scheme with two engines a coloured one; solid at one active copy, dashed at two.
* ``engines-latency``: PingPong's half round trip in CMP cycles against message size.

Drawn with matplotlib's Agg canvas (no display, no global backend change)::

    moped.plot.engines("results/engines", "results/engines")

or ``python -m moped.plot DIR`` for a folder holding ``engines.csv``.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args
from moped._core import InputError
from moped.engines_results import ENGINES_COLUMNS, SCHEMES, read_engines
from moped.plot_matching import _legend, _line, _log_axes, _positive, _rows, _save

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from matplotlib.axes import Axes

__all__ = ["engines"]

#: Each scheme's colour and marker.
SCHEME_STYLE = {
    "base": ("black", "o"),
    "SO": ("#1f77b4", "s"),
    "RO": ("#d62728", "^"),
    "DSR": ("#2ca02c", "D"),
    "SR": ("#9467bd", "v"),
}


def _lines(ax: Axes, df: pandas.DataFrame, bench: str, y: str) -> int:
    """The base case with one engine, then each scheme with two, of ``y`` against the
    message size, at each count of active copies (solid at the fewest, dashed above); the
    lines drawn."""
    rows = df[df["benchmark"] == bench]
    actives = sorted(set(rows["active_matches"]))
    drawn = 0
    for active in actives:
        for scheme in SCHEMES:
            engines = 1 if scheme == "base" else 2
            sel = rows[
                (rows["scheme"] == scheme)
                & (rows["engines"] == engines)
                & (rows["active_matches"] == active)
            ]
            sel = sel.sort_values("bytes")
            xs, ys = _positive(list(sel["bytes"]), list(sel[y]))
            if not xs:
                continue
            colour, marker = SCHEME_STYLE.get(scheme, (None, "o"))
            label = f"{scheme}, {engines} engine{'s' if engines > 1 else ''}, {active} active"
            _line(ax, xs, ys, label, colour, marker, dashed=active != actives[0])
            drawn += 1
    return drawn


def _figure(size: tuple[float, float], panels: int) -> tuple[Any, list[Axes]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, list(axes)


def engines(df_or_dir: Any, out_dir: str | PathLike[str]) -> list[Path]:
    """Draws the engines experiment's plots of ``df_or_dir`` (the frame
    :func:`moped.experiments.engines` returns, a folder holding ``engines.csv`` or the
    file) into ``out_dir``: ``engines-bandwidth`` and ``engines-latency``, each as ``.png``
    and ``.svg``. Returns the paths written."""
    out = Path(_args.path("out_dir", out_dir))
    df = _rows(df_or_dir, "df_or_dir", "engines", read_engines, ENGINES_COLUMNS)
    if df.empty:
        raise InputError("no engines rows to plot")
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    fig, axes = _figure((10, 4.6), 2)
    for ax, bench in zip(axes, ("uniband", "biband"), strict=True):
        _lines(ax, df, bench, "bandwidth_bytes_per_cycle")
        _log_axes(ax, "message size (bytes)", "bytes per CMP cycle", f"IMB {bench.capitalize()}")
    _legend(fig, axes)
    paths += _save(fig, out, "engines-bandwidth")
    fig, axes = _figure((6.4, 4.6), 1)
    _lines(axes[0], df, "pingpong", "latency_cycles")
    _log_axes(
        axes[0], "message size (bytes)", "CMP cycles (half a round trip)", "IMB PingPong latency"
    )
    _legend(fig, axes)
    paths += _save(fig, out, "engines-latency")
    return paths
