"""Sweeps and the Figure-10 experiment, with the simulator replaced by a pure-Python fake
(``sweep_fakes.fake_run_workload``) so they run in milliseconds."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sweep_fakes

import moped
from moped import batch, experiments


@pytest.fixture
def fake_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "run_workload", sweep_fakes.fake_run_workload)


def tasks(specs: list[str], designs: tuple[str, ...] = experiments.DESIGNS) -> list[dict]:
    return [{"workload": s, "design": d, "seed": 1} for s in specs for d in designs]


class _Done:
    """A finished computation: only ``result()``."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class SubmitOnly:
    """The least an executor can be: ``submit`` returning something with ``result()``."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Any, *args: Any) -> _Done:
        self.submitted += 1
        try:
            return _Done(fn(*args))
        except Exception as e:
            return _Done(error=e)


def check_frame(df: pd.DataFrame, n: int) -> None:
    assert len(df) == n
    assert list(df.columns[:5]) == ["benchmark", "group", "design", "seed", "cycles"]
    for col in ("l1_misses", "l2_misses_global", "events", "host_seconds"):
        assert col in df.columns
    pp = df[(df.benchmark == "PP") & (df.design == "optcopy")].iloc[0]
    # The fake: 1000 baseline cycles x 0.2 for OPTCOPY, plus the seed.
    assert (pp.group, pp.cycles, pp.events) == ("imb", 201.0, 603)


def test_sweep_on_a_process_pool(fake_runner: None) -> None:
    specs = ["w/pp-16k.toml", "w/cg-S.toml"]
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        df = moped.sweep(tasks(specs), executor=ex)
    check_frame(df, 8)
    # Task order is kept.
    assert list(df.design[:4]) == list(experiments.DESIGNS)


def test_the_substitute_reaches_spawned_workers(fake_runner: None) -> None:
    # Spawned workers do not inherit the monkeypatch: the runner travels with each task.
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as ex:
        df = moped.sweep(tasks(["pp-16k.toml"]), executor=ex)
    check_frame(df, 4)


def test_sweep_default_executor(fake_runner: None) -> None:
    lines: list[str] = []
    df = moped.sweep(tasks(["pp-16k.toml"]), progress=lines.append)
    check_frame(df, 4)
    assert len(lines) == 4
    assert all(line.startswith(("[1/4] PP", "[2/4] PP", "[3/4] PP", "[4/4] PP")) for line in lines)


def test_sweep_with_an_executor_that_only_submits(fake_runner: None) -> None:
    ex = SubmitOnly()
    task = moped.Task(workload="bc-1m.toml", design="optcache", seed=3, iterations=0.5)
    df = moped.sweep([task, {"workload": "pp-16k.toml", "design": "baseline"}], executor=ex)
    assert ex.submitted == 2
    assert list(df.group) == ["imb-1m", "imb"]
    # BC at 1 MB: 15000 cycles x 0.19 x 0.5 + seed 3.
    assert df.iloc[0].cycles == pytest.approx(15000 * 0.19 * 0.5 + 3)


def test_a_failing_task_is_named(fake_runner: None) -> None:
    with pytest.raises(
        moped.SweepError, match=r"boom-16k.toml baseline seed 1: RuntimeError: simulated"
    ):
        moped.sweep(tasks(["pp-16k.toml", "boom-16k.toml"]), executor=SubmitOnly())
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        with pytest.raises(moped.SweepError, match="simulated failure in boom-16k.toml") as info:
            moped.sweep(tasks(["boom-16k.toml"], ("baseline",)), executor=ex)
    assert info.value.task is not None and info.value.task.design == "baseline"


def test_bad_tasks() -> None:
    with pytest.raises(TypeError, match="unknown task key"):
        moped.sweep([{"workload": "x", "design": "baseline", "seeds": 2}], executor=SubmitOnly())
    with pytest.raises(TypeError, match="needs `workload` and `design`"):
        moped.sweep([{"workload": "x"}], executor=SubmitOnly())
    assert len(moped.sweep([], executor=SubmitOnly())) == 0


def test_without_a_runner_the_error_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(moped._core, "run_workload", raising=False)
    with pytest.raises(moped.SweepError, match="no run_workload"):
        moped.sweep(tasks(["pp-16k.toml"], ("baseline",)), executor=SubmitOnly())


def make_workloads(root: Path, large: bool) -> Path:
    w = root / "workloads"
    (w / "imb").mkdir(parents=True)
    (w / "npb").mkdir()
    for b in ("pingpong", "pingping", "bcast", "reduce", "gather", "alltoall"):
        (w / "imb" / f"{b}-16k.toml").write_text("")
    for b in ("sp", "cg", "mg", "ft", "bt"):
        (w / "npb" / f"{b}-S.toml").write_text("")
    if large:
        for b in ("PingPong", "pingping", "bcast"):  # any case is found
            (w / "imb" / f"{b}-1m.toml").write_text("")
    return w


def test_figure10_experiment(
    fake_runner: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_workloads(tmp_path, large=True)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fig10"
    df = experiments.figure10(out, large=True, seeds=(1, 2), executor=SubmitOnly())
    assert len(df) == 14 * 4 * 2
    for name in (
        "records.json",
        "runs.csv",
        "reductions.csv",
        "reductions.json",
        "figure10.png",
        "figure10.svg",
        "report.md",
        "config.toml",
        "run.json",
    ):
        assert (out / name).is_file(), name
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 112 and err[-1].startswith("[112/112] BC (imb-1m) optcache seed 2")
    report = (out / "report.md").read_text()
    assert "- Seeds: 1, 2." in report
    assert "- fake runner" in report
    assert "112 runs; 672 messages verified byte for byte" in report
    red = pd.read_csv(out / "reductions.csv")
    pp = red[(red.benchmark == "PP") & (red.group == "imb") & (red.design == "optcopy")]
    # Cycles: seed 1: 1 - 201/1001, seed 2: 1 - 202/1002.
    cyc = pp[pp.metric == "cycles"].iloc[0]
    assert cyc.reduction == pytest.approx((1 - 201 / 1001 + 1 - 202 / 1002) / 2)
    assert cyc.n == 2 and cyc.ci_low < cyc.reduction < cyc.ci_high


def test_figure10_on_an_executor_keeps_its_folder_honest(
    fake_runner: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs made on the user's executor go into a hidden sibling folder that takes the
    # result folder's place only when Figure 10 is finished.
    make_workloads(tmp_path, large=False)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fig10"
    out.mkdir()
    (out / "report.md").write_text("an earlier run")
    with pytest.raises(moped.InputError, match="not empty"):
        experiments.figure10(out, executor=SubmitOnly(), progress=False)
    assert (out / "report.md").read_text() == "an earlier run"
    experiments.figure10(out, executor=SubmitOnly(), progress=False, force=True)
    assert "an earlier run" not in (out / "report.md").read_text()
    assert (out / "run.json").is_file() and (out / "records.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fig10.partial")]

    # A failed run leaves only FAILED, never the earlier complete-looking results.
    def cg_fails(spec: str, *args: Any) -> str:
        if Path(spec).name == "cg-S.toml":
            raise RuntimeError("boom")
        return sweep_fakes.fake_run_workload(spec, *args)

    monkeypatch.setattr(batch, "run_workload", cg_fails)
    with pytest.raises(moped.SweepError, match="boom"):
        experiments.figure10(out, executor=SubmitOnly(), progress=False, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["FAILED"]
    assert "RuntimeError: boom" in (out / "FAILED").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fig10.partial")]


def test_figure10_missing_specs_are_listed(tmp_path: Path) -> None:
    w = make_workloads(tmp_path, large=False)
    (w / "npb" / "cg-S.toml").unlink()
    with pytest.raises(moped.MopedError, match=r"npb/cg-S.toml, .*imb/pingpong-1m.toml"):
        experiments.figure10(tmp_path / "o", large=True, workloads_dir=w)


def test_figure10_without_workloads_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(moped.MopedError, match="no workloads/ folder"):
        experiments.figure10(tmp_path / "o")


def test_sweep_runs_the_simulator_in_a_process_pool(tmp_path: Path) -> None:
    """The real runner: the ANY_SOURCE GOAL schedule under every design, every message
    checked byte for byte."""
    goal = experiments.find_workloads_dir() / "goal" / "any_source.goal"
    tasks = [
        {"workload": str(goal), "design": d, "seed": 1, "out": str(tmp_path / d)}
        for d in experiments.DESIGNS
    ]
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as ex:
        df = moped.sweep(tasks, executor=ex)
    assert list(df.design) == list(experiments.DESIGNS)
    assert set(df.benchmark) == {"any_source"}
    # 3 requests and 3 answers, each checked at its receiver.
    assert list(df.messages_verified) == [6, 6, 6, 6]
    assert (df.cycles > 0).all()
    base = df[df.design == "baseline"].cycles.iloc[0]
    assert (df[df.design != "baseline"].cycles < base).all()
    assert (tmp_path / "optcopy" / "stats.txt").is_file()


def test_figure10_sensitivity_needs_the_simulators_pool(tmp_path: Path) -> None:
    with pytest.raises(moped.MopedError, match="sensitivity runs on the simulator's own pool"):
        experiments.figure10(tmp_path / "o", executor=SubmitOnly(), sensitivity=True)
    assert not (tmp_path / "o").exists()
