"""Shared fixtures; tests marked ``slow`` run only with ``--run-slow``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run slow tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
