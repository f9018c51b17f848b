"""The matching experiment from Python: the queue benchmarks under the software path and
two engines, the typed rows of matching.csv, reading them back, and the plots; the
microcoded engine's stream64 benchmark and its plot."""

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


@pytest.fixture(scope="module")
def microcoded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """A quick run of the microcoded engine alone, which writes stream64.csv. Apart from
    `run`, and without Figure 10, whose runs under this engine take minutes."""
    out = tmp_path_factory.mktemp("matching") / "microcoded"
    df = experiments.matching(
        out, quick=True, engines=["microcoded"], jobs=2, progress=False, figure10=False
    )
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
    for col in ("depth", "position", "iterations", "messages_verified", "ranks", "senders"):
        assert df[col].dtype == "int64", col
    for col in ("cycles", "engine_cycles", "mhz", "ns", "engine_ns"):
        assert df[col].dtype == "float64", col
    for col in ("total_cycles", "total_engine_cycles"):
        assert df[col].dtype == "Int64", col
    assert set(df["engine"]) == set(ENGINES)
    assert set(df["level"]) == {"cmp", "engine", "setting"}
    assert set(df["sources"]) == {"", "uniform", "skewed"}
    software = df[df["engine"] == "software"]
    assert set(software["level"]) == {"cmp"}
    assert software["engine_cycles"].isna().all()
    assert software["total_engine_cycles"].isna().all()
    engine_level = df[df["level"] == "engine"]
    assert set(engine_level["engine"]) == {"fsm", "cam"}
    assert engine_level["cycles"].isna().all() and engine_level["total_cycles"].isna().all()
    assert (engine_level["engine_cycles"] > 0).all()
    # Each engine at its own clock: the two-level queue's Fmax, fsm at the cores'.
    cam = df[(df["engine"] == "cam") & df["mhz"].notna()]
    assert set(cam["mhz"]) == {321.3}
    assert set(df[df["engine"] == "fsm"]["mhz"]) == {1000.0}
    timed = df[df["engine_ns"].notna()]
    assert (abs(timed["engine_ns"] - timed["engine_cycles"] * 1000 / timed["mhz"]) < 1e-6).all()
    setting = df[df["level"] == "setting"]
    assert (setting["benchmark"] == "preposted").all() and (setting["ns"] >= 200).all()


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
    preposted = df[(df["engine"] == "cam") & (df["benchmark"] == "preposted")]
    # On the CMP and at engine level alike, each with its own constant: the two levels
    # count different work per match.
    for level, cam in preposted.groupby("level"):
        within = cam[cam["depth"] <= 256]
        assert len(within) > 1, level
        assert within["engine_cycles"].nunique() == 1, level
        past = cam[cam["depth"] > 256]
        assert (past["engine_cycles"] > within["engine_cycles"].iloc[0]).all(), level


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


