"""How host time grows with the cores, from Python: ``moped bench --scaling``'s CSV (the
one measured for docs/performance.md) read back typed, and its log-log plot."""

from __future__ import annotations

from pathlib import Path

import pytest

import moped
from moped import _core, plot

DOCS_CSV = Path(__file__).resolve().parents[2] / "docs" / "scaling.csv"
PNG = b"\x89PNG\r\n\x1a\n"


def test_read_scaling_types_the_columns_of_the_rust_header() -> None:
    df = moped.read_scaling(DOCS_CSV)
    assert tuple(df.columns) == tuple(_core.SCALING_CSV_HEADER)
    assert set(df["bench"]) == {"tester", "alltoall"}
    assert sorted(set(df["cores"])) == [16, 64, 256, 1024]
    for c in ("cores", "events", "messages", "cycles"):
        assert str(df[c].dtype) == "int64", c
    assert str(df["ns_per_event"].dtype) == "float64"
    # ns per event is host seconds over events, as `moped bench` prints it.
    ns = df["host_seconds"] * 1e9 / df["events"]
    assert ((ns - df["ns_per_event"]).abs() / df["ns_per_event"] < 0.05).all()


def test_the_scaling_plot_is_drawn_from_a_folder_a_file_or_a_frame(tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "scaling.csv").write_bytes(DOCS_CSV.read_bytes())
    assert plot.main([str(folder)]) == 0
    assert (folder / "scaling.png").read_bytes().startswith(PNG)
    assert (folder / "scaling.svg").stat().st_size > 0
    paths = plot.scaling(moped.read_scaling(DOCS_CSV), tmp_path / "frame")
    assert [p.name for p in paths] == ["scaling.png", "scaling.svg"]
    df = moped.read_scaling(folder)
    with pytest.raises(moped.InputError, match="no scaling rows"):
        plot.scaling(df.iloc[0:0], tmp_path / "empty")
    with pytest.raises(moped.InputError, match="lack the columns ns_per_event"):
        plot.scaling(df.drop(columns=["ns_per_event"]), tmp_path / "bad")
    with pytest.raises(moped.InputError, match="no such file .*moped bench --scaling"):
        moped.read_scaling(tmp_path / "nowhere")
