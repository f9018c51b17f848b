"""The rows of the engines experiment's ``engines.csv`` (the transplant into MOPED) and
``tigon.csv`` (the paper's testbed) (``moped engines``, :func:`moped.experiments.engines`),
read back from a finished folder and typed."""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING

from moped import _core
from moped.matching_results import _read

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["ENGINES_COLUMNS", "SCHEMES", "TIGON_COLUMNS", "read_engines", "read_tigon"]

#: The columns of ``engines.csv``, in order (the Rust side's ``engines::CSV_HEADER``).
ENGINES_COLUMNS: tuple[str, ...] = tuple(_core.ENGINES_CSV_HEADER)
#: The schemes of the multi-CPU NIC paper's Table 2, after the base case.
SCHEMES: tuple[str, ...] = ("base", "SO", "RO", "DSR", "SR")
_TEXTS = ("scheme", "benchmark", "bound_step")
_FLOATS = ("bandwidth_bytes_per_cycle", "latency_cycles", "active_copies_mean")
#: Every other column: sizes, counts and cycles.
_INTS = tuple(c for c in ENGINES_COLUMNS if c not in (*_TEXTS, *_FLOATS))


def read_engines(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``engines.csv`` from a finished folder of ``moped engines`` or
    :func:`moped.experiments.engines`, or from the file itself, typed: ``scheme``,
    ``benchmark`` and ``bound_step`` as str, ``bandwidth_bytes_per_cycle``,
    ``latency_cycles`` and ``active_copies_mean`` as float64, the rest as int64. A missing
    or malformed file raises :class:`moped.InputError`."""
    return _read(
        path,
        "engines.csv",
        ENGINES_COLUMNS,
        writer="moped engines",
        texts=_TEXTS,
        ints=_INTS,
        floats=_FLOATS,
    )


#: The columns of ``tigon.csv``, in order (the Rust side's ``engines::tigon::TIGON_CSV_HEADER``).
TIGON_COLUMNS: tuple[str, ...] = tuple(_core.TIGON_CSV_HEADER)
_TIGON_TEXTS = ("scheme", "benchmark")
_TIGON_INTS = (
    "cpus",
    "bytes",
    "iterations",
    "handoffs",
    "data_frames",
    "ack_frames",
    "messages_verified",
    "frames_waited",
)
_TIGON_FLOATS = tuple(c for c in TIGON_COLUMNS if c not in (*_TIGON_TEXTS, *_TIGON_INTS))


def read_tigon(path: str | PathLike[str]) -> pandas.DataFrame:
    """The rows of ``tigon.csv`` (the multi-CPU NIC paper's tests on its testbed: two
    Tigon2 NICs running EMP) from a finished folder of ``moped engines`` or
    :func:`moped.experiments.engines`, or from the file itself, typed: ``scheme`` and
    ``benchmark`` as str, counts as int64, times (us), bandwidths (Mbit/s) and shares as
    float64. A missing or malformed file raises :class:`moped.InputError`."""
    return _read(
        path,
        "tigon.csv",
        TIGON_COLUMNS,
        writer="moped engines",
        texts=_TIGON_TEXTS,
        ints=_TIGON_INTS,
        floats=_TIGON_FLOATS,
    )
