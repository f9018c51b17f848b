"""Sweeps and the Figure-10 experiment, with the simulator replaced by a pure-Python fake
(``sweep_fakes.fake_run_workload``) so they run in milliseconds; and sweeps of small
programs and GOAL schedules on the simulator itself."""

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


def write_specs(root: Path, *names: str) -> list[str]:
    """Spec files for the fake, which reads only their names; the sweep reads them to tell
    an MPI workload from a program."""
    paths = []
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(sweep_fakes.SPEC_TEXT)
        paths.append(str(p))
    return paths


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
    assert (pp.group, pp.cycles, pp.events) == ("imb", 201, 603)
    # The fake sends its counts as floats, as the simulator does: they come back whole.
    for col in ("seed", "cycles", "l1_misses", "l2_misses_global", "events"):
        assert df[col].dtype == "int64", col
    assert df.moped_prq_depth_mean.dtype == "float64"
    assert df.host_seconds.dtype == "float64"
    assert list(df.notes.unique()) == ["fake runner"]
    assert df.iterations.isna().all()


def test_sweep_on_a_process_pool(fake_runner: None, tmp_path: Path) -> None:
    specs = write_specs(tmp_path, "w/pp-16k.toml", "w/cg-S.toml")
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        df = moped.sweep(tasks(specs), executor=ex)
    check_frame(df, 8)
    # Task order is kept.
    assert list(df.design[:4]) == list(experiments.DESIGNS)


def test_the_substitute_reaches_spawned_workers(fake_runner: None, tmp_path: Path) -> None:
    # Spawned workers do not inherit the monkeypatch: the runner travels with each task.
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as ex:
        df = moped.sweep(tasks(write_specs(tmp_path, "pp-16k.toml")), executor=ex)
    check_frame(df, 4)


def test_sweep_default_executor(fake_runner: None, tmp_path: Path) -> None:
    lines: list[str] = []
    df = moped.sweep(tasks(write_specs(tmp_path, "pp-16k.toml")), progress=lines.append)
    check_frame(df, 4)
    assert len(lines) == 4
    assert all(line.startswith(("[1/4] PP", "[2/4] PP", "[3/4] PP", "[4/4] PP")) for line in lines)


def test_sweep_with_an_executor_that_only_submits(fake_runner: None, tmp_path: Path) -> None:
    ex = SubmitOnly()
    bc, pp = write_specs(tmp_path, "bc-1m.toml", "pp-16k.toml")
    task = moped.Task(workload=bc, design="optcache", seed=3, iterations=0.5)
    df = moped.sweep([task, {"workload": pp, "design": "baseline"}], executor=ex)
    assert ex.submitted == 2
    assert list(df.group) == ["imb-1m", "imb"]
    # BC at 1 MB: 15000 cycles x 0.19 x 0.5 + seed 3.
    assert df.iloc[0].cycles == pytest.approx(15000 * 0.19 * 0.5 + 3)
    # Each row says what produced it.
    assert list(df.seed) == [3, 1]
    assert df.iterations.iloc[0] == 0.5 and pd.isna(df.iterations.iloc[1])
    assert list(df.workload) == [bc, pp]
    assert list(df.notes) == ["fake runner", "fake runner"]


def test_a_failing_task_is_named(fake_runner: None, tmp_path: Path) -> None:
    pp, boom = write_specs(tmp_path, "pp-16k.toml", "boom-16k.toml")
    with pytest.raises(
        moped.SweepError, match=r"boom-16k.toml baseline seed 1: RuntimeError: simulated"
    ):
        moped.sweep(tasks([pp, boom]), executor=SubmitOnly())
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        with pytest.raises(moped.SweepError, match="simulated failure in boom-16k.toml") as info:
            moped.sweep(tasks([boom], ("baseline",)), executor=ex)
    assert info.value.task is not None and info.value.task.design == "baseline"


