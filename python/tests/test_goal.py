"""GOAL schedules from Python: the summary of a good one, file:line:col for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

import moped
from moped import experiments


def test_the_any_source_example_reads_as_four_ranks() -> None:
    s = moped.load_goal(experiments.find_workloads_dir() / "goal" / "any_source.goal")
    assert s["name"] == "any_source"
    assert [r["sends"] for r in s["ranks"]] == [3, 1, 1, 1]
    assert [r["recvs"] for r in s["ranks"]] == [3, 1, 1, 1]
    assert s["ranks"][0]["any_source_recvs"] == 3


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("num_ranks 2\nrank 0 {\n  l1: send 8b to 5 tag 0\n}\n", ":3:", "5"),
        ("num_ranks 2\nrank 0 {\n  l1: sned 8b to 1\n}\n", ":3:", ""),
        ("num_ranks 1\nrank 0 {\n  a: calc 5\n  a requires b\n}\n", ":4:", "b"),
        ("num_ranks 1\nrank 0 {\n  a: calc 5\n  a: calc 6\n}\n", ":4:", "a"),
        ("num_ranks 2\nrank 0 {\n  r: recv 8b from 1 tag 2147483648\n}\n", ":3:", "tag"),
        ("rank 0 {\n}\n", ":1:", "num_ranks"),
    ],
)
def test_bad_schedules_name_file_line_and_column(
    tmp_path: Path, text: str, where: str, what: str
) -> None:
    f = tmp_path / "bad.goal"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(moped.ProgramError) as info:
        moped.load_goal(f)
    msg = str(info.value)
    assert msg.startswith(f"{f}{where}"), msg
    assert what in msg, msg


def test_a_missing_schedule_is_a_program_error(tmp_path: Path) -> None:
    with pytest.raises(moped.ProgramError, match="cannot read"):
        moped.load_goal(tmp_path / "nope.goal")
