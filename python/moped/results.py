"""Helpers around simulation results: the ``Result`` class, nesting of dotted statistic
names, and ``{name: value}`` from a gem5-style ``stats.txt`` (ours or gem5's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import StatsError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

Number = int | float

__all__ = ["Result", "Stat", "nest", "parse_stats", "read_stats_txt", "read_text"]


@dataclass(frozen=True)
class Stat:
    """One statistic: its dotted name, value, unit and description."""

    name: str
    value: Number
    unit: str
    description: str


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Turns ``{"a.b.c": 1}`` into ``{"a": {"b": {"c": 1}}}``.

    A name that is both a leaf and a prefix of other names (``a.b`` and ``a.b.c``) keeps its
    own value under the empty key: ``{"a": {"b": {"": v, "c": 1}}}``.
    """
    root: dict[str, Any] = {}
    for name, value in flat.items():
        parts = name.split(".")
        node = root
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {} if child is None else {"": child}
                node[part] = child
            node = child
        leaf = parts[-1]
        if isinstance(node.get(leaf), dict):
            node[leaf][""] = value
        else:
            node[leaf] = value
    return root


#: The range of a dump index (a 64-bit signed integer, negative from the end).
_I64 = (-(2**63), 2**63 - 1)


@dataclass
class Result:
    """The outcome of one simulated program.

    ``stats`` is a nested dict built from the dotted statistic names
    (``result.stats["system"]["total"]["l2"]["misses_memory"]``), ``flat`` maps each full
    name to its value (a distribution by its lines, ``name::samples`` to ``name::total``,
    as ``stats.txt`` prints them), ``cycles`` is the simulated time, ``config_toml`` the resolved
    configuration the run used.
    """

    stat_list: list[Stat]
    cycles: int
    config_toml: str
    protocol: str
    host_seconds: float = 0.0
    out: str | None = None
    flat: dict[str, Number] = field(init=False, repr=False)
    stats: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.flat = {s.name: s.value for s in self.stat_list}
        self.stats = nest(self.flat)

    @classmethod
    def from_core(cls, raw: Mapping[str, Any], out: str | None = None) -> Result:
        """Builds a Result from the dict that ``moped._core.run`` returns."""
        stats = [Stat(str(n), v, str(u), str(d)) for n, v, u, d in raw["stats"]]
        return cls(
            stat_list=stats,
            cycles=int(raw["cycles"]),
            config_toml=str(raw["config_toml"]),
            protocol=str(raw["protocol"]),
            host_seconds=float(raw.get("host_seconds", 0.0)),
            out=out,
        )

    def __getitem__(self, name: str) -> Number:
        """A statistic's value by its full name; a name the run lacks raises StatsError."""
        value = self.flat.get(_args.text("name", name))
        if value is None:
            raise StatsError(f"no statistic {name} in this run")
        return value

    def to_pandas(self) -> pandas.DataFrame:
        """A DataFrame with one row per statistic: name, value, unit, description."""
        import pandas as pd

        return pd.DataFrame(
            {
                "name": [s.name for s in self.stat_list],
                "value": [s.value for s in self.stat_list],
                "unit": [s.unit for s in self.stat_list],
                "description": [s.description for s in self.stat_list],
            }
        )

    def miss_summary(self) -> dict[str, Number]:
        """The headline counters of the paper, summed over all cores."""
        keys = (
            "l1d.hits",
            "l1d.misses",
            "l2.hits",
            "l2.misses",
            "l2.misses_other_cache",
            "l2.misses_memory",
        )
        out: dict[str, Number] = {k: self.flat.get(f"system.total.{k}", 0) for k in keys}
        out["cycles"] = self.cycles
        return out

    def __repr__(self) -> str:
        return (
            f"Result(protocol={self.protocol!r}, cycles={self.cycles}, "
            f"stats={len(self.stat_list)} values)"
        )


def read_stats_txt(path: str | PathLike[str], *, dump: int = 0) -> dict[str, Number]:
    """Reads a gem5-style ``stats.txt`` (ours or gem5's) into ``{name: value}``.

    ``dump`` picks which ``Begin/End Simulation Statistics`` block to read when the file
    holds several (from 0, or from the end when negative). Vector elements, histogram
    fields and ``oneline`` counters (``name::0``, ...) are values of their own, and so is
    each line of a distribution (``name::samples``, ``name::mean``, ``name::stdev``,
    ``name::underflows``, a bucket ``name::0-3``, ..., ``name::total``). A file that
    cannot be read or parsed raises :class:`moped.StatsError` (a :class:`moped.MopedError`)
    naming it; see :func:`moped.read_stats` for descriptions, units and percentages.
    """
    dump = _args.integer("dump", dump, *_I64)
    text, file = read_text(path)
    [(_, rows)] = parse_stats(text, file=file, dump=dump)
    return {name: value for name, value, *_ in rows}


def read_text(path: str | PathLike[str]) -> tuple[str, str]:
    """The text of a statistics file and its name; an unreadable one raises StatsError."""
    p = _args.path("path", path)
    try:
        with open(p, encoding="utf-8") as f:
            return f.read(), p
    except (OSError, UnicodeDecodeError) as e:
        raise StatsError(f"{p}: cannot read: {e}") from e


def parse_stats(
    text: str, *, file: str = "<string>", dump: int | None = None
) -> list[tuple[int, list[tuple[Any, ...]]]]:
    """Parses ``stats.txt`` text into ``(dump index, rows)`` pairs, every dump or only
    dump ``dump`` (from 0, or from the end when negative). A row is ``(name, value, pdf,
    cdf, unit, description, line)``, pdf and cdf in percent or None."""
    if dump is not None:
        dump = _args.integer("dump", dump, *_I64)
    return _core.parse_stats(_args.text("text", text), _args.text("file", file), dump)
