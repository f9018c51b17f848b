"""The engines experiment from Python: the multi-CPU NIC paper's testbed (tigon.csv) and
IMB Uniband, Biband and PingPong under MOPED with one and two engines per scheme at one and
two active copies, the typed rows of engines.csv and tigon.csv, reading them back, the
plots, and bad arguments."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import moped
from moped import _core, experiments, plot

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("engines") / "quick"
    df = experiments.engines(
        out, quick=True, schemes="base,SR", jobs=2, progress=False, figure10=False
    )
    return out, df


def test_columns_are_the_csv_header_and_rows_are_typed(run: tuple[Path, pd.DataFrame]) -> None:
    out, df = run
    header = list(_core.ENGINES_CSV_HEADER)
    assert list(df.columns) == header == list(experiments.ENGINES_COLUMNS)
    assert (out / "engines.csv").read_text().splitlines()[0] == ",".join(header)
    for col in ("engines", "bytes", "cycles", "messages_verified", "engine1_busy_cycles"):
        assert df[col].dtype == "int64", col
    for col in ("bandwidth_bytes_per_cycle", "latency_cycles", "active_copies_mean"):
        assert df[col].dtype == "float64", col
    assert set(df["scheme"]) == {"base", "SR"}
    assert set(df["engines"]) == {1, 2}
    assert set(df["active_matches"]) == {1, 2}
    assert set(df["benchmark"]) == {"uniband", "biband", "pingpong"}
    assert (df["messages_verified"] > 0).all()
    assert (df["backoff_refused"] == 0).all()


def test_a_second_engine_under_sr_moves_steps_off_the_first(
    run: tuple[Path, pd.DataFrame],
) -> None:
    _, df = run
    sr2 = df[(df["scheme"] == "SR") & (df["engines"] == 2)]
    base = df[(df["scheme"] == "base")]
    assert (sr2["engine1_busy_cycles"] > 0).all()
    assert (base["engine1_busy_cycles"] == 0).all()
    assert (sr2["handoffs"] > 0).all()
    report = (run[0] / "report.md").read_text()
    assert "### What bounds each scheme" in report
    assert "### The testbed beside the paper" in report
    assert "  - CMP, 2 active copies: " in report


def test_read_engines_round_trips_and_the_plots_are_drawn(
    run: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    out, df = run
    pd.testing.assert_frame_equal(moped.read_engines(out), df)
    for stem in ("engines-bandwidth", "engines-latency"):
        assert (out / f"{stem}.png").read_bytes().startswith(PNG), stem
        assert (out / f"{stem}.svg").stat().st_size > 0, stem
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "engines.csv").write_bytes((out / "engines.csv").read_bytes())
    assert plot.main([str(folder)]) == 0
    assert (folder / "engines-latency.png").stat().st_size > 0
    with pytest.raises(moped.InputError, match="no engines rows"):
        plot.engines(df.iloc[0:0], tmp_path / "empty")
    with pytest.raises(moped.InputError, match="lack the columns"):
        plot.engines(df.drop(columns=["latency_cycles"]), tmp_path / "bad")
    with pytest.raises(moped.InputError, match="no such file"):
        moped.read_engines(tmp_path / "nowhere")


def test_the_testbed_alone_returns_tigon_csv_typed(
    run: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    both, _ = run
    out = tmp_path / "tigon"
    df = experiments.engines(out, quick=True, schemes="base,RO", only="tigon", progress=False)
    assert list(df.columns) == list(_core.TIGON_CSV_HEADER) == list(experiments.TIGON_COLUMNS)
    assert not (out / "engines.csv").exists()
    for col in ("cpus", "bytes", "messages_verified", "data_frames"):
        assert df[col].dtype == "int64", col
    for col in ("bandwidth_mbit_s", "latency_us", "nic0_cpu_a_busy", "wire_share"):
        assert df[col].dtype == "float64", col
    assert set(df["scheme"]) == {"base", "RO"}
    assert set(df["cpus"]) == {1, 2}
    assert (df["messages_verified"] > 0).all()
    pd.testing.assert_frame_equal(moped.read_tigon(out), df)
    # The same testbed rows as the run on both hosts, base's.
    other = moped.read_tigon(both)
    mine = df[df["scheme"] == "base"].reset_index(drop=True)
    theirs = other[other["scheme"] == "base"].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, theirs)
    uni = df[(df["benchmark"] == "unidirectional") & (df["bytes"] == 64 * 1024)]
    ro = uni[(uni["scheme"] == "RO") & (uni["cpus"] == 2)]["bandwidth_mbit_s"].iloc[0]
    base = uni[(uni["scheme"] == "base") & (uni["cpus"] == 1)]["bandwidth_mbit_s"].iloc[0]
    assert ro > base
    with pytest.raises(moped.InputError, match="no such file"):
        moped.read_tigon(tmp_path / "nowhere")


def test_bad_arguments_name_what_is_valid(tmp_path: Path) -> None:
    out = tmp_path / "bad"
    with pytest.raises(moped.InputError, match="base, SO, RO, DSR, SR"):
        experiments.engines(out, quick=True, schemes=["RO", "XO"], progress=False)
    with pytest.raises(moped.InputError, match="at least one"):
        experiments.engines(out, quick=True, schemes=[], progress=False)
    with pytest.raises(moped.InputError, match="emp or config"):
        experiments.engines(out, quick=True, costs="tigon", progress=False)
    with pytest.raises(moped.InputError, match="no MOPED"):
        experiments.engines(out, quick=True, design="baseline", progress=False)
    with pytest.raises(moped.InputError, match="jobs"):
        experiments.engines(out, jobs=0)
    with pytest.raises(moped.InputError, match="tigon, cmp or both"):
        experiments.engines(out, quick=True, only="nic", progress=False)
    assert not out.exists()
