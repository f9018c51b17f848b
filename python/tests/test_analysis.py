"""The Figure-10 analysis through Python: reductions, intervals, summaries, claims, the
report and the tables, on inputs whose results are computed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import moped
from moped import analysis


def rec(group: str, bench: str, design: str, seed: int, **metrics: float) -> dict:
    return {"benchmark": bench, "group": group, "design": design, "seed": seed, **metrics}


def test_one_seed_reduction() -> None:
    # baseline 200, design 50: ratio 0.25, reduction 0.75; one seed has no interval.
    df = analysis.reductions_frame(
        [rec("imb", "PP", "baseline", 1, cycles=200), rec("imb", "PP", "optcopy", 1, cycles=50)]
    )
    assert len(df) == 1
    row = df.iloc[0]
    assert (row.design, row.metric, row.n) == ("optcopy", "cycles", 1)
    assert (row.baseline, row.design_value, row.ratio, row.reduction) == (200, 50, 0.25, 0.75)
    assert math.isnan(row.ci_low) and math.isnan(row.ci_high) and math.isnan(row.std_dev)


def test_two_seeds_mean_and_student_t_interval() -> None:
    # Seed 1: 1 - 50/200 = 0.75; seed 2: 1 - 70/200 = 0.65. Mean 0.70, sample sd
    # 0.0707107, standard error 0.05, t(0.975, 1) = 12.7062047: half width 0.6353102.
    recs = [
        rec("imb", "PP", "baseline", 1, cycles=200),
        rec("imb", "PP", "baseline", 2, cycles=200),
        rec("imb", "PP", "basemoped", 1, cycles=50),
        rec("imb", "PP", "basemoped", 2, cycles=70),
    ]
    row = analysis.reductions_frame(recs).iloc[0]
    assert row.n == 2
    assert row.reduction == pytest.approx(0.70)
    assert row.std_dev == pytest.approx(0.0707107, abs=1e-7)
    assert row.ci_low == pytest.approx(0.0646898, abs=1e-7)
    assert row.ci_high == pytest.approx(1.3353102, abs=1e-7)
    assert list(row.seeds) == [1, 2]


def test_zero_baseline_is_nan_and_unknown_metrics_are_ignored() -> None:
    recs = [
        rec("npb", "FT", "baseline", 1, l2_misses_global=0, cycles=10, other=3),
        {
            "benchmark": "FT",
            "group": "npb",
            "design": "optcache",
            "seed": 1,
            "metrics": {"l2_misses_global": 4, "cycles": 5, "other": 1},
        },
    ]
    df = analysis.reductions_frame(recs)
    assert list(df.metric) == ["cycles", "l2_misses_global"]
    glob = df[df.metric == "l2_misses_global"].iloc[0]
    assert math.isnan(glob.reduction) and glob.n == 0
    assert analysis.reductions(recs)[1]["reduction"] is None


def test_records_from_a_dataframe() -> None:
    df = pd.DataFrame(
        [
            rec("imb", "XC", "baseline", 1, cycles=400.0, l1_misses=float("nan")),
            rec("imb", "XC", "optcache", 1, cycles=100.0, l1_misses=10.0),
        ]
    )
    df["workload"] = "xc-16k.toml"
    out = analysis.reductions_frame(df)
    # The baseline's NaN L1 count is dropped: only cycles pair up.
    assert list(out.metric) == ["cycles"]
    assert out.iloc[0].reduction == 0.75


def test_geometric_mean_and_range() -> None:
    # Ratios 0.25 (PP) and 0.64 (XC): geometric mean sqrt(0.16) = 0.4, a 60 % reduction.
    recs = [
        rec("imb", "PP", "baseline", 1, cycles=100),
        rec("imb", "PP", "optcopy", 1, cycles=25),
        rec("imb", "XC", "baseline", 1, cycles=100),
        rec("imb", "XC", "optcopy", 1, cycles=64),
    ]
    s = analysis.summaries_frame(recs).iloc[0]
    assert s.geomean_ratio == pytest.approx(0.4)
    assert s.geomean_reduction == pytest.approx(0.6)
    assert (s.min_reduction, s.min_benchmark) == (0.36, "XC")
    assert (s.max_reduction, s.max_benchmark) == (0.75, "PP")


def global_misses(basemoped_cg: float) -> list[dict]:
    """PP, XC, CG and MG with global L2 misses: baseline 100, OPTCOPY 40, BASEMOPED 120
    except CG's, given."""
    out = []
    for group, bench in (("imb", "PP"), ("imb", "XC"), ("npb", "CG"), ("npb", "MG")):
        base = basemoped_cg if bench == "CG" else 120
        for design, v in (("baseline", 100), ("basemoped", base), ("optcopy", 40)):
            out.append(rec(group, bench, design, 1, l2_misses_global=v))
    return out


