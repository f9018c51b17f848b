"""The breakdown figure (``breakdown.csv`` of ``moped figure10``): every format is written,
byte for byte the same when redrawn; a panel per group in the paper's order; each bar's
stacked parts add up to its ``of_baseline`` sum; a malformed file names its line;
``python -m moped.plot`` and ``moped figure10`` draw it."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import moped
from moped import _core, cli, plot

PNG = b"\x89PNG\r\n\x1a\n"
HEADER = "group,benchmark,design,activity,rank_cycles,share,of_baseline"
DESIGNS = ("baseline", "basemoped", "optcopy", "optcache")
ACTIVITIES = tuple(plot.ACTIVITY_STYLE)
#: Each group's benchmarks, in the order the CSV lists them; ``goal`` is a user group.
BENCHES = {"goal": ("ring",), "npb": ("CG", "SP"), "imb": ("PP", "RD")}


def part(group: str, bench: str, design: str, k: int) -> float:
    """Activity ``k``'s cycles in ``design`` on ``bench``: the MOPED designs' fewer than the
    baseline's, none ``idle``."""
    if k == len(ACTIVITIES) - 1:
        return 0.0
    scale = {"baseline": 1.0, "basemoped": 0.8, "optcopy": 0.5, "optcache": 0.45}[design]
    return scale * (1000 + 250 * k * (1 + len(bench) + len(group)) % 2000)


def table(benches: dict[str, tuple[str, ...]] = BENCHES) -> dict[tuple[str, str, str], list[str]]:
    """Each (group, benchmark, design)'s lines of breakdown.csv, as the Rust side writes
    them (``of_baseline`` over the baseline's total)."""
    out = {}
    for g, names in benches.items():
        for b in names:
            base = sum(part(g, b, "baseline", k) for k in range(len(ACTIVITIES)))
            for d in DESIGNS:
                total = sum(part(g, b, d, k) for k in range(len(ACTIVITIES)))
                out[(g, b, d)] = [
                    f"{g},{b},{d},{a},{v},{v / total},{v / base}"
                    for k, a in enumerate(ACTIVITIES)
                    for v in [part(g, b, d, k)]
                ]
    return out


def write(folder: Path, lines: list[str] | None = None) -> Path:
    """breakdown.csv in ``folder``: ``lines`` after the header, by default :func:`table`'s."""
    if lines is None:
        lines = [line for rows in table().values() for line in rows]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "breakdown.csv"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    return path


def expected() -> dict[tuple[str, str, str], float]:
    """Each bar's height: the sum of its ``of_baseline`` column."""
    return {
        key: sum(float(line.rsplit(",", 1)[1]) for line in rows) for key, rows in table().items()
    }


def stacks(ax: Any) -> dict[float, list[tuple[float, float, Any]]]:
    """Each bar's segments, bottom up, by the bar's x: (bottom, height, colour)."""
    out: dict[float, list[tuple[float, float, Any]]] = defaultdict(list)
    for patch in ax.patches:
        x = round(patch.get_x() + patch.get_width() / 2, 6)
        out[x].append((patch.get_y(), patch.get_height(), patch.get_facecolor()))
    return {x: sorted(segments, key=lambda s: s[0]) for x, segments in sorted(out.items())}


