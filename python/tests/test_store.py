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
