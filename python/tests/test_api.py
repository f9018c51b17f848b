"""The Python API: runs, results, configs, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import moped


def small_config() -> moped.SystemConfig:
    return moped.SystemConfig(system={"cores": 2})


def test_run_small_program(small_program: Path) -> None:
    res = moped.run(small_program, config=small_config())
    assert res.cycles > 0
    total = res.stats["system"]["total"]
    # Four accesses, all first touches of their lines: every one misses the L1 and the L2.
    assert total["l1d"]["misses"] == total["l2"]["misses"] + total["l2"]["hits"]
    assert total["l2"]["misses"] == total["l2"]["misses_memory"] + total["l2"][
        "misses_other_cache"
    ] + res.flat.get("system.total.l2.misses_upgrade", 0)
    assert total["l2"]["misses"] >= 4
    assert res.flat["sim.cycles"] == res.cycles
    per_core = sum(res.flat[f"system.cpu{c}.l1d.misses"] for c in range(2))
    assert per_core == total["l1d"]["misses"]
    summary = res.miss_summary()
    assert summary["cycles"] == res.cycles


def test_to_pandas(small_program: Path) -> None:
    res = moped.run(small_program, config={"system.cores": 2})
    df = res.to_pandas()
    assert list(df.columns) == ["name", "value", "unit", "description"]
    assert len(df) == len(res.flat)
    row = df[df["name"] == "system.total.l1d.misses"].iloc[0]
    assert row["value"] == res.flat["system.total.l1d.misses"]
    assert row["unit"]
    assert row["description"]


def test_run_writes_outputs(small_program: Path, tmp_path: Path) -> None:
    out = tmp_path / "res"
    res = moped.run(small_program, config=small_config(), out=out)
    for name in ("stats.txt", "stats.json", "stats.csv", "config.toml"):
        assert (out / name).is_file(), name
    text_stats = moped.read_stats_txt(out / "stats.txt")
    assert text_stats["system.total.l1d.misses"] == res.flat["system.total.l1d.misses"]
    again = moped.SystemConfig.from_file(out / "config.toml")
    assert again == small_config()


def test_run_refuses_a_folder_holding_results_and_marks_failures(
    small_program: Path, tmp_path: Path
) -> None:
    # Issue 24: results were merged into a non-empty folder, and a failed run left an
    # earlier run's complete-looking stats.
    out = tmp_path / "res"
    moped.run(small_program, config=small_config(), out=out)
    before = (out / "stats.txt").read_text()
    with pytest.raises(moped.MopedError, match="not empty"):
        moped.run(small_program, config=small_config(), out=out)
    assert (out / "stats.txt").read_text() == before
    assert (out / "run.json").is_file()
    bad = tmp_path / "bad"
    bad.mkdir()
    with pytest.raises(moped.MopedError):
        moped.run(tmp_path / "missing.toml", config=small_config(), out=bad)
    assert sorted(p.name for p in bad.iterdir()) == ["FAILED"]
    # With force the folder's contents are replaced.
    (out / "stats.txt").write_text("stale")
    again = moped.run(small_program, config=small_config(), out=out, force=True)
    assert f"{again.cycles}" in (out / "stats.txt").read_text()


def test_read_stats_txt_unreadable_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "stats.txt"
    with pytest.raises(moped.MopedError, match="nowhere/stats.txt: cannot read"):
        moped.read_stats_txt(missing)
    binary = tmp_path / "stats.txt"
    binary.write_bytes(b"\xff\xfe\x00not utf-8")
    with pytest.raises(moped.MopedError, match="stats.txt: cannot read"):
        moped.read_stats_txt(binary)


def test_run_is_deterministic(small_program: Path) -> None:
    a = moped.run(small_program, config=small_config(), seed=3)
    b = moped.run(small_program, config=small_config(), seed=3)
    assert a.cycles == b.cycles
    # repr, so that the NaN mean of a distribution without samples equals itself.
    assert {k: repr(v) for k, v in a.flat.items() if "host" not in k} == {
        k: repr(v) for k, v in b.flat.items() if "host" not in k
    }


def test_config_defaults_are_table1() -> None:
    cfg = moped.SystemConfig()
    assert cfg["system.cores"] == 16
    assert cfg["l2.latency"] == 10
    assert cfg["l1.latency"] == 1
    assert cfg["memory.latency"] == 35


def test_config_overrides_nested_and_dotted() -> None:
    a = moped.SystemConfig(l2={"latency": 12})
    b = moped.SystemConfig(**{"l2.latency": 12})
    assert a["l2.latency"] == 12
    assert a == b
    assert "latency = 12" in a.to_toml()
    c = a.replace(memory={"latency": 50})
    assert c["memory.latency"] == 50
    assert c["l2.latency"] == 12


def test_config_unknown_key_names_its_path() -> None:
    with pytest.raises(moped.ConfigError, match=r"l2\.latncy"):
        moped.SystemConfig(l2={"latncy": 12})
    with pytest.raises(moped.ConfigError, match="nosuchsection"):
        moped.SystemConfig(nosuchsection={"x": 1})


def test_config_bad_value() -> None:
    with pytest.raises(moped.ConfigError):
        moped.SystemConfig(l2={"latency": "slow"})


def test_table1_file_matches_defaults(root: Path) -> None:
    assert moped.SystemConfig.from_file(root / "configs" / "table1.toml") == moped.SystemConfig()


def test_exception_hierarchy() -> None:
    for exc in (
        moped.ConfigError,
        moped.ProtocolError,
        moped.ProgramError,
        moped.SimulationError,
    ):
        assert issubclass(exc, moped.MopedError)
    assert issubclass(moped.MopedError, Exception)


def test_program_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[core]]\ncores = [0]\nops = '''\nfly 0x10\n'''\n")
    with pytest.raises(moped.ProgramError, match=r"bad\.toml:4:1"):
        moped.run(bad, config=small_config())


def test_missing_program_file(tmp_path: Path) -> None:
    with pytest.raises(moped.MopedError):
        moped.run(tmp_path / "nope.toml")


def test_garbage_program(tmp_path: Path) -> None:
    bad = tmp_path / "garbage.toml"
    bad.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(moped.MopedError):
        moped.run(bad)


def test_unknown_protocol(small_program: Path) -> None:
    with pytest.raises(moped.ProtocolError, match="baseline"):
        moped.run(small_program, config=small_config(), protocol="nope")


def test_protocol_table() -> None:
    assert moped.protocol_names()[:4] == ["baseline", "basemoped", "optcopy", "optcache"]
    md = moped.protocol_table("baseline")
    assert "IS" in md
    assert "|" in md


def test_lint_protocol(root: Path, tmp_path: Path) -> None:
    moped.lint_protocol(root / "protocols" / "baseline" / "L2Cache.sm")
    bad = tmp_path / "Bad.sm"
    bad.write_text('machine(L2Cache, desc="x");\ntransition(Q, Load) { nope; }\n')
    with pytest.raises(moped.ProtocolError, match=r"Bad\.sm:\d+:\d+"):
        moped.lint_protocol(bad)


def test_random_test() -> None:
    report = moped.random_test(cores=4, checks=200, seed=1)
    assert report["checks_completed"] >= 200
    assert report["mismatches"] == 0
    assert report["prefetches_issued"] == 0


def test_random_test_with_the_l1_prefetcher() -> None:
    report = moped.random_test(cores=4, checks=2000, seed=1, prefetch="next_line")
    assert report["mismatches"] == 0
    assert report["prefetches_issued"] > 0
    with pytest.raises(moped.ConfigError, match=r"l1\.prefetch"):
        moped.random_test(prefetch="sideways")


def test_random_test_with_flushes_and_software_prefetches() -> None:
    report = moped.random_test(cores=4, checks=2000, seed=1, cache_ops=True)
    assert report["mismatches"] == 0
    assert report["flushes"] > 0 and report["sw_prefetches"] > 0
    assert moped.random_test(cores=4, checks=200, seed=1)["flushes"] == 0
    with pytest.raises(TypeError, match="cache_ops"):
        moped.random_test(cache_ops="yes")  # type: ignore[arg-type]


def test_version() -> None:
    assert moped.__version__


def test_example_workloads_run(root: Path) -> None:
    res = moped.run(root / "workloads" / "examples" / "pingpong.toml")
    assert res.stats["system"]["total"]["l2"]["misses_other_cache"] > 0


@pytest.mark.slow
def test_stream_example(root: Path) -> None:
    res = moped.run(root / "workloads" / "examples" / "stream.toml")
    assert res.stats["system"]["total"]["l1d"]["misses"] > 0