def test_every_format_is_written_and_redrawn_the_same(tmp_path: Path) -> None:
    csv = write(tmp_path / "in")
    paths = plot.breakdown(csv, tmp_path / "fig")
    assert [p.name for p in paths] == ["breakdown.png", "breakdown.svg", "breakdown.pdf"]
    for p in paths:
        data = p.read_bytes()
        if p.suffix == ".png":
            assert data.startswith(PNG), p
        elif p.suffix == ".svg":
            assert b"<svg" in data, p
        else:
            assert data.startswith(b"%PDF"), p
            assert b"/Type3" not in data and b"/CIDFontType2" in data, p
    # No date, no random ids: the same file twice is the same bytes.
    again = plot.breakdown(tmp_path / "in", tmp_path / "again")
    for a, b in zip(paths, again, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert [p.name for p in plot.breakdown(csv, tmp_path / "svg", ["svg"])] == ["breakdown.svg"]
    with pytest.raises(moped.InputError, match="eps"):
        plot.breakdown(csv, tmp_path / "eps", ["eps"])
    with pytest.raises(TypeError, match="formats"):
        plot.breakdown(csv, tmp_path / "str", "png")


def test_each_bar_adds_up_to_its_share_of_the_baseline(tmp_path: Path) -> None:
    fig = plot.draw_breakdown(write(tmp_path))
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["IMB, 16 kB", "NPB", "goal"]
    order = {"IMB, 16 kB": "imb", "NPB": "npb", "goal": "goal"}
    heights = expected()
    colours = [c for _, c in plot.ACTIVITY_STYLE.values()]
    from matplotlib.colors import to_rgba

    for ax in axes:
        g = order[ax.get_title()]
        bars = stacks(ax)
        labels = [t.get_text() for t in ax.get_xticklabels()]
        ticks = {round(x, 6): t for x, t in zip(ax.get_xticks(), labels, strict=True)}
        # Benchmarks in the paper's order, each with its designs' bars in theirs.
        benches = [b for b in plot.ORDER if b in BENCHES[g]] + [
            b for b in BENCHES[g] if b not in plot.ORDER
        ]
        want = [(b, d) for b in benches for d in DESIGNS]
        assert len(bars) == len(want)
        assert [ticks[x] for x in bars] == [plot.SHORT_LABELS[d] for _, d in want]
        assert [t.get_text() for t in ax.texts] == benches
        for segments, (b, d) in zip(bars.values(), want, strict=True):
            assert len(segments) == len(ACTIVITIES), (g, b, d)
            # Stacked: each segment starts where the one below it ends.
            top = 0.0
            for bottom, height, _ in segments:
                assert bottom == pytest.approx(top)
                top = bottom + height
            assert top == pytest.approx(heights[(g, b, d)]), (g, b, d)
            assert sum(h for _, h, _ in segments) == pytest.approx(heights[(g, b, d)])
            # The activities bottom up in their order and colours.
            assert [c for _, _, c in segments] == [to_rgba(c) for c in colours]
            if d == "baseline":
                assert top == pytest.approx(1.0)
        # The dashed line at 1.0, inside the panel.
        (line,) = ax.get_lines()
        assert list(line.get_ydata()) == [1.0, 1.0] and line.get_linestyle() == "--"
        assert ax.get_ylim()[1] > 1.05
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "compute",
        "MPI calls",
        "copies",
        "list searches",
        "polling",
        "reduction arithmetic",
        "MOPED ports",
        "MOPED waits",
        "idle",
        plot.BREAKDOWN_BASELINE_LABEL,
    ]
    assert axes[0].yaxis.get_label().get_text() == "" and "baseline's" in fig.get_supylabel()


def test_groups_in_the_paper_order_then_as_listed(tmp_path: Path) -> None:
    rows = table(
        {"team": ("b",), "imb-1m": ("PP",), "npb": ("CG",), "goal": ("a",), "imb": ("PP",)}
    )
    fig = plot.draw_breakdown(write(tmp_path, [line for r in rows.values() for line in r]))
    assert [ax.get_title() for ax in fig.axes] == ["IMB, 16 kB", "NPB", "IMB, 1 MB", "team", "goal"]


def test_a_bar_without_baseline_is_marked_and_an_outlier_clipped(tmp_path: Path) -> None:
    lines = [line for rows in table({"imb": ("PP", "RD")}).values() for line in rows]
    # PP without a baseline run: its of_baseline cells are empty.
    lines = [line.rsplit(",", 1)[0] + "," if ",PP," in line else line for line in lines]
    # RD's OPTCOPY idle for 9 times the baseline's cycles: over 9 in all.
    lines = [
        line.rsplit(",", 1)[0] + ",9.0" if line.startswith("imb,RD,optcopy,idle,") else line
        for line in lines
    ]
    fig = plot.draw_breakdown(write(tmp_path, lines))
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n/a") == 4
    (clipped,) = [t for t in texts if t not in ("n/a", "PP", "RD")]
    total = expected()[("imb", "RD", "optcopy")] + 9.0
    assert clipped == (f"{total:.1f}" if total < 10 else f"{total:.0f}")
    # The axis is the other bars', with the line at 1.0 in it.
    assert 1.0 < ax.get_ylim()[1] < total
    assert len(stacks(ax)) == 4


