"""The ``moped`` console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def moped_cmd() -> list[str]:
    exe = shutil.which("moped")
    if exe is None:
        # Not on PATH (pytest run without activating the environment).
        exe_dir = Path(sys.executable).parent
        candidate = exe_dir / "moped"
        if candidate.exists():
            return [str(candidate)]
        return [sys.executable, "-m", "moped.cli"]
    return [exe]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*moped_cmd(), *args], capture_output=True, text=True, timeout=600)


def test_help() -> None:
    r = run("--help")
    assert r.returncode == 0
    for sub in ("run", "random-test", "check", "protocol"):
        assert sub in r.stdout


def test_usage_error_exits_2() -> None:
    r = run("no-such-command")
    assert r.returncode == 2


def test_lint_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "Broken.sm"
    bad.write_text('machine(L2Cache, desc="x");\n\ntransition(I, Nope, S) { h_loadHit; }\n')
    r = run("protocol", "lint", str(bad))
    assert r.returncode == 1
    assert f"{bad}:" in r.stderr
    line, col = r.stderr.split(f"{bad}:", 1)[1].split(":")[:2]
    assert line.isdigit() and col.isdigit()


def test_lint_good_file(root: Path) -> None:
    f = root / "protocols" / "baseline" / "Directory.sm"
    r = run("protocol", "lint", str(f))
    assert r.returncode == 0, r.stderr
    assert ": ok (" in r.stdout


def test_lint_missing_file(tmp_path: Path) -> None:
    r = run("protocol", "lint", str(tmp_path / "missing.sm"))
    assert r.returncode == 1
    assert r.stderr.startswith("error:")


def test_protocol_show() -> None:
    r = run("protocol", "show", "baseline", "--format", "md")
    assert r.returncode == 0
    assert "IS" in r.stdout
    r = run("protocol", "show", "nope", "--format", "md")
    assert r.returncode == 2
    assert "baseline" in r.stderr


def test_random_test() -> None:
    r = run("random-test", "--cores", "4", "--checks", "200", "--seed", "1")
    assert r.returncode == 0, r.stderr


def test_run_writes_results(small_program: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run("run", "--program", str(small_program), "--out", str(out), "--set", "system.cores=2")
    assert r.returncode == 0, r.stderr
    assert "cycles" in r.stdout
    for name in ("stats.txt", "stats.json", "stats.csv", "config.toml"):
        assert (out / name).is_file()


@pytest.mark.parametrize("what", ["--config", "--program"])
def test_run_garbage_input(tmp_path: Path, what: str) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 8)
    args = ["run", "--program", str(junk), "--out", str(tmp_path / "o")]
    if what == "--config":
        args += ["--config", str(junk)]
    r = run(*args)
    assert r.returncode == 1
    assert r.stderr.startswith("error:")
    assert "panicked" not in r.stderr
