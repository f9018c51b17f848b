"""The Figure-10 plot: every format of both layouts is written, from a frame or from a
results folder; the baseline is in the legend, the line at 1.0 inside every panel, an
outlier clipped with its value printed; the caption says what a folder records of scaled
iterations and changed configuration; ``python -m moped.plot`` parses its arguments
and warns of nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sweep_fakes

import moped
from moped import _core, analysis, plot

PNG = b"\x89PNG\r\n\x1a\n"
BENCHES = {"imb": ("PP", "XC", "BC", "RD", "GA", "AA"), "npb": ("SP", "CG", "MG", "FT", "BT")}


def records() -> list[dict]:
    out = []
    for group, benches in (("imb", ("PP", "AA")), ("npb", ("CG",)), ("imb-1m", ("BC",))):
        for bench in benches:
            for seed in (1, 2):
                for design, share in (
                    ("baseline", 1.0),
                    ("basemoped", 0.4),
                    ("optcopy", 0.3),
                    ("optcache", 0.28),
                ):
                    v = 1000 * share + seed
                    out.append(
                        {
                            "benchmark": bench,
                            "group": group,
                            "design": design,
                            "seed": seed,
                            "metrics": {
                                "cycles": v,
                                "l1_misses": v / 2,
                                "l2_misses_private": v / 3,
                                # A zero baseline: no bar, no error.
                                "l2_misses_global": 0 if design == "baseline" else 5,
                            },
                        }
                    )
    return out


def reductions(ratio: Any) -> list[dict[str, Any]]:
    """Reduction rows of Figure 10's benchmarks, each design's ratio ``ratio(metric,
    benchmark, design)``."""
    return [
        {"group": g, "benchmark": b, "design": d, "metric": m, "ratio": ratio(m, b, d)}
        for g, benches in BENCHES.items()
        for b in benches
        for d in moped.DESIGNS[1:]
        for m, _ in plot.PANELS
    ]


def shaped(metric: str, bench: str, design: str) -> float:
    """Panels the old figure got wrong: one where the tallest bar is just under 1.0 (its
    top axis limit was 1.0), one of bars all far below it, one with CG at 7.5."""
    if metric == "l2_misses_private":
        return 0.93 if bench == "FT" else 0.5
    if metric == "l1_misses":
        return 0.02
    if metric == "l2_misses_global" and (bench, design) == ("CG", "basemoped"):
        return 7.5
    return 1.8 if bench == "RD" else 0.6


def panels(fig: Any) -> dict[str, Any]:
    return {ax.get_title(): ax for ax in fig.axes}


def labels(ax: Any) -> list[Any]:
    """The panel's texts but the benchmark groups' names: the clipped bars' values."""
    return [t for t in ax.texts if t.get_text() not in plot.GROUPS.values()]


def texts(ax: Any) -> list[str]:
    return [t.get_text() for t in labels(ax)]


def test_figure10_writes_every_format_of_both_layouts(tmp_path: Path) -> None:
    paths = plot.figure10(analysis.reductions_frame(records()), tmp_path / "fig")
    assert [p.name for p in paths] == [
        "figure10.png",
        "figure10.svg",
        "figure10.pdf",
        "figure10-2x2.png",
        "figure10-2x2.svg",
        "figure10-2x2.pdf",
    ]
    for p in paths:
        data = p.read_bytes()
        if p.suffix == ".png":
            assert data.startswith(PNG), p
        elif p.suffix == ".svg":
            assert b"<svg" in data, p
        else:
            assert data.startswith(b"%PDF"), p
            # Fonts embedded as TrueType (type 42, CIDFontType2 here): publishers refuse
            # the type 3 that matplotlib writes by default.
            assert b"/Type3" not in data and b"/CIDFontType2" in data, p
    rows = reductions(shaped)
    only = plot.figure10(rows, tmp_path / "one", variants=["2x2"])
    assert [p.name for p in only] == ["figure10-2x2.png", "figure10-2x2.svg", "figure10-2x2.pdf"]
    svg = plot.figure10(rows, tmp_path / "svg", formats=["svg"])
    assert [p.name for p in svg] == ["figure10.svg", "figure10-2x2.svg"]
    with pytest.raises(moped.InputError, match="eps"):
        plot.figure10(rows, tmp_path / "eps", formats=["eps"])
    with pytest.raises(moped.InputError, match="variant"):
        plot.figure10(rows, tmp_path / "tall", variants=["tall"])


