"""The rows of the matching experiment's ``matching.csv`` (``moped matching``,
:func:`moped.experiments.matching`), read back from a finished folder and typed."""

from __future__ import annotations

from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["ENGINES", "MATCHING_COLUMNS", "read_matching"]

#: What matches messages in the matching experiment: MPICH's lists searched by the cores
#: (``software``), then each MOPED engine.
ENGINES: tuple[str, ...] = tuple(_core.MATCHING_ENGINES)
#: The columns of ``matching.csv``, in order (the Rust side's ``CSV_HEADER``).
MATCHING_COLUMNS: tuple[str, ...] = tuple(_core.MATCHING_CSV_HEADER)
#: Integer columns that are empty where they do not apply (pandas' nullable Int64).
_NULLABLE_INTS = ("total_cycles", "total_engine_cycles")
_INTS = ("depth", "position", "iterations", "messages_verified", "ranks")
_FLOATS = ("cycles", "engine_cycles")
_TEXTS = ("engine", "benchmark", "sources", "level")


def read_matching(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``matching.csv`` from a finished folder of ``moped matching`` or
    :func:`moped.experiments.matching`, or from the file itself, typed: the texts as str
    (``sources`` empty where it does not apply), ``depth``, ``position``, ``iterations``,
    ``messages_verified`` and ``ranks`` as int64, ``cycles`` and ``engine_cycles`` as float
    (NaN where empty), ``total_cycles`` and ``total_engine_cycles`` as pandas' nullable
    Int64. A missing or malformed file raises :class:`moped.InputError`."""
    import pandas as pd

    p = Path(_args.path("path", path))
    csv = p / "matching.csv" if p.is_dir() else p
    if not csv.is_file():
        raise InputError(f"{fspath(csv)}: no such file (write it with moped matching)")
    empty_is_missing = (*_NULLABLE_INTS, *_FLOATS)
    dtype: dict[str, Any] = {c: str for c in _TEXTS}
    dtype.update({c: "int64" for c in _INTS})
    dtype.update({c: "Int64" for c in _NULLABLE_INTS})
    dtype.update({c: "float64" for c in _FLOATS})
    try:
        header = pd.read_csv(csv, nrows=0).columns
        missing = [c for c in MATCHING_COLUMNS if c not in header]
        if missing:
            raise InputError(f"{fspath(csv)}: lacks the columns {', '.join(missing)}")
        return pd.read_csv(
            csv,
            dtype=dtype,
            keep_default_na=False,
            na_values={c: [""] for c in empty_is_missing},
        )
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{fspath(csv)}: cannot read: {e}") from e
