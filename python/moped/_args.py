"""Checks of the public functions' arguments, declared once: a value of the wrong type
raises TypeError naming the parameter, a value of the right type that cannot be used
raises :class:`moped.InputError`. Without them a caller would meet AttributeError,
OverflowError or a TypeError from deep inside, naming nothing it wrote."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral, Real
from os import PathLike, fspath
from typing import Any

from moped._core import InputError

#: The largest seed or count the simulator takes (a 64-bit unsigned integer).
U64_MAX = 2**64 - 1


def _wrong(name: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{name} must be {expected}, not {type(value).__name__}")


def path(name: str, value: Any) -> str:
    """A file or folder path given as str or os.PathLike."""
    if isinstance(value, (str, PathLike)):
        p = fspath(value)
        if isinstance(p, str):
            return p
    raise _wrong(name, "a path (str or os.PathLike)", value)


def optional_path(name: str, value: Any) -> str | None:
    return None if value is None else path(name, value)


def text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _wrong(name, "a str", value)


def integer(name: str, value: Any, lo: int = 0, hi: int = U64_MAX) -> int:
    """An int (not a bool) within ``lo`` to ``hi``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise _wrong(name, "an int", value)
    v = int(value)
    if not lo <= v <= hi:
        raise InputError(f"{name} = {v} is out of range ({lo} to {hi})")
    return v


def number(name: str, value: Any) -> float:
    """An int or float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise _wrong(name, "a number", value)
    return float(value)


def optional_number(name: str, value: Any) -> float | None:
    return None if value is None else number(name, value)


def flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _wrong(name, "a bool", value)


def mapping(name: str, value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise _wrong(name, "a mapping (dict)", value)
