"""GOAL schedules with data from Python: ``workload.touch_buffers`` in a task's config makes
each sender write and each receiver read its messages, so BASEMOPED's exclusive hand-over
(the send lines leave the sender's caches) shows as global L2 misses OPTCOPY does not
have; without it the two designs read every message from memory alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import moped


def pingpong(n: int) -> str:
    """A GOAL PingPong of ``n`` 16 kB round trips between ranks 0 and 1."""
    lines = ["num_ranks 2"]
    for me, peer in ((0, 1), (1, 0)):
        lines.append(f"rank {me} {{")
        prev = None
        for i in range(n):
            ops = [f"s{i}: send 16384b to {peer} tag 7", f"r{i}: recv 16384b from {peer} tag 7"]
            if me == 1:
                ops.reverse()
            first, second = (op.split(":")[0] for op in ops)
            lines.append(f"  {ops[0]}")
            if prev:
                lines.append(f"  {first} requires {prev}")
            lines += [f"  {ops[1]}", f"  {second} requires {first}"]
            prev = second
        lines.append("}")
    return "\n".join(lines) + "\n"


def test_touched_buffers_separate_basemoped_from_optcopy(tmp_path: Path) -> None:
    goal = tmp_path / "pingpong.goal"
    goal.write_text(pingpong(12))
    tasks = [
        {"workload": str(goal), "design": d, "config": {"workload": {"touch_buffers": t}}}
        for t in (0, 64)
        for d in ("basemoped", "optcopy")
    ]
    with ThreadPoolExecutor(max_workers=1) as pool:
        df = moped.sweep(tasks, executor=pool)
    g = {
        (row.design, row["workload.touch_buffers"]): row.l2_misses_global
        for _, row in df.iterrows()
    }
    assert g[("basemoped", 0)] == pytest.approx(g[("optcopy", 0)], rel=0.02)
    assert g[("basemoped", 64)] > 3 * g[("optcopy", 64)]


def test_a_stride_of_part_words_is_refused() -> None:
    with pytest.raises(moped.ConfigError, match=r"workload\.touch_buffers"):
        moped.SystemConfig(workload={"touch_buffers": 12})
