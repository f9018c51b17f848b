"""The catalogue (``moped info``, ``moped.info_config``, ``moped.info_stats``) against what
a run writes and what a config accepts."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from conftest import ROOT
from test_cli import run

import moped
from moped.config import default_values

PLACEHOLDER = {"{N}": r"\d+", "{state}": r"[A-Za-z_]+", "{event}": r"[A-Za-z_]+"}


def pattern(name: str) -> re.Pattern[str]:
    """The regular expression of a catalogue name; a distribution's lines follow ``::``."""
    rx = re.escape(name)
    for ph, sub in {**PLACEHOLDER, "{type}": r"[A-Za-z_]+"}.items():
        rx = rx.replace(re.escape(ph), sub)
    return re.compile(rx + r"(::.*)?")


def test_info_stats_json_lists_every_statistic_of_an_mpi_run(tmp_path: Path) -> None:
    r = run("info", "stats", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "moped-info-stats-1"
    patterns = [pattern(s["name"]) for s in doc["stats"]]
    for design in ("baseline", "optcopy"):
        out = tmp_path / design
        spec = str(ROOT / "workloads/imb/pingpong-16k.toml")
        args = ("mpi", "--workload", spec, "--protocol", design, "--iterations", "0.1")
        r = run(*args, "--out", str(out))
        assert r.returncode == 0, r.stderr
        with open(out / "stats.csv", newline="") as f:
            names = [row["name"] for row in csv.DictReader(f)]
        assert len(names) > 1000
        missing = [n for n in names if not any(p.fullmatch(n) for p in patterns)]
        assert not missing, missing[:10]


def test_info_stats_gives_kind_unit_runs_and_description() -> None:
    stats = {s["name"]: s for s in moped.info_stats()}
    hits = stats["system.cpu{N}.l2.hits"]
    assert (hits["kind"], hits["unit"]) == ("counter", "Count")
    assert "mpi:baseline" in hits["runs"] and "run:optcopy" in hits["runs"]
    assert hits["description"]
    assert stats["mpi.prq_depth"]["kind"] == "distribution"
    moped_only = stats["system.moped.completed"]["runs"]
    assert not any(r.endswith(":baseline") for r in moped_only), moped_only


def test_info_config_lists_every_key_with_its_default() -> None:
    params = {p["key"]: p for p in moped.info_config()}
    defaults = default_values()
    assert set(params) == set(defaults)
    assert params["l2.latency"]["default"] == "10"
    assert params["system.core_model"]["allowed"] == "blocking | mlp"
    assert all(p["description"] for p in params.values())
    r = run("info", "config")
    assert r.returncode == 0, r.stderr
    assert "| `l2.latency` | integer | `10` |" in r.stdout


def test_a_misspelt_key_lists_the_valid_keys_of_its_section() -> None:
    with pytest.raises(moped.ConfigError) as e:
        moped.SystemConfig(l2={"latncy": 3})
    msg = str(e.value)
    assert "l2.latncy" in msg
    assert "l2.assoc, l2.latency, l2.size_bytes" in msg
