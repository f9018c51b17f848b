"""Shared fixtures; tests marked ``slow`` run only with ``--run-slow``, tests marked
``gem5`` only when the GEM5 environment variable names a gem5 built with moped's extras."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run slow tests")


def gem5_binary() -> str | None:
    """The gem5 named by GEM5, or None with the reason in ``gem5_skip_reason``."""
    path = os.environ.get("GEM5")
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    return None


def gem5_skip_reason() -> str:
    path = os.environ.get("GEM5")
    if not path:
        return "gem5: set GEM5 to a gem5.opt built with EXTRAS=gem5-configs/moped_ext"
    return f"gem5: GEM5={path} is not an executable file"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gem5_binary() is None:
        skip_gem5 = pytest.mark.skip(reason=gem5_skip_reason())
        for item in items:
            if "gem5" in item.keywords:
                item.add_marker(skip_gem5)
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --run-slow to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def root() -> Path:
    return ROOT


SMALL_PROGRAM = """\
# two cores share one line, each also touches a private line
[[core]]
cores = [0]
ops = '''
store 0x1000 8 7
compute 10
load 0x2000
'''

[[core]]
cores = [1]
ops = '''
compute 200
load 0x1000 8
store 0x3000 8 1
'''
"""


@pytest.fixture
def small_program(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL_PROGRAM)
    return p
