"""The results store of an experiment's folder, read back.

Every experiment (``moped figure10``, ``moped matching``, ``moped engines``, ``moped
lhs``, their functions in :mod:`moped.experiments`, and :func:`moped.sweep` given an
``out`` folder) identifies each of its runs by a key, a hash of what determines its
results (the workload file's bytes, the resolved configuration, the design, the seed,
the iteration scale, moped's version and a fingerprint of its sources), keeps each run's
files in a folder of its own with its ``key.json``, and writes one row per run into
``runs.csv``. Running the experiment again into the same folder reuses the runs whose
keys are unchanged (``--fresh``, or ``fresh=True``, runs them all again);
:func:`load_results` returns the table of any of them as a DataFrame::

    df = moped.load_results("results/figure10")
    df.pivot_table(index="benchmark", columns="design", values="cycles")

Where pyarrow is installed, the Python functions also write the table as
``runs.parquet`` (:func:`write_parquet`).
"""

from __future__ import annotations

import importlib.util
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from moped import _args
from moped._core import InputError
from moped._frames import MEAN_SUFFIXES, _counts_as_integers

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["PARQUET", "TABLE", "load_results", "write_parquet"]

#: The store's table in a results folder.
TABLE = "runs.csv"
#: Its Parquet copy, where pyarrow is installed.
PARQUET = "runs.parquet"
#: The table's columns that hold text.
_TEXT = ("notes", "workload", "benchmark", "group", "design", "key", "folder")


def load_results(folder: str | PathLike[str]) -> pandas.DataFrame:
    """Every run of a results folder, a row each: ``key`` (the run's hash), ``benchmark``,
    ``group``, ``design``, ``seed``, ``iterations`` (the iteration scale, NaN where not
    scaled), ``workload`` (the spec file), ``reused`` (taken from the folder's earlier
    results), the host's ``events`` and ``host_seconds``, ``messages_verified``,
    ``bytes_verified``, ``notes``, ``folder`` (the run's files, relative to ``folder``),
    then every configuration key as a column (``l2.latency``, with the value the run
    used; empty where a run's configuration lacks the key) and every metric (NaN where a
    run lacks it: an experiment's parts measure different things). Counts are integer
    columns (``Int64`` where some run lacks the value); means and times are floats. Any
    experiment's folder reads the same way (Figure 10, matching, engines, LHS, a sweep).
    A folder without ``runs.csv`` raises :class:`moped.InputError`."""
    import pandas as pd

    root = Path(_args.path("folder", folder))
    table = root / TABLE
    if not table.is_file():
        raise InputError(
            f"{root}: no {TABLE}: not a finished results folder of an experiment (moped "
            "figure10, matching, engines or lhs, or moped.sweep with out=); a failed one "
            "keeps its finished runs, and the next run into it resumes"
        )
    as_text = dict.fromkeys(_TEXT, str)
    df: pd.DataFrame = pd.read_csv(table, dtype=as_text, keep_default_na=False, na_values=[""])
    for text in _TEXT:
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


def write_parquet(folder: str | PathLike[str]) -> Path | None:
    """Writes ``runs.parquet`` into ``folder``, the table :func:`load_results` reads,
    with its column types, where pyarrow is installed; returns its path, or None without
    pyarrow. The experiments' Python functions call it when their runs are done."""
    # pandas writes Parquet through pyarrow.
    if importlib.util.find_spec("pyarrow") is None:
        return None
    path = Path(_args.path("folder", folder)) / PARQUET
    load_results(folder).to_parquet(path, index=False)
    return path
