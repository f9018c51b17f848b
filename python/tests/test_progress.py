"""Progress on stderr: the long commands draw a bar on a terminal (driven here through a
pseudo-terminal) and print plain lines otherwise; Python's experiments and sweeps show a
tqdm bar where a person watches, lines otherwise, or hand each line to a callable; and
``moped.run`` calls a progress callback while it runs."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from conftest import ROOT

import moped
from moped import _progress

CLI = [sys.executable, "-c", "from moped.cli import main; main()"]
ENGINES = ["engines", "--quick", "--schemes", "base", "--only", "cmp", "--no-figure10"]


def on_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Runs the CLI with stderr on a pseudo-terminal 120 columns wide; its status and all
    it wrote there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    p = subprocess.Popen(
        [*CLI, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closes with the last writer
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(), b"".join(chunks).decode(errors="replace")


def on_a_pipe(args: list[str], cwd: Path) -> tuple[int, str]:
    p = subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stderr


def test_an_experiment_draws_a_bar_on_a_terminal_and_lines_elsewhere(tmp_path: Path) -> None:
    status, shown = on_terminal([*ENGINES, "--out", "bar"], tmp_path)
    assert status == 0, shown
    assert "\x1b[" in shown, "the bar redraws with terminal control sequences"
    assert "engines [" in shown and "/24 runs" in shown and "M events/s" in shown
    assert "[ 24/24]" in shown, "each run's line is printed above the bar"

    status, err = on_a_pipe([*ENGINES, "--out", "lines"], tmp_path)
    assert status == 0, err
    assert "\x1b[" not in err and "\r" not in err, "no redraws in a log"
    runs = [line for line in err.splitlines() if line.startswith("[")]
    assert len(runs) == 24 and runs[0].startswith("[  1/24]") and runs[-1].startswith("[ 24/24]")


def test_a_single_run_draws_its_heartbeat_on_a_terminal(tmp_path: Path) -> None:
    # Long enough for a few beats at any host speed this project runs on.
    args = ["random-test", "--cores", "4", "--checks", "300000"]
    status, shown = on_terminal(args, tmp_path)
    assert status == 0, shown
    assert "random-test [" in shown and "/300000 checks" in shown, shown[-2000:]
    status, err = on_a_pipe(args, tmp_path)
    assert status == 0 and "\x1b[" not in err and "random-test [" not in err


def test_python_progress_is_a_bar_where_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = str(ROOT / "workloads" / "imb" / "pingpong-16k.toml")
    tasks = [{"workload": spec, "design": d, "iterations": 0.02} for d in ("baseline", "optcopy")]
    moped.sweep(tasks, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[-1].startswith("[2/2] PP (imb)"), lines

    monkeypatch.setattr(_progress, "_watched", lambda: True)
    moped.sweep(tasks, progress=True)
    err = capsys.readouterr().err
    assert "sweep: 100%" in err and "2/2" in err and "M events/s" in err, err
    assert "[2/2] PP" not in err, "a bar instead of the lines"

    with pytest.raises(TypeError, match="progress must be a bool or a callable"):
        moped.sweep(tasks, progress="yes")


def test_run_calls_its_progress_callback(tmp_path: Path) -> None:
    program = tmp_path / "stream.toml"
    program.write_text(
        '[[core]]\ncores = "all"\noffset_per_core = 0x1000000\n'
        "ops = '''\nsweep load 0x100000 4194304 64 repeat=6\n'''\n"
    )
    beats: list[dict[str, object]] = []
    res = moped.run(program, progress=beats.append)
    if res.host_seconds >= 1.5:  # a beat is due every half second of host time
        assert beats, "no beat in a run of more than a second"
    for b in beats:
        assert set(b) == {
            "cycle",
            "events",
            "host_seconds",
            "events_per_second",
            "done",
            "of",
            "eta_seconds",
        }
        assert b["done"] is None and b["eta_seconds"] is None, "a program's end is not known"
    cycles = [b["cycle"] for b in beats]
    assert cycles == sorted(cycles) and all(c <= res.cycles for c in cycles)  # type: ignore[operator]
    with pytest.raises(TypeError, match="progress must be a callable or None"):
        moped.run(program, progress=True)  # type: ignore[arg-type]
