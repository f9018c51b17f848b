"""The matching experiment from Python: the queue benchmarks under the software path and
two engines, the typed rows of matching.csv, reading them back, and the plots."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import moped
from moped import _core, analysis, experiments, plot

ENGINES = ["software", "fsm", "cam"]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("matching") / "quick"
    df = experiments.matching(out, quick=True, engines=ENGINES, jobs=2, progress=False)
    return out, df


def test_columns_start_with_the_csv_header(run: tuple[Path, pd.DataFrame]) -> None:
    out, df = run
    header = list(_core.MATCHING_CSV_HEADER)
    assert list(df.columns[: len(header)]) == header
    assert list(experiments.MATCHING_COLUMNS) == header
    assert (out / "matching.csv").read_text().splitlines()[0] == ",".join(header)
    assert (out / "report.md").is_file() and (out / "run.json").is_file()


def test_rows_are_typed(run: tuple[Path, pd.DataFrame]) -> None:
    _, df = run
    for col in ("depth", "position", "iterations", "messages_verified", "ranks"):
        assert df[col].dtype == "int64", col
    for col in ("cycles", "engine_cycles"):
        assert df[col].dtype == "float64", col
    for col in ("total_cycles", "total_engine_cycles"):
        assert df[col].dtype == "Int64", col
    assert set(df["engine"]) == set(ENGINES)
    assert set(df["level"]) == {"cmp", "engine"}
    assert set(df["sources"]) == {"", "uniform", "skewed"}
    software = df[df["engine"] == "software"]
    assert set(software["level"]) == {"cmp"}
    assert software["engine_cycles"].isna().all()
    assert software["total_engine_cycles"].isna().all()
    engine_level = df[df["level"] == "engine"]
    assert set(engine_level["engine"]) == {"fsm", "cam"}
    assert engine_level["cycles"].isna().all() and engine_level["total_cycles"].isna().all()
    assert (engine_level["engine_cycles"] > 0).all()


def test_every_simulation_verified_its_messages(run: tuple[Path, pd.DataFrame]) -> None:
    _, df = run
    cmp = df[df["level"] == "cmp"]
    assert len(cmp) > 0
    assert (cmp["messages_verified"] > 0).all()
    assert (cmp["cycles"] > 0).all()


def test_the_cam_matches_in_constant_time_within_its_first_level(
    run: tuple[Path, pd.DataFrame],
) -> None:
    _, df = run
    cam = df[(df["engine"] == "cam") & (df["benchmark"] == "preposted")]
    within = cam[cam["depth"] <= 256]
    assert len(within) > 1
    assert within["engine_cycles"].nunique() == 1
    past = cam[cam["depth"] > 256]
    assert (past["engine_cycles"] > within["engine_cycles"].iloc[0]).all()


def test_read_matching_round_trips(run: tuple[Path, pd.DataFrame]) -> None:
    out, df = run
    pd.testing.assert_frame_equal(moped.read_matching(out), df)
    pd.testing.assert_frame_equal(experiments.read_matching(out / "matching.csv"), df)


def test_read_matching_refuses_what_is_not_matching_csv(tmp_path: Path) -> None:
    with pytest.raises(moped.InputError, match="no such file"):
        moped.read_matching(tmp_path)
    bad = tmp_path / "matching.csv"
    bad.write_text("engine,benchmark\nfsm,preposted\n")
    with pytest.raises(moped.InputError, match="lacks the columns depth"):
        moped.read_matching(bad)
    header = ",".join(_core.MATCHING_CSV_HEADER)
    bad.write_text(header + "\nfsm,preposted,deep,1,,cmp,10,1.0,1.0,1,1,2,2\n")
    with pytest.raises(moped.InputError, match="cannot read"):
        moped.read_matching(bad)
    with pytest.raises(TypeError, match="path"):
        moped.read_matching(3)  # type: ignore[arg-type]


def test_the_experiment_draws_its_plots(run: tuple[Path, pd.DataFrame]) -> None:
    out, _ = run
    for stem in ("matching-preposted", "matching-unload", "matching-unexpected"):
        png = out / f"{stem}.png"
        assert png.stat().st_size > 0 and png.read_bytes()[:8] == PNG, stem
        assert "<svg" in (out / f"{stem}.svg").read_text(), stem


def test_plot_matching_writes_png_files(run: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    _, df = run
    paths = plot.matching(df, tmp_path / "plots")
    assert [p.name for p in paths] == [
        "matching-preposted.png",
        "matching-preposted.svg",
        "matching-unload.png",
        "matching-unload.svg",
        "matching-unexpected.png",
        "matching-unexpected.svg",
    ]
    for p in paths:
        assert p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == PNG
    # Without unexpected rows there is no such plot; the software path alone draws too.
    only = df[(df["benchmark"] != "unexpected") & (df["engine"] == "software")]
    names = [p.name for p in plot.matching(only, tmp_path / "software")]
    assert "matching-unexpected.png" not in names and "matching-unload.png" in names
    with pytest.raises(moped.InputError, match="no matching rows"):
        plot.matching(df.iloc[0:0], tmp_path / "empty")
    with pytest.raises(moped.InputError, match="lack the columns"):
        plot.matching(df.drop(columns=["cycles"]), tmp_path / "bad")
    with pytest.raises(TypeError, match="df_or_dir"):
        plot.matching(3, tmp_path / "bad")


def test_plot_module_draws_whatever_the_folder_holds(
    run: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = run
    both = tmp_path / "both"
    both.mkdir()
    (both / "matching.csv").write_bytes((out / "matching.csv").read_bytes())
    assert plot.main([str(both)]) == 0
    assert (both / "matching-unload.png").stat().st_size > 0
    assert not (both / "figure10.png").exists()
    from test_plot import records

    analysis.write_tables(both, records())
    assert plot.main([str(both)]) == 0
    printed = capsys.readouterr().out
    assert "figure10.png" in printed and "matching-preposted.png" in printed
    assert plot.main([str(tmp_path / "nowhere")]) == 1


def test_plot_module_help_exits_0() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "moped.plot", "--help"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "matching.csv" in r.stdout and "reductions.json" in r.stdout


def test_figure10_runs_under_each_engine_beside_the_baseline(
    run: tuple[Path, pd.DataFrame],
) -> None:
    out, _ = run
    f10 = pd.read_csv(out / "figure10_engines.csv")
    assert list(f10.columns) == list(_core.MATCHING_FIGURE10_CSV_HEADER)
    assert sorted(set(f10.engine)) == sorted(ENGINES)
    assert len(f10) == len(ENGINES) * 11
    assert (f10.messages_verified > 0).all()
    assert (f10[f10.engine == "software"].reduction == 0).all()
    engines = f10[f10.engine != "software"]
    assert (engines.match_searches > 0).all() and (engines.match_cycles > 0).all()
    # Figure 10's queues are a few entries deep at the matching MOPEDs and in the lists.
    # Every benchmark matched something: some search found its partner at position >= 1.
    assert (engines.moped_prq_depth_max + engines.moped_umq_depth_max >= 1).all()
    assert (engines.moped_prq_depth_max <= 64).all()
    assert (f10.software_prq_depth_max + f10.software_umq_depth_max >= 1).all()
    assert "## Figure 10 with each engine" in (out / "report.md").read_text()


def test_a_bad_engine_name_names_the_valid_ones(tmp_path: Path) -> None:
    out = tmp_path / "bad"
    with pytest.raises(moped.InputError) as e:
        experiments.matching(out, quick=True, engines=["fsm", "cma"], progress=False)
    message = str(e.value)
    assert "cma" in message
    for name in experiments.ENGINES:
        assert name in message, name
    assert not out.exists()
    with pytest.raises(moped.InputError, match="at least one"):
        experiments.matching(out, quick=True, engines=[], progress=False)
    with pytest.raises(TypeError, match="engines"):
        experiments.matching(out, engines=3)  # type: ignore[arg-type]
    with pytest.raises(moped.InputError, match="jobs"):
        experiments.matching(out, jobs=0)


def test_a_folder_holding_results_is_refused(run: tuple[Path, pd.DataFrame]) -> None:
    out, _ = run
    with pytest.raises(moped.InputError, match="not empty"):
        experiments.matching(out, quick=True, engines=["fsm"], progress=False)
    assert (out / "matching.csv").is_file()


def test_ctrl_c_stops_the_experiment_and_leaves_only_failed(tmp_path: Path) -> None:
    # Python's own Ctrl-C handler, as an interactive start installs it (a runner started
    # as a background job inherits SIGINT ignored).
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    out = tmp_path / "stopped"
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    try:
        timer.start()
        started = time.monotonic()
        # The full sweep takes minutes: only Ctrl-C ends it within seconds.
        with pytest.raises(KeyboardInterrupt):
            experiments.matching(out, jobs=1, progress=False)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert time.monotonic() - started < 30
    assert sorted(p.name for p in out.iterdir()) == ["FAILED"]
    assert "interrupted" in (out / "FAILED").read_text()
