"""Every public function called wrongly: an argument of the wrong type raises TypeError
naming the parameter; anything else that cannot be used raises a MopedError subclass.
Never AttributeError, KeyError, OverflowError or pyo3's PanicException."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import moped
from moped import analysis, batch, experiments, plot

ROOT = Path(__file__).resolve().parents[2]
STATS = ROOT / "tests" / "fixtures" / "stats" / "pingpong-16k-optcopy.txt"
PROGRAM = ROOT / "workloads" / "examples" / "stream.toml"
SPEC = ROOT / "workloads" / "imb" / "pingpong-16k.toml"
NOWHERE = ROOT / "no" / "such" / "file.toml"
BIG = 2**64
RECORD = {"benchmark": "PP", "group": "imb", "design": "baseline", "seed": 1, "cycles": 10.0}
ROW = {"group": "imb", "benchmark": "PP", "design": "optcopy", "metric": "cycles", "ratio": 1}


def sweep_one(**task: Any) -> Any:
    task = {"workload": SPEC, "design": "baseline", **task}
    with ThreadPoolExecutor(1) as ex:
        return moped.sweep([task], executor=ex)


def result() -> moped.Result:
    return moped.Result(stat_list=[], cycles=0, config_toml="", protocol="baseline")


# (call, the parameter a TypeError must name)
WRONG_TYPES: dict[str, tuple[Callable[[], Any], str]] = {
    "cfg[5]": (lambda: moped.SystemConfig()[5], "key"),
    "cfg[None]": (lambda: moped.SystemConfig()[None], "key"),
    "from_toml(5)": (lambda: moped.SystemConfig.from_toml(5), "text"),
    "from_toml(file=5)": (lambda: moped.SystemConfig.from_toml("", file=5), "file"),
    "from_file(5)": (lambda: moped.SystemConfig.from_file(5), "path"),
    "from_file(None)": (lambda: moped.SystemConfig.from_file(None), "path"),
    "run(5)": (lambda: moped.run(5), "program"),
    "run(None)": (lambda: moped.run(None), "program"),
    "run(config=5)": (lambda: moped.run(PROGRAM, config=5), "config"),
    "run(config=[])": (lambda: moped.run(PROGRAM, config=[1]), "config"),
    "run(protocol=5)": (lambda: moped.run(PROGRAM, protocol=5), "protocol"),
    "run(seed='1')": (lambda: moped.run(PROGRAM, seed="1"), "seed"),
    "run(seed=1.5)": (lambda: moped.run(PROGRAM, seed=1.5), "seed"),
    "run(seed=None)": (lambda: moped.run(PROGRAM, seed=None), "seed"),
    "run(out=5)": (lambda: moped.run(PROGRAM, out=5), "out"),
    "random_test(cores='4')": (lambda: moped.random_test(cores="4"), "cores"),
    "random_test(checks=None)": (lambda: moped.random_test(checks=None), "checks"),
    "random_test(seed='x')": (lambda: moped.random_test(seed="x"), "seed"),
    "random_test(design=5)": (lambda: moped.random_test(design=5), "design"),
    "random_test(prefetch=5)": (lambda: moped.random_test(prefetch=5), "prefetch"),
    "protocol_table(5)": (lambda: moped.protocol_table(5), "name"),
    "lint_protocol(5)": (lambda: moped.lint_protocol(5), "path"),
    "lint_protocol(None)": (lambda: moped.lint_protocol(None), "path"),
    "load_goal(5)": (lambda: moped.load_goal(5), "path"),
    "load_goal([])": (lambda: moped.load_goal([]), "path"),
    "read_stats_txt(5)": (lambda: moped.read_stats_txt(5), "path"),
    "read_stats_txt(dump='0')": (lambda: moped.read_stats_txt(STATS, dump="0"), "dump"),
    "read_stats(5)": (lambda: moped.read_stats(5), "path"),
    "read_stats(dump=1.0)": (lambda: moped.read_stats(STATS, dump=1.0), "dump"),
    "compare(5, .)": (lambda: moped.compare(5, ROOT), "gem5_dir"),
    "compare(., 5)": (lambda: moped.compare(ROOT, 5), "embedded_dir"),
    "compare(tolerance='x')": (lambda: moped.compare(ROOT, ROOT, tolerance="x"), "tolerance"),
    "compare(dump='x')": (lambda: moped.compare(ROOT, ROOT, dump="x"), "dump"),
    "host_speed(5)": (lambda: moped.host_speed(5), "run_dir"),
    "result['x'] of 5": (lambda: result()[5], "name"),
    "sweep(5)": (lambda: moped.sweep(5), "tasks"),
    "sweep('abc')": (lambda: moped.sweep("abc"), "tasks"),
    "sweep({})": (lambda: moped.sweep({"workload": SPEC}), "tasks"),
    "sweep([5])": (lambda: moped.sweep([5]), "task"),
    "sweep(progress=5)": (lambda: moped.sweep([], progress=5), "progress"),
    "task workload=5": (lambda: sweep_one(workload=5), "workload"),
    "task design=5": (lambda: sweep_one(design=5), "design"),
    "task seed='1'": (lambda: sweep_one(seed="1"), "seed"),
    "task seed=None": (lambda: sweep_one(seed=None), "seed"),
    "task iterations='x'": (lambda: sweep_one(iterations="x"), "iterations"),
    "task out=5": (lambda: sweep_one(out=5), "out"),
    "task config=5": (lambda: sweep_one(config=5), "config"),
    "Task(seed=[])": (lambda: moped.Task(workload="w", design="baseline", seed=[]), "seed"),
    "run_workload(5)": (lambda: batch.run_workload(5, "baseline", "", 1, None, None), "spec_path"),
    "run_workload(design=5)": (lambda: batch.run_workload(SPEC, 5, "", 1, None, None), "design"),
    "run_workload(config_toml=5)": (
        lambda: batch.run_workload(SPEC, "baseline", 5, 1, None, None),
        "config_toml",
    ),
    "run_workload(seed='1')": (
        lambda: batch.run_workload(SPEC, "baseline", "", "1", None, None),
        "seed",
    ),
    "run_workload(iteration_scale='x')": (
        lambda: batch.run_workload(SPEC, "baseline", "", 1, "x", None),
        "iteration_scale",
    ),
    "run_workload(out=5)": (lambda: batch.run_workload(SPEC, "baseline", "", 1, None, 5), "out"),
    "figure10(5)": (lambda: experiments.figure10(5), "out"),
    "figure10(large=5)": (lambda: experiments.figure10("o", large=5), "large"),
    "figure10(seeds=5)": (lambda: experiments.figure10("o", seeds=5), "seeds"),
    "figure10(seeds=['x'])": (lambda: experiments.figure10("o", seeds=["x"]), "seeds"),
    "figure10(iteration_scale='x')": (
        lambda: experiments.figure10("o", iteration_scale="x"),
        "iteration_scale",
    ),
    "figure10(progress=5)": (lambda: experiments.figure10("o", progress=5), "progress"),
    "figure10(config=5)": (lambda: experiments.figure10("o", config=5), "config"),
    "figure10(workloads_dir=5)": (
        lambda: experiments.figure10("o", workloads_dir=5),
        "workloads_dir",
    ),
    "figure10_specs(5)": (lambda: experiments.figure10_specs(5), "workloads_dir"),
    "figure10_specs(large='x')": (
        lambda: experiments.figure10_specs(ROOT / "workloads", large="x"),
        "large",
    ),
    "find_workloads_dir(5)": (lambda: experiments.find_workloads_dir(5), "start"),
    "reductions(5)": (lambda: analysis.reductions(5), "records"),
    "reductions([5])": (lambda: analysis.reductions([5]), "records"),
    "reductions({})": (lambda: analysis.reductions(RECORD), "records"),
    "reductions_frame(None)": (lambda: analysis.reductions_frame(None), "records"),
    "summaries_frame(5)": (lambda: analysis.summaries_frame(5), "records"),
    "claims(5)": (lambda: analysis.claims(5), "records"),
    "to_records(5.0)": (lambda: analysis.to_records(5.0), "records"),
    "report(notes=5)": (lambda: analysis.report([RECORD], notes=5), "notes"),
    "report(explanations=[])": (
        lambda: analysis.report([RECORD], explanations=["a"]),
        "explanations",
    ),
    "write_tables(5)": (lambda: analysis.write_tables(5, [RECORD]), "out_dir"),
    "plot.figure10(5)": (lambda: plot.figure10(5, "o"), "reductions"),
    "plot.figure10([5])": (lambda: plot.figure10([5], "o"), "reductions"),
    "plot.figure10(out_dir=5)": (lambda: plot.figure10([ROW], 5), "out_dir"),
}


def _tmp_out(tmp: Path) -> str:
    return str(tmp / "out")


# (call taking a scratch folder, the MopedError subclass it must raise)
REFUSALS: dict[str, tuple[Callable[[Path], Any], type[moped.MopedError]]] = {
    "cfg['no.such']": (lambda t: moped.SystemConfig()["no.such"], moped.ConfigError),
    "cfg['l2.latency.x']": (lambda t: moped.SystemConfig()["l2.latency.x"], moped.ConfigError),
    "latency='slow'": (lambda t: moped.SystemConfig(l2={"latency": "slow"}), moped.ConfigError),
    "latency=2**70": (lambda t: moped.SystemConfig(l2={"latency": 2**70}), moped.ConfigError),
    "latency=-1": (lambda t: moped.SystemConfig(l2={"latency": -1}), moped.ConfigError),
    "latency=None": (lambda t: moped.SystemConfig(**{"l2.latency": None}), moped.ConfigError),
    "latency=object()": (
        lambda t: moped.SystemConfig(**{"l2.latency": object()}),
        moped.ConfigError,
    ),
    "l2=5": (lambda t: moped.SystemConfig(l2=5), moped.ConfigError),
    "l2=[1, 2]": (lambda t: moped.SystemConfig(l2=[1, 2]), moped.ConfigError),
    "cores=[-1]": (lambda t: moped.SystemConfig(system={"cores": [-1]}), moped.ConfigError),
    "from_file(missing)": (lambda t: moped.SystemConfig.from_file(NOWHERE), moped.ConfigError),
    "from_toml('[[')": (lambda t: moped.SystemConfig.from_toml("[["), moped.ConfigError),
    "run(missing)": (lambda t: moped.run(NOWHERE), moped.MopedError),
    "run(protocol='nope')": (lambda t: moped.run(PROGRAM, protocol="nope"), moped.ProtocolError),
    "run(seed=-1)": (lambda t: moped.run(PROGRAM, seed=-1), moped.InputError),
    "run(seed=2**64)": (lambda t: moped.run(PROGRAM, seed=BIG), moped.InputError),
    "run(config=missing)": (lambda t: moped.run(PROGRAM, config=NOWHERE), moped.ConfigError),
    "run(config={'l2': 5})": (lambda t: moped.run(PROGRAM, config={"l2": 5}), moped.ConfigError),
    "random_test(cores=0)": (lambda t: moped.random_test(cores=0), moped.ConfigError),
    "random_test(cores=-1)": (lambda t: moped.random_test(cores=-1), moped.InputError),
    "random_test(cores=2**64)": (lambda t: moped.random_test(cores=BIG), moped.InputError),
    "random_test(checks=-5)": (lambda t: moped.random_test(checks=-5), moped.InputError),
    "random_test(seed=2**64)": (lambda t: moped.random_test(seed=BIG), moped.InputError),
    "random_test(design='nope')": (lambda t: moped.random_test(design="nope"), moped.ProtocolError),
    "protocol_table('nope')": (lambda t: moped.protocol_table("nope"), moped.ProtocolError),
    "lint_protocol(missing)": (lambda t: moped.lint_protocol(NOWHERE), moped.ProtocolError),
    "load_goal(missing)": (lambda t: moped.load_goal(NOWHERE), moped.ProgramError),
    "load_goal(a spec)": (lambda t: moped.load_goal(SPEC), moped.ProgramError),
    "read_stats_txt(missing)": (lambda t: moped.read_stats_txt(NOWHERE), moped.StatsError),
    "read_stats_txt(dump=99)": (lambda t: moped.read_stats_txt(STATS, dump=99), moped.StatsError),
    "read_stats_txt(dump=2**70)": (
        lambda t: moped.read_stats_txt(STATS, dump=2**70),
        moped.InputError,
    ),
    "read_stats(dump=-2**70)": (lambda t: moped.read_stats(STATS, dump=-(2**70)), moped.InputError),
    "read_stats(a spec)": (lambda t: moped.read_stats(SPEC), moped.StatsError),
    "compare(missing)": (lambda t: moped.compare(NOWHERE, NOWHERE), moped.StatsError),
    "compare(dump=2**64)": (lambda t: moped.compare(t, t, dump=BIG), moped.InputError),
    "host_speed(missing)": (lambda t: moped.host_speed(NOWHERE), moped.StatsError),
    "result['no.such']": (lambda t: result()["no.such"], moped.StatsError),
    "sweep(missing workload)": (lambda t: sweep_one(workload=NOWHERE), moped.SweepError),
    "sweep(design='nope')": (lambda t: sweep_one(design="nope"), moped.SweepError),
    "sweep(seed=-1)": (lambda t: sweep_one(seed=-1), moped.InputError),
    "sweep(seed=2**64)": (lambda t: sweep_one(seed=BIG), moped.InputError),
    "sweep(config={'l2': 5})": (lambda t: sweep_one(config={"l2": 5}), moped.ConfigError),
    "run_workload(missing)": (
        lambda t: batch.run_workload(str(NOWHERE), "baseline", "", 1, None, None),
        moped.MopedError,
    ),
    "run_workload(design='nope')": (
        lambda t: batch.run_workload(str(SPEC), "nope", "", 1, None, None),
        moped.ProtocolError,
    ),
    "run_workload(config_toml='[[')": (
        lambda t: batch.run_workload(str(SPEC), "baseline", "[[", 1, None, None),
        moped.ConfigError,
    ),
    "figure10(seeds=[])": (lambda t: experiments.figure10(_tmp_out(t), seeds=[]), moped.MopedError),
    "figure10(seeds=[-1])": (
        lambda t: experiments.figure10(_tmp_out(t), seeds=[-1]),
        moped.InputError,
    ),
    "figure10(workloads_dir=missing)": (
        lambda t: experiments.figure10(_tmp_out(t), workloads_dir=NOWHERE),
        moped.MopedError,
    ),
    "figure10_specs(missing)": (lambda t: experiments.figure10_specs(t), moped.MopedError),
    "reductions('[')": (lambda t: analysis.reductions("["), moped.InputError),
    "reductions(lacks keys)": (lambda t: analysis.reductions([{"seed": 1}]), moped.MopedError),
    "reductions(seed='x')": (
        lambda t: analysis.reductions([{**RECORD, "seed": "x"}]),
        moped.InputError,
    ),
    "reductions(seed=-1)": (
        lambda t: analysis.reductions([{**RECORD, "seed": -1}]),
        moped.InputError,
    ),
    "plot.figure10([])": (lambda t: plot.figure10([], t), moped.InputError),
    "plot.figure10(missing)": (lambda t: plot.figure10(str(NOWHERE), t), moped.InputError),
    "plot.figure10(lacks keys)": (lambda t: plot.figure10([{"group": "imb"}], t), moped.InputError),
    "plot.figure10(ratio='x')": (
        lambda t: plot.figure10([{**ROW, "ratio": "x"}], t),
        moped.InputError,
    ),
}


@pytest.mark.parametrize("name", list(WRONG_TYPES))
def test_a_wrong_type_raises_type_error_naming_the_parameter(name: str) -> None:
    call, param = WRONG_TYPES[name]
    with pytest.raises(TypeError) as e:
        call()
    assert param in str(e.value), f"{name}: {e.value}"


@pytest.mark.parametrize("name", list(REFUSALS))
def test_an_unusable_value_raises_a_moped_error(name: str, tmp_path: Path) -> None:
    call, kind = REFUSALS[name]
    with pytest.raises(kind) as e:
        call(tmp_path)
    assert not isinstance(e.value, (AttributeError, KeyError, OverflowError, ValueError))
    assert str(e.value), name


def test_every_error_class_is_exported_and_a_moped_error() -> None:
    for name in ("ConfigError", "ProtocolError", "ProgramError", "SimulationError"):
        assert issubclass(getattr(moped, name), moped.MopedError)
    for name in ("StatsError", "InputError", "SweepError"):
        assert issubclass(getattr(moped, name), moped.MopedError)
        assert name in moped.__all__


def test_a_panic_in_the_extension_is_a_moped_error_asking_for_a_report() -> None:
    # The hidden entry point panics inside the guard every binding runs in; without the
    # guard pyo3 raises PanicException, a BaseException that `except Exception` misses.
    with pytest.raises(moped.MopedError) as e:
        moped._core._panic_for_test()
    assert "internal error, please report" in str(e.value)
    assert "a deliberate panic to test the Python boundary" in str(e.value)


def test_random_test_takes_a_design_and_counts_moped_traffic() -> None:
    r = moped.random_test(cores=4, checks=300, seed=3, design="optcopy")
    assert r["mismatches"] == 0
    assert r["moped_reads"] + r["moped_owns"] > 0
    base = moped.random_test(cores=4, checks=300, seed=3)
    assert base["moped_reads"] + base["moped_owns"] + base["moped_fills"] == 0
