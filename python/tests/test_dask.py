"""A sweep on a real Dask cluster gives the frame the default process pool gives."""

from __future__ import annotations

import pandas as pd
from distributed import Client, LocalCluster, get_task_stream

import moped
from moped import experiments


def small_tasks() -> list[dict[str, object]]:
    goal = experiments.find_workloads_dir() / "goal" / "any_source.goal"
    pingpong = experiments.find_workloads_dir() / "imb" / "pingpong-16k.toml"
    tasks: list[dict[str, object]] = [
        {"workload": str(goal), "design": d, "seed": 1} for d in experiments.DESIGNS
    ]
    # A tenth of PingPong's iterations keeps it a fraction of a second, with seed 2 and
    # the iteration scale checked to travel to the workers too.
    tasks += [
        {"workload": str(pingpong), "design": d, "seed": 2, "iterations": 0.1}
        for d in ("baseline", "optcopy")
    ]
    return tasks


def without_host_time(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=[c for c in df.columns if str(c).startswith("host_")])


def test_sweep_on_a_dask_cluster_matches_the_process_pool() -> None:
    tasks = small_tasks()
    expected = moped.sweep(tasks)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        with get_task_stream(client) as stream:
            got = moped.sweep(tasks, executor=client.get_executor())
        ran = [t for t in stream.data if str(t["key"]).startswith("_execute")]
    # Every run went through the cluster, none in this process.
    assert len(ran) == len(tasks)
    assert "host_seconds" in got.columns
    assert list(got.messages_verified) == [6, 6, 6, 6, 292, 292]
    pd.testing.assert_frame_equal(without_host_time(got), without_host_time(expected))
