"""The LHS paper in its own setting from Python (``moped.experiments.lhs``): the rows of
lhs.csv for DIMMnet-2 and the emulated DIMMnet-3, typed and verified, the report leading
with the like-for-like speed-up, and overrides of the presets."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import moped
from moped import experiments


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("lhs") / "quick"
    return out, experiments.lhs(out, quick=True, jobs=2, progress=False)


def per_entry(df: pd.DataFrame, setting: str, condition: str, n: int = 256) -> float:
    row = df[
        (df["setting"] == setting)
        & (df["condition"] == condition)
        & (df["depth"] == n)
        & (df["position"] == n)
    ]
    assert len(row) == 1, (setting, condition)
    return float(row["search_ns_per_entry"].iloc[0])


def test_rows_cover_the_papers_conditions(run: tuple[Path, pd.DataFrame]) -> None:
    out, df = run
    pd.testing.assert_frame_equal(moped.read_lhs(out), df)
    assert set(df["setting"]) == {"dimmnet2", "dimmnet3"}
    conditions = set(df["condition"])
    assert {f"fig5-{k}" for k in range(1, 7)} <= conditions
    assert {f"fig6-{k}" for k in range(1, 5)} <= conditions
    assert {"nolhs", "nolhs-nohwp"} <= conditions
    for col in ("search_ns_per_entry", "core_ghz"):
        assert df[col].dtype == "float64", col
    for col in ("vl_commands", "flushes", "sw_prefetches", "lh_loads"):
        assert df[col].dtype == "int64", col
    # Every message: the unexpected ones and the zero-byte one that starts the timer.
    assert (df["messages_verified"] == df["depth"] + 1).all()
    # Without LHS each envelope searched is read through a VL command.
    nolhs = df[(df["condition"] == "nolhs") & (df["depth"] == 256) & (df["position"] == 256)]
    assert int(nolhs["vl_commands"].iloc[0]) > 256


def test_the_report_leads_with_the_like_for_like_speed_up(run: tuple[Path, pd.DataFrame]) -> None:
    out, df = run
    ratio = per_entry(df, "dimmnet2", "nolhs") / per_entry(df, "dimmnet2", "fig5-2")
    text = (out / "report.md").read_text()
    prose = [line for line in text.splitlines() if not line.startswith("|")]
    first = re.search(r"(\d+\.\d+)x", "\n".join(prose))
    assert first is not None
    assert float(first.group(1)) == pytest.approx(ratio, abs=0.006)
    # The two rows it compares share the hardware prefetcher.
    rows = df[(df["condition"].isin(["nolhs", "fig5-2"])) & (df["setting"] == "dimmnet2")]
    assert set(rows["prefetch"]) == {"stride"}


def test_overrides_reach_both_presets(tmp_path: Path) -> None:
    slow = experiments.lhs(
        tmp_path / "slow", quick=True, jobs=2, progress=False, set={"nic.vl_cycles": 90}
    )
    base = experiments.lhs(tmp_path / "base", quick=True, jobs=2, progress=False)
    assert per_entry(slow, "dimmnet2", "nolhs") > per_entry(base, "dimmnet2", "nolhs")
    assert per_entry(slow, "dimmnet2", "fig5-2") == per_entry(base, "dimmnet2", "fig5-2")
    with pytest.raises(moped.MopedError, match="nic.vl_cyles"):
        experiments.lhs(tmp_path / "bad", quick=True, progress=False, set={"nic.vl_cyles": 1})
    with pytest.raises(TypeError, match="set"):
        experiments.lhs(tmp_path / "bad2", quick=True, progress=False, set={"nic.mhz": [1]})
