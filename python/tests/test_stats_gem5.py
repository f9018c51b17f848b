"""gem5-format stats.txt through the crate's reader, and gem5 runs compared with embedded
runs (``moped.read_stats``, ``moped.read_stats_txt``, ``moped.compare``)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

import moped

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "stats"
GEM5 = FIXTURES / "gem5-two-dumps.txt"
EMBEDDED = FIXTURES / "pingpong-16k-optcopy.txt"

CONFIG_INI = """\
[system.ruby]
type=RubySystem
clk_domain=system.ruby.clk_domain

[system.ruby.clk_domain]
type=SrcClockDomain
clock=1000
"""


def test_read_stats_last_dump_by_default() -> None:
    df = moped.read_stats(GEM5)
    assert list(df.columns) == moped.gem5.STATS_COLUMNS
    assert set(df["dump"]) == {1}
    by_name = df.set_index("name")
    assert by_name.loc["simTicks", "value"] == 139_820_000
    assert by_name.loc["simFreq", "unit"] == "(Tick/Second)"
    assert by_name.loc["simTicks", "description"] == "Number of ticks simulated"
    assert by_name.loc["simTicks", "line"] == 291
    load = by_name.loc["system.ruby.L2Cache_Controller.Load::1"]
    assert (load["value"], load["pdf"], load["cdf"]) == (1502, 25.54, 51.21)
    assert by_name.loc["system.ruby.L2Cache_Controller.Load::total", "value"] == 5882
    assert math.isnan(by_name.loc["system.ruby.hit_latency_hist_seqr::mean", "value"])
    hist = "system.ruby.MachineType.Directory.miss_mach_latency_hist_seqr"
    assert by_name.loc[f"{hist}::samples", "value"] == 520
    buckets = [by_name.loc[f"{hist}::{i}", "value"] for i in range(10)]
    assert buckets == [0, 0, 410, 95, 10, 5, 0, 0, 0, 0]
    l1 = df[df["name"].str.match(r"system\.ruby\.l2_cntrl\d+\.L1Dcache\.m_demand_misses$")]
    assert len(l1) == 16
    assert l1["value"].sum() == 540


def test_read_stats_dumps() -> None:
    first = moped.read_stats(GEM5, dump=0).set_index("name")
    assert first.loc["simTicks", "value"] == 60_000_000
    assert "system.ruby.MachineType.L2Cache.miss_mach_latency_hist_seqr::samples" not in first.index
    both = moped.read_stats(GEM5, dump=None)
    assert sorted(set(both["dump"])) == [0, 1]
    ticks = both[both["name"] == "simTicks"]["value"].tolist()
    assert ticks == [60_000_000, 139_820_000]
    assert moped.read_stats(GEM5, dump=-2).equals(moped.read_stats(GEM5, dump=0))
    with pytest.raises(moped.StatsError, match="has no dump 2: it holds 2"):
        moped.read_stats(GEM5, dump=2)
    assert moped.read_stats_txt(GEM5)["simTicks"] == 60_000_000
    assert moped.read_stats_txt(GEM5, dump=-1)["simTicks"] == 139_820_000


def test_read_stats_of_a_run_matches_its_result(small_program: Path, tmp_path: Path) -> None:
    res = moped.run(small_program, config={"system.cores": 2}, out=tmp_path / "run")
    df = moped.read_stats(tmp_path / "run" / "stats.txt")
    # An empty distribution's mean and deviation are NaN in both, as gem5 prints them.
    assert dict(zip(df["name"], df["value"], strict=True)) == pytest.approx(
        res.flat, abs=1e-6, nan_ok=True
    )
    units = dict(zip(df["name"], df["unit"], strict=True))
    assert units["sim.cycles"] == "Cycle"


def test_read_stats_errors_name_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "stats.txt"
    lines = GEM5.read_text().splitlines()
    lines[5] = lines[5].replace("1000000000000", "1e12x")
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(moped.StatsError, match=r"stats\.txt:6:42: expected a number"):
        moped.read_stats(bad)
    with pytest.raises(moped.MopedError, match="stats.txt:6:42"):
        moped.read_stats_txt(bad)
    with pytest.raises(moped.StatsError, match="nowhere.txt: cannot read"):
        moped.read_stats(tmp_path / "nowhere.txt")


def gem5_run(tmp_path: Path, stats: str | None = None) -> Path:
    d = tmp_path / "m5out"
    d.mkdir()
    (d / "stats.txt").write_text(stats if stats is not None else GEM5.read_text())
    (d / "config.ini").write_text(CONFIG_INI)
    return d


def test_compare_fixture_runs(tmp_path: Path) -> None:
    gem5 = gem5_run(tmp_path)
    emb = tmp_path / "embedded"
    emb.mkdir()
    shutil.copy(EMBEDDED, emb / "stats.txt")
    (emb / "stats.json").write_text('{"format": "moped-stats-1"}')
    df = moped.compare(gem5, emb)
    rows = df.set_index("metric")
    assert list(rows.index[:10]) == [
        "cycles",
        "l1_misses",
        "l2_misses",
        "l2_misses_private_cores",
        "l2_misses_global_cores",
        "l2_misses_upgrade",
        "moped_misses_other_cache",
        "moped_misses_memory",
        "l2_misses_private",
        "l2_misses_global",
    ]
    assert rows.loc["cycles", "embedded"] == 133_991
    assert rows.loc["cycles", "gem5"] == 139_817
    assert rows.loc["cycles", "difference"] == 5826
    assert rows.loc["cycles", "relative_pct"] == pytest.approx(100 * 5826 / 139_817)
    assert rows.loc["l2_misses_global_cores", "relative_pct"] == pytest.approx(-100 * 8 / 520)
    assert not bool(rows.loc["l2_misses_private_cores", "within"])
    # Figure 10's global L2 misses: the MOPEDs' (546 and 540) with the cores'.
    assert (rows.loc["l2_misses_global", "embedded"], rows.loc["l2_misses_global", "gem5"]) == (
        1074,
        1060,
    )
    assert bool(rows.loc["l1_misses", "within"])
    assert rows.loc["l2_misses_upgrade", "gem5"] == 9
    assert df.attrs["tolerance_pct"] == 10.0
    assert df.attrs["gem5"]["dumps"] == 2
    # Cycles from simTicks over the Ruby clock when MopedSystem's counter is missing.
    lines = [line for line in GEM5.read_text().splitlines() if ".cycles " not in line]
    shutil.rmtree(gem5)
    gem5 = gem5_run(tmp_path, "\n".join(lines) + "\n")
    rows = moped.compare(gem5, emb, tolerance=1.0, dump=-1).set_index("metric")
    assert rows.loc["cycles", "gem5"] == 139_820
    assert "Ruby clock period (1000 ticks" in rows.loc["cycles", "gem5_source"]
    assert not bool(rows.loc["cycles", "within"])


def test_compare_with_a_simulated_run(small_program: Path, tmp_path: Path) -> None:
    res = moped.run(small_program, config={"system.cores": 2}, out=tmp_path / "run")
    df = moped.compare(gem5_run(tmp_path), tmp_path / "run", tolerance=25).set_index("metric")
    flat = res.flat
    assert df.loc["cycles", "embedded"] == res.cycles
    assert df.loc["l1_misses", "embedded"] == flat["system.total.l1d.misses"]
    assert df.loc["l2_misses_global_cores", "embedded"] == flat["system.total.l2.misses_memory"]
    # A program without MOPEDs: Figure 10's global L2 misses are the cores' alone.
    assert df.loc["moped_misses_memory", "embedded"] == 0
    assert df.loc["l2_misses_global", "embedded"] == flat["system.total.l2.misses_memory"]
    assert df.loc["l1_misses", "gem5"] == 540
    for metric, row in df.iterrows():
        if row["gem5"]:
            expected = 100 * (row["gem5"] - row["embedded"]) / row["gem5"]
            assert row["relative_pct"] == pytest.approx(expected), metric
            assert bool(row["within"]) == (abs(expected) <= 25), metric


def test_compare_errors(tmp_path: Path) -> None:
    with pytest.raises(moped.StatsError, match="--gem5 .*nothing: no such folder"):
        moped.compare(tmp_path / "nothing", tmp_path)
    gem5 = gem5_run(tmp_path)
    with pytest.raises(moped.StatsError, match="this is a gem5 run, not an embedded one"):
        moped.compare(gem5, gem5)


GEM5_RUN = FIXTURES.parent / "gem5-pingpong-16k-optcopy"


def test_host_speed_of_a_gem5_run_and_an_embedded_run(tmp_path: Path) -> None:
    g = moped.host_speed(GEM5_RUN)
    assert g["host"] == "gem5"
    assert g["cycles"] == 135_250
    assert (g["messages_verified"], g["bytes_verified"]) == (148, 327_680)
    assert g["messages"] > 0 and g["events"] > 0
    assert g["cycles_per_second"] == pytest.approx(g["cycles"] / g["host_seconds"])
    emb = tmp_path / "embedded"
    emb.mkdir()
    shutil.copy(EMBEDDED, emb / "stats.txt")
    e = moped.host_speed(emb)
    assert e["host"] == "embedded"
    assert (e["cycles"], e["messages_verified"], e["bytes_verified"]) == (133_991, 148, 327_680)
    assert e["messages_per_second"] == pytest.approx(e["messages"] / e["host_seconds"])


def test_speed_ratio_of_gem5_to_the_embedded_simulator(tmp_path: Path) -> None:
    emb = tmp_path / "embedded"
    emb.mkdir()
    shutil.copy(EMBEDDED, emb / "stats.txt")
    r = moped.speed_ratio(GEM5_RUN, emb)
    g, e = moped.host_speed(GEM5_RUN), moped.host_speed(emb)
    assert r["gem5"] == g and r["embedded"] == e
    assert r["host_seconds"] == pytest.approx(g["host_seconds"] / e["host_seconds"])
    assert r["cycles_per_second"] == pytest.approx(e["cycles_per_second"] / g["cycles_per_second"])
    # Two embedded runs, or runs of different traffic, have no ratio to quote.
    with pytest.raises(moped.StatsError, match="expected a gem5 run, then an embedded run"):
        moped.speed_ratio(emb, emb)
    other = tmp_path / "other"
    other.mkdir()
    text = (emb / "stats.txt").read_text()
    name = "mpi.messages_verified"
    line = next(x for x in text.splitlines() if x.startswith(name + " "))
    value = line.split()[1]
    (other / "stats.txt").write_text(text.replace(line, line.replace(value, "147", 1)))
    with pytest.raises(moped.StatsError, match="not the same traffic"):
        moped.speed_ratio(GEM5_RUN, other)


def test_host_speed_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(moped.StatsError, match="stats.txt: cannot read"):
        moped.host_speed(tmp_path)
    shutil.copy(GEM5_RUN / "stats.txt", tmp_path / "stats.txt")
    (tmp_path / "moped.json").write_text("{not json")
    with pytest.raises(moped.StatsError, match="moped.json: cannot read"):
        moped.host_speed(tmp_path)
    (tmp_path / "moped.json").write_text('{"stats": []}')
    with pytest.raises(moped.StatsError, match="moped.json: no statistic sim.events"):
        moped.host_speed(tmp_path)


def test_compare_a_real_gem5_run(tmp_path: Path) -> None:
    emb = tmp_path / "embedded"
    emb.mkdir()
    shutil.copy(EMBEDDED, emb / "stats.txt")
    rows = moped.compare(GEM5_RUN, emb).set_index("metric")
    # The embedded fixture is the same program from an earlier version (528 misses); the
    # recorded gem5 run is this version's (564, as tests/compare.rs simulates it).
    for metric in ("l1_misses", "l2_misses", "l2_misses_global_cores"):
        assert (rows.loc[metric, "gem5"], rows.loc[metric, "embedded"]) == (564, 528), metric
    assert rows.loc["moped_line_reads", "gem5"] == 5220
