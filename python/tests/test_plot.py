"""The Figure-10 plot: both files are written, from a frame or from reductions.json."""

from __future__ import annotations

from pathlib import Path

from moped import analysis, plot


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


def test_figure10_writes_png_and_svg(tmp_path: Path) -> None:
    paths = plot.figure10(analysis.reductions_frame(records()), tmp_path / "fig")
    assert [p.name for p in paths] == ["figure10.png", "figure10.svg"]
    png, svg = paths
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()


def test_plot_module_reads_reductions_json(tmp_path: Path, capsys) -> None:
    analysis.write_tables(tmp_path, records())
    assert plot.main([str(tmp_path)]) == 0
    assert (tmp_path / "figure10.png").is_file() and (tmp_path / "figure10.svg").is_file()
    assert "figure10.png" in capsys.readouterr().out
    assert plot.main([str(tmp_path / "nowhere")]) == 1