def test_a_folder_holding_other_results_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(moped.InputError, match="not empty"):
        experiments.matching(tmp_path, quick=True, engines=["fsm"], progress=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_ctrl_c_stops_the_experiment_and_keeps_its_finished_runs(tmp_path: Path) -> None:
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
    # FAILED, and the runs that finished, kept for the next run into the folder.
    kept = sorted(p.name for p in out.iterdir())
    assert kept[:1] == ["FAILED"] and "store.json" in kept
    assert set(kept) - {"FAILED", "store.json"} <= set(experiments.ENGINES)
    for run in out.glob("*/runs/*"):
        files = sorted(p.name for p in run.iterdir())
        finished = (run / "key.json").is_file() and (run / "record.json").is_file()
        assert finished or files == ["FAILED"], (run, files)  # the run Ctrl-C stopped
    assert not list(out.glob("*/*.csv")) and not (out / "matching.csv").exists()
    assert "interrupted" in (out / "FAILED").read_text()


def stream64_rows() -> pd.DataFrame:
    """A small stream64 frame by hand: two lists, a unit that takes 20 cycles per header
    and 12 per item beside ideal hardware's 8 and 8."""
    rows = []
    for items in (10, 30):
        for percent in range(10, 101, 10):
            traversed = max(1, items * percent // 100)
            cycles = 64 * (20 + 12 * traversed)
            ideal = 64 * (8 + 8 * traversed)
            rows.append(
                {
                    "engine": "microcoded",
                    "benchmark": "stream64",
                    "list_items": items,
                    "percent_traversed": percent,
                    "traversed": traversed,
                    "messages": 64,
                    "cycles": cycles,
                    "ideal_cycles": ideal,
                    "microseconds": cycles / 500,
                    "ideal_microseconds": ideal / 500,
                    "cycles_per_item": cycles / (64 * traversed),
                    "ideal_cycles_per_item": ideal / (64 * traversed),
                    "relative_to_ideal": cycles / ideal,
                    "header_cycles": 20.0,
                    "failed_item_cycles": 12.0,
                    "matched_item_cycles": 12.0,
                    "flush_cycles": 0.0,
                }
            )
    return pd.DataFrame(rows, columns=list(_core.MATCHING_STREAM64_CSV_HEADER))


def test_stream64_is_written_and_typed(microcoded: tuple[Path, pd.DataFrame]) -> None:
    out, _ = microcoded
    header = list(_core.MATCHING_STREAM64_CSV_HEADER)
    assert (out / "stream64.csv").read_text().splitlines()[0] == ",".join(header)
    s = moped.read_stream64(out)
    assert list(s.columns) == header == list(experiments.STREAM64_COLUMNS)
    pd.testing.assert_frame_equal(experiments.read_stream64(out / "stream64.csv"), s)
    for col in ("engine", "benchmark"):
        assert s[col].map(type).eq(str).all(), col
    ints = ("list_items", "percent_traversed", "traversed", "messages", "cycles", "ideal_cycles")
    for col in ints:
        assert s[col].dtype == "int64", col
    assert header[2:8] == list(ints)
    for col in header[8:]:
        assert s[col].dtype == "float64", col
    variants = {"microcoded", "microcoded-no-flush", "microcoded-no-cache"}
    baselines = {"embedded", "multithreaded-16"}
    assert set(s["engine"]) == variants | baselines and set(s["benchmark"]) == {"stream64"}
    # The processors' rows have their time only: the split is the unit's.
    cpus = s[s["engine"].isin(baselines)]
    assert cpus["flush_cycles"].isna().all() and (cpus["cycles"] > 0).all()
    # quick keeps the 3-, 10- and 30-item lists, each over 10 % to 100 % of the list.
    assert sorted(set(s["list_items"])) == [3, 10, 30]
    # Without the flush the item past the match costs nothing.
    no_flush = s[s["engine"] == "microcoded-no-flush"]
    assert (no_flush["flush_cycles"] == 0).all()
    unit = s[s["engine"] == "microcoded"]
    assert (no_flush["cycles"].to_numpy() < unit["cycles"].to_numpy()).all()
    assert sorted(set(s["percent_traversed"])) == list(range(10, 101, 10))
    assert (s["messages"] == 64).all()
    assert s["relative_to_ideal"].tolist() == pytest.approx(
        (s["cycles"] / s["ideal_cycles"]).tolist()
    )
    assert (s["ideal_cycles"] == 64 * (8 + 8 * s["traversed"])).all()
    for items, rows in s.groupby(["engine", "list_items"]):
        rows = rows.sort_values("traversed")
        assert rows["traversed"].is_monotonic_increasing, items
        assert rows["cycles"].is_monotonic_increasing, items
        assert rows["cycles"].iloc[-1] > rows["cycles"].iloc[0], items
    png = out / "matching-stream64.png"
    assert png.stat().st_size > 0 and png.read_bytes()[:8] == PNG
    assert "<svg" in (out / "matching-stream64.svg").read_text()


def test_read_stream64_refuses_what_is_not_stream64_csv(tmp_path: Path) -> None:
    with pytest.raises(moped.InputError, match="no such file.*microcoded"):
        moped.read_stream64(tmp_path)
    bad = tmp_path / "stream64.csv"
    bad.write_text("engine,benchmark\nmicrocoded,stream64\n")
    with pytest.raises(moped.InputError, match="lacks the columns list_items"):
        moped.read_stream64(bad)
    rows = stream64_rows().astype({"cycles": object})
    rows.loc[0, "cycles"] = "many"
    rows.to_csv(bad, index=False)
    with pytest.raises(moped.InputError, match="cannot read"):
        moped.read_stream64(bad)


def test_plot_matching_draws_stream64_from_a_frame_or_beside_matching_csv(
    microcoded: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    out, df = microcoded
    names = [p.name for p in plot.matching(df, tmp_path / "frame", stream64=stream64_rows())]
    assert names[-2:] == ["matching-stream64.png", "matching-stream64.svg"]
    assert (tmp_path / "frame" / "matching-stream64.png").read_bytes()[:8] == PNG
    # Without stream64.csv beside matching.csv (a run without microcoded) there is no
    # such plot.
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "matching.csv").write_bytes((out / "matching.csv").read_bytes())
    names = [p.name for p in plot.matching(alone / "matching.csv", alone)]
    assert "matching-stream64.png" not in names
    # With it there, the folder or its matching.csv draws it, as python -m moped.plot does.
    stream64_rows().to_csv(alone / "stream64.csv", index=False)
    for source in (alone, alone / "matching.csv"):
        names = [p.name for p in plot.matching(source, tmp_path / "beside")]
        assert "matching-stream64.svg" in names, source
    with pytest.raises(moped.InputError, match="no stream64 rows"):
        plot.matching(df, tmp_path / "bad", stream64=stream64_rows().iloc[0:0])
    with pytest.raises(moped.InputError, match="lack the columns"):
        plot.matching(df, tmp_path / "bad", stream64=stream64_rows().drop(columns=["cycles"]))
    with pytest.raises(moped.InputError, match="no such file"):
        plot.matching(df, tmp_path / "bad", stream64=tmp_path / "nowhere")
    with pytest.raises(TypeError, match="stream64"):
        plot.matching(df, tmp_path / "bad", stream64=3)


@pytest.fixture(scope="module")
def lhs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """A quick run of the software path with LHS alone, which writes lhs.csv."""
    out = tmp_path_factory.mktemp("matching") / "lhs"
    df = experiments.matching(
        out, quick=True, engines=["software-lhs"], jobs=2, progress=False, figure10=False
    )
    return out, df


def test_lhs_csv_is_written_typed_and_verified(lhs: tuple[Path, pd.DataFrame]) -> None:
    out, df = lhs
    assert set(df["engine"]) == {"software-lhs"}
    header = list(_core.MATCHING_LHS_CSV_HEADER)
    assert (out / "lhs.csv").read_text().splitlines()[0] == ",".join(header)
    rows = moped.read_lhs(out)
    assert list(rows.columns) == header == list(experiments.LHS_COLUMNS)
    pd.testing.assert_frame_equal(experiments.read_lhs(out / "lhs.csv"), rows)
    for col in ("queue", "prefetch", "layout"):
        assert rows[col].map(type).eq(str).all(), col
    for col in ("search_cycles", "search_cycles_per_entry"):
        assert rows[col].dtype == "float64", col
    for col in ("depth", "position", "cycles", "l1_misses", "prefetches_issued"):
        assert rows[col].dtype == "int64", col
    assert set(rows["layout"]) == {"list", "lhs-64", "lhs-16"}
    assert set(rows["prefetch"]) == {"none", "next_line", "stride"}
    # quick: 16, 64 and 256 messages, each received first and last.
    assert sorted(set(zip(rows["depth"], rows["position"], strict=True))) == [
        (16, 1), (16, 16), (64, 1), (64, 64), (256, 1), (256, 256)
    ]  # fmt: skip
    # Every message: the unexpected ones and the ready message.
    assert (rows["messages_verified"] == rows["depth"] + 1).all()
    assert rows[rows["position"] == 1]["search_cycles_per_entry"].isna().all()
    assert (rows[rows["prefetch"] == "none"]["prefetches_issued"] == 0).all()
    assert "## Unexpected-queue search with LHS" in (out / "report.md").read_text()


def test_lhs_searches_256_entries_faster_than_the_list(lhs: tuple[Path, pd.DataFrame]) -> None:
    """256 LH entries of a line (16 kB) stay in the 32 kB L1; the list's 256 records and
    their 256 payload buffers do not."""
    rows = moped.read_lhs(lhs[0]).set_index(["layout", "prefetch", "depth", "position"])
    per = rows["search_cycles_per_entry"]
    assert per[("lhs-64", "none", 256, 256)] < per[("list", "none", 256, 256)]
    assert (
        rows["l1_misses"][("lhs-64", "none", 256, 256)]
        < rows["l1_misses"][("list", "none", 256, 256)]
    )


def test_read_lhs_refuses_what_is_not_lhs_csv(tmp_path: Path) -> None:
    with pytest.raises(moped.InputError, match="no such file.*software-lhs"):
        moped.read_lhs(tmp_path)
    (tmp_path / "lhs.csv").write_text("queue,prefetch\nlist,none\n")
    with pytest.raises(moped.InputError, match="lacks the columns"):
        moped.read_lhs(tmp_path)