def bad(tmp_path: Path, line: int, old: str, new: str) -> Path:
    """breakdown.csv with ``old`` replaced by ``new`` on its ``line``-th line (1: header)."""
    path = write(tmp_path)
    lines = path.read_text().splitlines()
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("line", "old", "new", "message"),
    [
        (5, ",mpi_search,", ",mpi_serch,", "unknown activity 'mpi_serch'"),
        (7, "0.15,0.15", "0.15,zero", "of_baseline 'zero' is not a number"),
        (3, ",1250.0,", ",,", "rank_cycles '' is not a number"),
        (4, ",1500.0,0.1,", ",1500.0,-0.1,", "share '-0.1' is not a number"),
        (6, ",mpi_poll,", ",mpi_poll,,", "8 fields, expected 7"),
        (10, "ring,baseline,idle", "ring,baseline,compute", "again \\(first on line 2\\)"),
        (11, "goal,", ",", "group is empty"),
        (1, ",share,", ",", "line 1: lacks the columns share"),
    ],
)
def test_a_malformed_file_names_its_line(
    tmp_path: Path, line: int, old: str, new: str, message: str
) -> None:
    path = bad(tmp_path, line, old, new)
    where = f"{path}, line {line}" if line > 1 else f"{path}"
    with pytest.raises(moped.InputError, match=message) as e:
        plot.breakdown(path, tmp_path / "out")
    assert str(e.value).startswith(where), str(e.value)
    assert not (tmp_path / "out").exists()


def test_a_missing_or_empty_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(moped.InputError, match="breakdown.csv: no such file"):
        plot.draw_breakdown(tmp_path)
    (tmp_path / "breakdown.csv").write_text("")
    with pytest.raises(moped.InputError, match="breakdown.csv: is empty"):
        plot.draw_breakdown(tmp_path)
    (tmp_path / "breakdown.csv").write_text(HEADER + "\n")
    with pytest.raises(moped.InputError, match="breakdown.csv: no breakdown rows"):
        plot.draw_breakdown(tmp_path / "breakdown.csv")
    (tmp_path / "breakdown.csv").write_bytes(HEADER.encode() + b"\nimb,\xff\n")
    with pytest.raises(moped.InputError, match="breakdown.csv: cannot read"):
        plot.draw_breakdown(tmp_path)
    with pytest.raises(moped.InputError, match="clip_above"):
        plot.draw_breakdown(tmp_path, clip_above=0.5)


def test_python_m_moped_plot_draws_a_folder_with_only_breakdown_csv(tmp_path: Path) -> None:
    write(tmp_path)
    # -W error: any warning, from the import of the package on, fails the call.
    drawn = subprocess.run(
        [sys.executable, "-W", "error", "-m", "moped.plot", str(tmp_path), "-f", "png"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stderr == ""
    assert drawn.stdout.split() == [str(tmp_path / "breakdown.png")]
    assert (tmp_path / "breakdown.png").read_bytes().startswith(PNG)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["breakdown.csv", "breakdown.png"]


def test_plot_main_reports_a_malformed_breakdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plot.main([str(tmp_path)]) == 1
    assert "breakdown.csv (moped figure10)" in capsys.readouterr().err
    path = bad(tmp_path, 3, ",mpi_call,", ",calls,")
    assert plot.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"python -m moped.plot: {path}, line 3: unknown activity 'calls'")


def test_moped_figure10_draws_the_breakdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The simulation stands in for itself: its folder holds breakdown.csv alone.
    write(tmp_path)
    monkeypatch.setattr(_core, "cli_main", lambda args: 0)
    monkeypatch.setattr(sys, "argv", ["moped", "figure10", "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == 0
    assert capsys.readouterr().out == "figure: breakdown.png, breakdown.svg, breakdown.pdf\n"
    assert (tmp_path / "breakdown.pdf").is_file()