def test_bad_tasks() -> None:
    with pytest.raises(TypeError, match="unknown task key"):
        moped.sweep([{"workload": "x", "design": "baseline", "seeds": 2}], executor=SubmitOnly())
    with pytest.raises(TypeError, match="needs `workload` and `design`"):
        moped.sweep([{"workload": "x"}], executor=SubmitOnly())
    assert len(moped.sweep([], executor=SubmitOnly())) == 0


def test_without_a_runner_the_error_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delattr(moped._core, "run_workload", raising=False)
    spec = write_specs(tmp_path, "pp-16k.toml")
    with pytest.raises(moped.SweepError, match="no run_workload"):
        moped.sweep(tasks(spec, ("baseline",)), executor=SubmitOnly())


def make_workloads(root: Path, large: bool) -> Path:
    w = root / "workloads"
    (w / "imb").mkdir(parents=True)
    (w / "npb").mkdir()
    for b in ("pingpong", "pingping", "bcast", "reduce", "gather", "alltoall"):
        (w / "imb" / f"{b}-16k.toml").write_text(sweep_fakes.SPEC_TEXT)
    for b in ("sp", "cg", "mg", "ft", "bt"):
        (w / "npb" / f"{b}-S.toml").write_text(sweep_fakes.SPEC_TEXT)
    if large:
        for b in ("PingPong", "pingping", "bcast"):  # any case is found
            (w / "imb" / f"{b}-1m.toml").write_text(sweep_fakes.SPEC_TEXT)
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


def test_a_sweep_over_l2_latency_on_a_program_file(small_program: Path) -> None:
    default = moped.SystemConfig()["l2.latency"]
    latencies = [5, 15, 40]
    tasks = [
        {"workload": small_program, "design": "baseline", "config": {"l2.latency": n}}
        for n in latencies
    ]
    # A task that leaves the latency alone holds its default in the column.
    tasks.append({"workload": small_program, "design": "baseline", "seed": 2})
    with cf.ThreadPoolExecutor(2) as ex:
        df = moped.sweep(tasks, executor=ex)
    assert list(df["l2.latency"]) == [*latencies, default]
    assert df["l2.latency"].dtype == "int64"
    assert set(df.benchmark) == {"small"} and set(df.group) == {"program"}
    assert list(df.seed) == [1, 1, 1, 2]
    # A longer L2 hit time makes the same program slower, and each row is the run its
    # latency gives.
    cycles = list(df.cycles[:3])
    assert cycles == sorted(set(cycles))
    direct = moped.run(small_program, config={"l2.latency": 15}).cycles
    assert cycles[1] == direct
    # The program's own statistics, counted as a workload's record counts them.
    for col in ("cycles", "l1_misses", "l2_misses_private", "l2_misses_global", "events"):
        assert df[col].dtype == "int64", col
    assert (df.l1_misses == 4).all() and (df.l2_misses_global == 3).all()
    assert df.coherence_messages.gt(0).all()
    assert df.iterations.isna().all() and set(df.notes) == {""}
    assert "messages_verified" not in df.columns


def test_a_sweep_mixes_programs_and_workloads(small_program: Path, tmp_path: Path) -> None:
    goal = experiments.find_workloads_dir() / "goal" / "any_source.goal"
    config_file = tmp_path / "slow-memory.toml"
    config_file.write_text("[memory]\nlatency = 300\n")
    tasks = [
        {"workload": goal, "design": "optcopy", "config": {"l2": {"latency": 20}}},
        {"workload": small_program, "design": "optcopy", "config": moped.SystemConfig()},
        {"workload": small_program, "design": "baseline", "config": str(config_file)},
    ]
    df = moped.sweep(tasks, executor=SubmitOnly())
    defaults = moped.SystemConfig()
    # The union of what the tasks set; a key a task leaves alone has its default.
    assert list(df.columns[-2:]) == ["l2.latency", "memory.latency"]
    assert list(df["l2.latency"]) == [20, defaults["l2.latency"], defaults["l2.latency"]]
    assert list(df["memory.latency"]) == [defaults["memory.latency"]] * 2 + [300]
    assert list(df.group) == ["goal", "program", "program"]
    assert df.cycles.dtype == "int64"
    # Only the GOAL schedule sends messages: a nullable integer column.
    assert str(df.messages_verified.dtype) == "Int64"
    assert df.messages_verified.iloc[0] == 6 and df.messages_verified.iloc[1:].isna().all()
    assert "GOAL calc amounts" in df.notes.iloc[0] and df.notes.iloc[1] == ""
    assert df.cycles.iloc[2] > df.cycles.iloc[1]


