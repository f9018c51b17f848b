"""The rows of the matching experiment's ``matching.csv`` (``moped matching``,
:func:`moped.experiments.matching`), of its ``stream64.csv`` when the ``microcoded``
engine ran, and of its ``lhs.csv`` when ``software-lhs`` did, read back from a finished
folder and typed."""

from __future__ import annotations

from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = [
    "ENGINES",
    "LHS_COLUMNS",
    "MATCHING_COLUMNS",
    "STREAM64_COLUMNS",
    "read_lhs",
    "read_matching",
    "read_stream64",
]

#: What matches messages in the matching experiment: MPICH's lists searched by the cores
#: (``software``), the same with the unexpected queue in an LH buffer (``software-lhs``),
#: then each MOPED engine.
ENGINES: tuple[str, ...] = tuple(_core.MATCHING_ENGINES)
#: The columns of ``matching.csv``, in order (the Rust side's ``CSV_HEADER``).
MATCHING_COLUMNS: tuple[str, ...] = tuple(_core.MATCHING_CSV_HEADER)
#: Integer columns that are empty where they do not apply (pandas' nullable Int64).
_NULLABLE_INTS = ("total_cycles", "total_engine_cycles")
_INTS = ("depth", "position", "iterations", "messages_verified", "ranks", "senders")
_FLOATS = ("cycles", "engine_cycles", "mhz", "ns", "engine_ns")
_TEXTS = ("engine", "benchmark", "sources", "level")

#: The columns of ``stream64.csv``, in order (the Rust side's ``stream64::CSV_HEADER``).
STREAM64_COLUMNS: tuple[str, ...] = tuple(_core.MATCHING_STREAM64_CSV_HEADER)
_STREAM64_TEXTS = ("engine", "benchmark")
_STREAM64_INTS = (
    "list_items",
    "percent_traversed",
    "traversed",
    "messages",
    "cycles",
    "ideal_cycles",
)
#: Every other column: times, ratios and cycle means.
_STREAM64_FLOATS = tuple(
    c for c in STREAM64_COLUMNS if c not in (*_STREAM64_TEXTS, *_STREAM64_INTS)
)

#: The columns of ``lhs.csv``, in order (the Rust side's ``api::lhs_csv::CSV_HEADER``), the
#: same for ``moped matching``'s CMP rows and ``moped lhs``'s DIMMnet rows.
LHS_COLUMNS: tuple[str, ...] = tuple(_core.MATCHING_LHS_CSV_HEADER)
_LHS_TEXTS = (
    "queue",
    "prefetch",
    "layout",
    "setting",
    "condition",
    "sw_prefetch",
    "attribute",
    "flush",
    "matcher",
)
_LHS_FLOATS = (
    "search_cycles",
    "search_cycles_per_entry",
    "core_ghz",
    "search_ns_per_entry",
)
#: Every other column: sizes, positions and counters.
_LHS_INTS = tuple(c for c in LHS_COLUMNS if c not in (*_LHS_TEXTS, *_LHS_FLOATS))


def read_matching(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``matching.csv`` from a finished folder of ``moped matching`` or
    :func:`moped.experiments.matching`, or from the file itself, typed: the texts as str
    (``sources`` empty where it does not apply), ``depth``, ``position``, ``iterations``,
    ``messages_verified``, ``ranks`` and ``senders`` as int64, ``cycles``,
    ``engine_cycles``, ``mhz`` (the engine's clock), ``ns`` and ``engine_ns`` as float
    (NaN where empty), ``total_cycles`` and ``total_engine_cycles`` as pandas' nullable
    Int64. A missing or malformed file raises :class:`moped.InputError`."""
    return _read(
        path,
        "matching.csv",
        MATCHING_COLUMNS,
        writer="moped matching",
        texts=_TEXTS,
        ints=_INTS,
        floats=_FLOATS,
        nullable_ints=_NULLABLE_INTS,
    )


def read_stream64(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``stream64.csv``, the microcoded match unit paper's benchmark (64
    messages against posted lists of 10 to 300 items, beside ideal hardware), from a
    finished folder of ``moped matching`` or :func:`moped.experiments.matching` that ran
    the ``microcoded`` engine, or from the file itself, typed: ``engine`` and
    ``benchmark`` as str, ``list_items``, ``percent_traversed``, ``traversed``,
    ``messages``, ``cycles`` and ``ideal_cycles`` as int64, the rest as float64. A missing
    or malformed file raises :class:`moped.InputError`."""
    return _read(
        path,
        "stream64.csv",
        STREAM64_COLUMNS,
        writer="moped matching with the microcoded engine among its engines",
        texts=_STREAM64_TEXTS,
        ints=_STREAM64_INTS,
        floats=_STREAM64_FLOATS,
    )


def read_lhs(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``lhs.csv``, the LHS paper's unexpected-search experiment (N unexpected
    messages, the receive for the x-th): in the CMP (``setting`` ``cmp``: the list, LHS
    with 64- and 16-byte entries, each with the L1 prefetcher off, next-line and stride)
    from a finished folder of ``moped matching`` or :func:`moped.experiments.matching`
    that ran ``software-lhs``, or in the paper's own setting (``dimmnet2``, ``dimmnet3``,
    each row one of the paper's conditions) from ``moped lhs`` or
    :func:`moped.experiments.lhs`, or from the file itself, typed: ``queue``,
    ``prefetch``, ``layout``, ``setting``, ``condition``, ``sw_prefetch`` (``off`` or the
    offset), ``attribute`` and ``flush`` (empty where there is no LH buffer on a NIC) and
    ``matcher`` (``host``, or the NIC's engine) as str, ``search_cycles``,
    ``search_cycles_per_entry``, ``core_ghz`` and ``search_ns_per_entry`` as float (NaN at
    position 1), the rest as int64. A missing or malformed file raises
    :class:`moped.InputError`."""
    return _read(
        path,
        "lhs.csv",
        LHS_COLUMNS,
        writer="moped matching with software-lhs among its engines, or moped lhs",
        texts=_LHS_TEXTS,
        ints=_LHS_INTS,
        floats=_LHS_FLOATS,
    )


def _read(
    path: str | PathLike[str],
    name: str,
    columns: tuple[str, ...],
    *,
    writer: str,
    texts: tuple[str, ...],
    ints: tuple[str, ...],
    floats: tuple[str, ...],
    nullable_ints: tuple[str, ...] = (),
) -> pandas.DataFrame:
    """``name`` in the folder ``path``, or the file ``path``, checked to hold ``columns``
    and read with the given types; empty float and nullable cells are missing values.
    ``writer`` names what writes the file, for the error when it is missing."""
    import pandas as pd

    p = Path(_args.path("path", path))
    csv = p / name if p.is_dir() else p
    if not csv.is_file():
        raise InputError(f"{fspath(csv)}: no such file (write it with {writer})")
    empty_is_missing = (*nullable_ints, *floats)
    dtype: dict[str, Any] = {c: str for c in texts}
    dtype.update({c: "int64" for c in ints})
    dtype.update({c: "Int64" for c in nullable_ints})
    dtype.update({c: "float64" for c in floats})
    try:
        header = pd.read_csv(csv, nrows=0).columns
        missing = [c for c in columns if c not in header]
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
