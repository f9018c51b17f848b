"""The results store of an experiment's folder, read back.

``moped figure10`` (and :func:`moped.experiments.figure10`) identify every run by a key,
a hash of what determines its results (the workload file's bytes, the resolved
configuration, the design, the seed, the iteration scale, moped's version and a
fingerprint of its sources), keep each
run's files under ``runs/`` with its ``key.json``, and write one row per run into
``runs.csv``. Running the experiment again into the same folder reuses the runs whose
keys are unchanged (``--fresh``, or ``fresh=True``, runs them all again);
:func:`load_results` returns the table as a DataFrame::

    df = moped.load_results("results/figure10")
    df.pivot_table(index="benchmark", columns="design", values="cycles")
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from moped import _args
from moped._core import InputError
from moped.batch import MEAN_SUFFIXES, _counts_as_integers

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["TABLE", "load_results"]

#: The store's table in a results folder.
TABLE = "runs.csv"


def load_results(folder: str | PathLike[str]) -> pandas.DataFrame:
    """Every run of a results folder, a row each: ``key`` (the run's hash), ``benchmark``,
    ``group``, ``design``, ``seed``, ``iterations`` (the iteration scale, NaN where not
    scaled), ``workload`` (the spec file), ``reused`` (taken from the folder's earlier
    results), the host's ``events`` and ``host_seconds``, ``messages_verified``,
    ``bytes_verified``, ``notes``, then every configuration key as a column
    (``l2.latency``, with the value the run used) and every metric. Counts are integer
    columns (``Int64`` where some run lacks the value); means and times are floats.
    A folder without ``runs.csv`` raises :class:`moped.InputError`."""
    import pandas as pd

    root = Path(_args.path("folder", folder))
    table = root / TABLE
    if not table.is_file():
        raise InputError(
            f"{root}: no {TABLE}: not a finished results folder of `moped figure10` "
            "(a failed one keeps its finished runs under runs/, and the next run resumes)"
        )
    df: pd.DataFrame = pd.read_csv(table, keep_default_na=False, na_values=[""])
    for text in ("notes", "workload", "benchmark", "group", "design", "key"):
        if text in df.columns:
            df[text] = df[text].fillna("").astype(str)
    df["iterations"] = df["iterations"].astype("float64")
    # The run's own columns, then the configuration's (dotted), then the metrics.
    dotted = [i for i, c in enumerate(df.columns) if "." in c]
    metrics = list(df.columns[max(dotted, default=-1) + 1 :])
    for c in metrics:
        if c.endswith(MEAN_SUFFIXES):
            df[c] = df[c].astype("float64")
    _counts_as_integers(df, metrics)
    return df