def test_a_workload_row_sums_the_statistics_a_program_row_sums(tmp_path: Path) -> None:
    # One definition of the summed metrics serves both kinds of row: an MPI run's record
    # adds the statistics of its stats.txt that a program's row adds.
    goal = experiments.find_workloads_dir() / "goal" / "any_source.goal"
    df = moped.sweep([{"workload": goal, "design": "optcopy", "out": str(tmp_path / "run")}])
    stats = moped.read_stats(tmp_path / "run" / "stats.txt").set_index("name")["value"]
    assert batch.PROGRAM_METRICS["l2_misses_private"] == (
        "system.total.l2.misses_other_cache",
        "system.total.l2.moped_misses_other_cache",
    )
    for metric, names in batch.PROGRAM_METRICS.items():
        assert all(n in stats.index for n in names), metric
        assert df[metric].iloc[0] == sum(stats[n] for n in names), metric
    assert df.coherence_messages.iloc[0] > 0


def test_what_a_task_file_is(tmp_path: Path, small_program: Path) -> None:
    w = experiments.find_workloads_dir()
    assert batch.workload_kind(small_program) == "program"
    assert batch.workload_kind(w / "examples" / "stream.toml") == "program"
    assert batch.workload_kind(w / "imb" / "pingpong-16k.toml") == "workload"
    assert batch.workload_kind(w / "goal" / "any_source.goal") == "workload"
    # A program's ops are a multi-line string: what they hold is not a key.
    tricky = tmp_path / "tricky.toml"
    tricky.write_text("# suite = 'imb'\n[[core]]\ncores = [0]\nops = '''\nsuite = 1\n'''\n")
    assert batch.workload_kind(tricky) == "program"

    config_file = tmp_path / "config.toml"
    config_file.write_text("[l2]\nlatency = 12\n")
    ex = SubmitOnly()
    with pytest.raises(moped.SweepError, match="neither a program file .* nor an MPI") as info:
        moped.sweep([{"workload": config_file, "design": "baseline"}], executor=ex)
    assert isinstance(info.value.__cause__, moped.InputError)
    with pytest.raises(moped.SweepError, match="iterations scales an MPI workload"):
        moped.sweep(
            [{"workload": small_program, "design": "baseline", "iterations": 0.5}], executor=ex
        )
    with pytest.raises(moped.SweepError, match="cannot read"):
        moped.sweep([{"workload": tmp_path / "none.toml", "design": "baseline"}], executor=ex)
    # Every task is checked before any runs.
    assert ex.submitted == 0


def test_the_frame_keeps_counts_whole_and_means_float() -> None:
    base = {"benchmark": "PP", "group": "imb", "design": "baseline"}
    df = batch.frame(
        [
            {**base, "seed": 1, "metrics": {"cycles": 10.0, "l2_misses_local": 3.0, "x": 0.5}},
            {**base, "seed": 2, "metrics": {"cycles": 12.0, "x": 2.0, "y_mean": 1.0}},
        ]
    )
    assert df.cycles.dtype == "int64" and list(df.cycles) == [10, 12]
    assert str(df.l2_misses_local.dtype) == "Int64"
    assert df.l2_misses_local.iloc[0] == 3 and pd.isna(df.l2_misses_local.iloc[1])
    # A metric with a fraction is no count; a mean stays a float even when whole.
    assert df.x.dtype == "float64" and df.y_mean.dtype == "float64"
    # Records made elsewhere, without the sweep's columns, have none of them.
    assert "iterations" not in df.columns and "notes" not in df.columns