@pytest.mark.parametrize("variant", list(plot.VARIANTS))
def test_the_baseline_is_in_the_legend(variant: str) -> None:
    fig = plot.draw_figure10(reductions(shaped), variant)
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == [plot.BASELINE_LABEL, "BASEMOPED", "OPTCOPY", "OPTCACHE"]
    (line,) = [h for h in legend.legend_handles if h is not None and h.get_label() == labels[0]]
    assert line.get_color() == "black"


@pytest.mark.parametrize("variant", list(plot.VARIANTS))
def test_the_line_at_one_is_inside_every_panel(variant: str) -> None:
    for ratio in (shaped, lambda m, b, d: 1.0, lambda m, b, d: 0.0):
        fig = plot.draw_figure10(reductions(ratio), variant)
        fig.draw_without_rendering()
        assert len(fig.axes) == 4
        for ax in fig.axes:
            lo, hi = ax.get_ylim()
            assert lo < 1.0 < hi, (ax.get_title(), lo, hi)
            # Clear of the frame: at least 5 % of the panel's height below its top.
            assert (hi - 1.0) / (hi - lo) >= 0.05, (ax.get_title(), hi)
            (one,) = [ln for ln in ax.get_lines() if ln.get_label() == plot.BASELINE_LABEL]
            assert list(one.get_ydata()) == [1.0, 1.0]


@pytest.mark.parametrize("variant", list(plot.VARIANTS))
def test_an_outlier_is_clipped_with_its_value_printed(variant: str) -> None:
    fig = plot.draw_figure10(reductions(shaped), variant)
    by_title = panels(fig)
    glob = by_title["global L2 misses"]
    lo, hi = glob.get_ylim()
    # The axis is the other bars' (RD at 1.8), not CG's 7.5, which is printed instead.
    assert 1.8 < hi < 2.5
    assert texts(glob) == ["7.5"]
    (label,) = labels(glob)
    assert label.xy[0] == pytest.approx(7.6 - 0.8 / 3)  # CG's BASEMOPED bar
    # A bar under the limit (RD at 1.8) is drawn whole, and labelled nowhere.
    assert texts(by_title["execution cycles"]) == []
    assert by_title["execution cycles"].get_ylim()[1] > 1.8
    # Only the tallest few are clipped: where more bars rise above the limit the axis
    # grows to show them.
    step = {b: i for i, b in enumerate(plot.ORDER)}
    rising = {"basemoped": 0.2, "optcopy": 0.1, "optcache": 0.0}
    many = plot.draw_figure10(reductions(lambda m, b, d: 3 + step[b] / 2 + rising[d]), variant)
    cycles = panels(many)["execution cycles"]
    assert plot.MAX_CLIPPED == 3 and texts(cycles) == ["8.2", "8.1", "8.0"]  # BT's
    assert cycles.get_ylim()[1] > 7.7  # FT's, the tallest drawn whole