def claim(claims: list[dict], cid: str) -> dict:
    return next(c for c in claims if c["id"] == cid)


def test_claim_that_holds() -> None:
    c = claim(analysis.claims(global_misses(basemoped_cg=130)), "c")
    assert c["verdict"] == "holds"
    # CG under BASEMOPED: 1 - 130/100 = -0.30.
    cg = next(e for e in c["evidence"] if e["label"].startswith("CG: BASEMOPED"))
    assert cg["value"] == pytest.approx(-0.30)
    assert cg["passes"] is True


def test_claim_that_does_not_hold_and_the_report_says_so() -> None:
    recs = global_misses(basemoped_cg=90)
    c = claim(analysis.claims(recs), "c")
    assert c["verdict"] == "does_not_hold"
    assert "CG: BASEMOPED" in c["explanation"]
    failed = [e["label"] for e in c["evidence"] if e["passes"] is False]
    assert failed == ["CG: BASEMOPED global L2 miss reduction (must be < 0)"]
    text = analysis.report(recs, notes=["a note"], explanations={"c": "Checked by hand."})
    assert "### (c) does not hold" in text
    assert "| CG: BASEMOPED global L2 miss reduction (must be < 0) | 10.0 % | **fail** |" in text
    assert "Checked by hand." in text
    assert "- a note" in text
    # Claims without their values are not measured, never silently passed.
    assert claim(analysis.claims(recs), "a")["verdict"] == "not_measured"


def test_report_order_is_stable() -> None:
    recs = [
        rec(g, b, d, 1, cycles=c)
        for g, b in (("imb-1m", "BC"), ("npb", "SP"), ("imb", "AA"), ("imb", "PP"))
        for d, c in (("baseline", 100), ("basemoped", 50), ("optcache", 40))
    ]
    a = analysis.report(recs)
    assert a == analysis.report(list(reversed(recs)))
    assert a.index("### IMB, 16 kB messages") < a.index("### NPB") < a.index("### IMB, 1 MB")
    table = a[a.index("### IMB, 16 kB") :]
    assert table.index("| PP |") < table.index("| AA |")
    assert "figure10.png" in a


def test_write_tables(tmp_path: Path) -> None:
    recs = [rec("imb", "PP", "baseline", 1, cycles=200), rec("imb", "PP", "optcopy", 1, cycles=50)]
    analysis.write_tables(tmp_path / "t", recs)
    csv = pd.read_csv(tmp_path / "t" / "reductions.csv")
    assert list(csv.columns[:11]) == [
        "group",
        "benchmark",
        "design",
        "metric",
        "baseline",
        "design_value",
        "ratio",
        "reduction",
        "ci_low",
        "ci_high",
        "n",
    ]
    assert csv.iloc[0].reduction == 0.75
    data = json.loads((tmp_path / "t" / "reductions.json").read_text())
    assert data[0]["reduction"] == 0.75 and data[0]["ci_low"] is None


def test_bad_records_raise() -> None:
    dup = [rec("imb", "PP", "baseline", 1, cycles=1)] * 2
    with pytest.raises(moped.MopedError, match="two records for imb PP baseline seed 1"):
        analysis.reductions(dup)
    with pytest.raises(moped.MopedError, match="lacks seed"):
        analysis.reductions([{"benchmark": "PP", "group": "imb", "design": "baseline"}])


def test_published_values_cite_the_paper() -> None:
    values = analysis.published_values()
    imb = next(v for v in values if v["id"] == "imb-cycles-optcopy")
    assert (imb["low"], imb["high"]) == (0.76, 0.94)
    assert "Section 6" in imb["source"]
    assert all(v["source"] for v in values)
