"""The results store: Figure 10 run again into its folder reuses its runs, and
``moped.load_results`` reads the folder's table of runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

import moped
from moped import experiments

# A hundredth of the iterations without warm-up: every benchmark and design, in seconds.
SMALL = {"iteration_scale": 0.01, "config": {"workload": {"warmup": False}}}


def test_figure10_again_reuses_its_runs_and_the_table_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "f10"
    workloads = ROOT / "workloads"
    first = experiments.figure10(out, progress=False, workloads_dir=workloads, **SMALL)
    df = moped.load_results(out)
    assert len(df) == len(first) == 44
    assert not df["reused"].any()
    assert set(df["design"]) == set(moped.DESIGNS)
    assert (df["seed"] == 1).all() and (df["iterations"] == 0.01).all()
    assert (df["workload.warmup"] == False).all()  # noqa: E712 (a column of bools)
    assert (df["l2.latency"] == 10).all() and df["cycles"].dtype == "int64"
    assert df["key"].str.len().eq(64).all() and df["key"].is_unique

    experiments.figure10(out, progress=False, workloads_dir=workloads, **SMALL)
    again = moped.load_results(out)
    assert again["reused"].all()
    assert list(again["cycles"]) == list(df["cycles"])
    assert list(again["key"]) == list(df["key"])
    assert "44 of the runs were taken from" in (out / "report.md").read_text()

    experiments.figure10(out, progress=False, workloads_dir=workloads, fresh=True, **SMALL)
    assert not moped.load_results(out)["reused"].any()


def test_a_folder_without_a_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(moped.InputError, match="no runs.csv"):
        moped.load_results(tmp_path)


def test_matching_again_reuses_its_runs_and_the_table_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "matching"
    small = {"quick": True, "engines": ["software", "alpu"], "figure10": False}
    lines: list[str] = []
    first = experiments.matching(out, progress=lines.append, **small)
    df = moped.load_results(out)
    assert len(df) == 46 and not df["reused"].any()
    assert set(df["design"]) == {"baseline", "basemoped"}
    assert df["folder"].str.startswith(("software/runs/", "alpu/runs/")).all()
    assert (df["moped.matcher"] == "alpu").sum() == 23
    assert df["cycles"].dtype == "int64" and df["key"].is_unique
    assert len(lines) == 46 and lines[-1].startswith("[ 46/46]")

    lines.clear()
    again = experiments.matching(out, progress=lines.append, **small)
    assert moped.load_results(out)["reused"].all()
    assert lines[-1] == (
        f"matching: reused 46 runs from the earlier results in {out} (fresh=True runs them all)"
    )
    assert again.equals(first), "the same rows from the reused runs"
    experiments.matching(out, progress=False, fresh=True, **small)
    assert not moped.load_results(out)["reused"].any()


def test_engines_folder_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "engines"
    small = {"quick": True, "schemes": ["base"], "only": "cmp", "figure10": False}
    experiments.engines(out, progress=False, **small)
    df = moped.load_results(out)
    assert len(df) == 24 and set(df["design"]) == {"optcopy"}
    assert (df["moped.engines"] == 1).sum() == 12 and (df["moped.engines"] == 2).sum() == 12
    experiments.engines(out, progress=False, **small)
    assert moped.load_results(out)["reused"].all()


def _sweep_tasks(root: Path) -> list[dict[str, object]]:
    spec = str(root / "workloads" / "imb" / "pingpong-16k.toml")
    return [
        {"workload": spec, "design": d, "config": {"l2.latency": n}, "iterations": 0.05}
        for d in ("baseline", "optcopy")
        for n in (10, 20)
    ]


def test_a_sweep_into_a_folder_is_stored_and_reused(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    tasks = _sweep_tasks(ROOT)
    first = moped.sweep(tasks, out=out)
    assert list(first["reused"]) == [False] * 4
    df = moped.load_results(out)
    assert len(df) == 4 and df["key"].is_unique
    assert sorted(df["l2.latency"]) == [10, 10, 20, 20]
    assert df["folder"].str.match(r"runs/pingpong-16k-(baseline|optcopy)-s1-[0-9a-f]{12}$").all()
    assert (out / "store.json").is_file() and (out / "run.json").is_file()

    lines: list[str] = []
    # One task more, and one twice: three taken from the store, the new one run once.
    more = [*tasks, {**tasks[0], "config": {"l2.latency": 30}}, tasks[1]]
    again = moped.sweep(more, out=out, progress=lines.append)
    assert list(again["reused"]) == [True, True, True, True, False, True]
    assert list(again["cycles"][:4]) == list(first["cycles"])
    assert again["cycles"][5] == first["cycles"][1]
    assert "sweep: reused 4 of 5 runs" in lines[-1]
    assert len(moped.load_results(out)) == 5, "a row per run, the duplicate once"

    fresh = moped.sweep(tasks, out=out, fresh=True)
    assert not fresh["reused"].any()
    assert len(moped.load_results(out)) == 4, "the folder holds this sweep's runs"


def test_a_sweep_folder_is_refused_to_another_experiment(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    moped.sweep(_sweep_tasks(ROOT)[:1], out=out)
    with pytest.raises(moped.InputError, match="is not empty"):
        experiments.matching(out, quick=True, engines=["software"], figure10=False)
    with pytest.raises(moped.SweepError, match="a task's own out and the sweep's out"):
        moped.sweep([{**_sweep_tasks(ROOT)[0], "out": str(tmp_path / "x")}], out=out)


def test_a_parquet_copy_where_pyarrow_is_installed(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pandas as pd

    out = tmp_path / "sweep"
    moped.sweep(_sweep_tasks(ROOT)[:2], out=out)
    parquet = pd.read_parquet(out / "runs.parquet")
    csv = moped.load_results(out)
    assert list(parquet.columns) == list(csv.columns)
    assert list(parquet["cycles"]) == list(csv["cycles"])
    assert parquet["cycles"].dtype == csv["cycles"].dtype