def test_clipped_labels_that_collide_are_stacked() -> None:
    # CG's three bars are all outliers: their labels take a row each, below the top.
    def ratio(m: str, b: str, d: str) -> float:
        return {"basemoped": 90.0, "optcopy": 7.0, "optcache": 6.0}[d] if b == "CG" else 0.5

    fig = plot.draw_figure10(reductions(ratio), "2x2")
    ax = panels(fig)["execution cycles"]
    assert texts(ax) == ["90", "7.0", "6.0"]
    boxes = [t.get_window_extent() for t in labels(ax)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    # All above the tallest unclipped bar and inside the panel.
    frame = ax.get_window_extent()
    below = ax.transData.transform((0, 0.5))[1]
    assert all(frame.y1 + 0.5 >= box.y1 and box.y0 > below for box in boxes)


def finished_folder(tmp_path: Path, iteration_scale: float | None, config: Any) -> Path:
    """A Figure-10 results folder written by the simulator's own pipeline, from the fake
    runner's records: the files the caption is read from are the real ones."""
    w = tmp_path / "workloads"
    for group, stems in (("imb", sweep_fakes.SHORT), ("npb", ("sp", "cg", "mg", "ft", "bt"))):
        (w / group).mkdir(parents=True, exist_ok=True)
        for stem in stems:
            (w / group / f"{stem}-{'16k' if group == 'imb' else 'S'}.toml").write_text("")
    seeds = [1, 2]
    toml = moped.config_toml(config)
    out = tmp_path / "fig10"
    outcomes = [
        json.loads(sweep_fakes.fake_run_workload(spec, design, toml, seed, iteration_scale, None))
        for spec, design, seed, _ in _core.figure10_plan(str(w), False, seeds)
    ]
    claim = _core.figure10_claim(str(out), str(w), seeds, False)
    _core.figure10_finish(claim, json.dumps(outcomes), str(w), False, seeds, iteration_scale, toml)
    return out


def test_the_caption_says_what_the_folder_records(tmp_path: Path) -> None:
    folder = finished_folder(
        tmp_path, 0.5, {"l2.latency": 12, "workload.warmup": False, "system.core_model": "blocking"}
    )
    notes = plot.figure10_notes(folder)
    assert notes == [
        "Iteration counts scaled by 0.5.",
        "Changed from Table 1: l2.latency=12, system.core_model=blocking, workload.warmup=false.",
        "Mean of seeds 1, 2; error bars: 95 % interval.",
    ]
    # Drawn from the folder, the figure carries them; from a frame, nothing is assumed.
    fig = plot.draw_figure10(folder, "2x2")
    caption = " ".join(fig.get_supxlabel().split())
    assert caption == " ".join(notes)
    plot.figure10(folder, folder, formats=["svg"], variants=["wide"])
    assert "l2.latency=12" in (folder / "figure10.svg").read_text()
    plain = plot.draw_figure10(analysis.reductions_frame(records()), "wide")
    assert plain.get_supxlabel() == ""


def test_a_folder_run_as_the_paper_ran_it_has_no_caption(tmp_path: Path) -> None:
    folder = finished_folder(tmp_path, None, None)
    (folder / "run.json").write_text(json.dumps({"seed": [1]}))
    assert plot.figure10_notes(folder) == []
    # A long list of changes is cut short, pointing at config.toml.
    many = {f"moped.steps.{s}": 1 for s in ("reserve", "store", "forward", "ack", "match")}
    many.update({"l2.latency": 12, "memory.latency": 50})
    folder = finished_folder(tmp_path / "many", None, many)
    (changed,) = [n for n in plot.figure10_notes(folder) if n.startswith("Changed")]
    assert changed.endswith(", 2 more (config.toml).") and changed.count("=") == 5


def test_plot_module_reads_a_results_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    analysis.write_tables(tmp_path, records())
    assert plot.main([str(tmp_path)]) == 0
    for stem in ("figure10", "figure10-2x2"):
        for ext in plot.FORMATS:
            assert (tmp_path / f"{stem}.{ext}").is_file(), (stem, ext)
    assert "figure10.png" in capsys.readouterr().out
    out = tmp_path / "elsewhere"
    assert plot.main([str(tmp_path), "-o", str(out), "--format", "pdf", "--variant", "2x2"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["figure10-2x2.pdf"]
    assert plot.main([str(tmp_path / "nowhere")]) == 1
    assert "holds neither" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        plot.main([str(tmp_path), "--format", "eps"])
    assert e.value.code == 2


def run_module(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # -W error: any warning, from the import of the package on, fails the call.
    return subprocess.run(
        [sys.executable, "-W", "error", "-m", "moped.plot", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_python_m_moped_plot_helps_and_warns_of_nothing(tmp_path: Path) -> None:
    helped = run_module("--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert helped.stderr == ""
    assert "usage: python -m moped.plot" in helped.stdout and "--variant" in helped.stdout
    analysis.write_tables(tmp_path, records())
    drawn = run_module(str(tmp_path), "--format", "png", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stderr == ""
    assert drawn.stdout.split() == [
        str(tmp_path / "figure10.png"),
        str(tmp_path / "figure10-2x2.png"),
    ]
    wrong = run_module("--format", "eps", str(tmp_path), cwd=tmp_path)
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr
