"""Ctrl-C: the console script exits 130, a run raises KeyboardInterrupt, and a sweep on a
thread pool stops its runs in flight instead of leaving them to finish."""

from __future__ import annotations

import concurrent.futures as cf
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_cli import moped_cmd

import moped
from moped.batch import run_workload

# The long schedule takes minutes of host time: a test that Ctrl-C did not stop fails by
# its outcome (a result, not KeyboardInterrupt), or by the 30-s limits of `communicate`.


@pytest.fixture(autouse=True)
def _ctrl_c_raises():
    """Python's own Ctrl-C handler in this process, as an interactive start installs it: a
    runner started as a background job inherits SIGINT ignored, and then no Ctrl-C could
    reach the runs under test."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _default_sigint() -> None:
    """In a child before it runs: SIGINT at its default, as a terminal starts a command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def long_goal(path: Path, messages: int = 2000) -> Path:
    """Rank 0 sends rank 1 `messages` one-MiB messages, one after the other."""
    lines = ["num_ranks 2", "", "rank 0 {"]
    for i in range(messages):
        lines.append(f"  s{i}: send 1048576b to 1 tag 1")
        if i:
            lines.append(f"  s{i} requires s{i - 1}")
    lines += ["}", "", "rank 1 {"]
    for i in range(messages):
        lines.append(f"  r{i}: recv 1048576b from 0 tag 1")
        if i:
            lines.append(f"  r{i} requires r{i - 1}")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")
    return path


def config() -> str:
    return moped.config_toml(moped.SystemConfig(system={"cores": 2}))


def test_ctrl_c_ends_the_console_script_with_status_130(tmp_path: Path) -> None:
    goal = long_goal(tmp_path / "long.goal")
    cmd = [*moped_cmd(), "mpi", "--workload", str(goal), "--out", str(tmp_path / "out")]
    child = subprocess.Popen(
        [*cmd, "--set", "system.cores=2"],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    time.sleep(3)  # the interpreter starts, then the simulation
    assert child.poll() is None, child.stderr.read() if child.stderr else ""
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err


SCRIPT = """
import sys
from moped.batch import run_workload
print("started", flush=True)
try:
    run_workload(sys.argv[1], "baseline", sys.argv[2], 1, None, None)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(7)
sys.exit(0)
"""


def test_ctrl_c_raises_keyboard_interrupt_from_a_run(tmp_path: Path) -> None:
    goal = long_goal(tmp_path / "long.goal")
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(goal), config()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "started"
    time.sleep(1.5)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 7, out + err
    assert "KeyboardInterrupt" in out


class RecordingPool(cf.ThreadPoolExecutor):
    """A thread pool that keeps the futures it hands out."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers)
        self.futures: list[cf.Future[object]] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        f = super().submit(fn, *args, **kwargs)
        self.futures.append(f)
        return f


def test_ctrl_c_stops_a_thread_pool_sweeps_runs_in_flight(tmp_path: Path) -> None:
    goal = str(long_goal(tmp_path / "long.goal"))
    tasks = [
        moped.Task(workload=goal, design=d, config=moped.SystemConfig(system={"cores": 2}))
        for d in ("baseline", "optcopy", "basemoped")
    ]
    main = threading.main_thread().ident
    assert main is not None
    with RecordingPool(2) as pool:
        # Ctrl-C as the terminal sends it, to the main thread waiting for the results.
        threading.Timer(1.5, signal.pthread_kill, (main, signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            moped.sweep(tasks, executor=pool)
    # Leaving `with` waited for the pool's threads: the third task never started, and
    # the two in flight were stopped, not left to finish their minutes of work.
    assert len(pool.futures) == 3
    assert pool.futures[2].cancelled()
    for f in pool.futures[:2]:
        assert isinstance(f.exception(), KeyboardInterrupt)


def test_a_run_after_an_interrupted_sweep_is_not_stopped(tmp_path: Path) -> None:
    moped._core._stop_runs()
    goal = str(long_goal(tmp_path / "short.goal", messages=2))
    rec = run_workload(goal, "baseline", config(), 1, None, None)
    assert '"benchmark"' in rec


def test_ctrl_c_stops_the_random_tester() -> None:
    main = threading.main_thread().ident
    assert main is not None
    # A billion checks take hours: only Ctrl-C ends this call in time.
    threading.Timer(1.5, signal.pthread_kill, (main, signal.SIGINT)).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        moped.random_test(cores=4, checks=10**9)
    assert time.monotonic() - started < 30
