"""moped: a cycle-level simulator of a 16-core CMP with directory MOESI coherence, built to
study MOPED, a device that moves MPI message data through the coherence protocol.

The simulator is Rust (``moped._core``); this package adds a configuration class, result
objects and helpers::

    import moped

    cfg = moped.SystemConfig(l2={"latency": 12})
    res = moped.run("workloads/examples/stream.toml", config=cfg)
    print(res.stats["system"]["total"]["l2"]["misses_memory"], res.cycles)
    df = res.to_pandas()

Sweeps and the paper's Figure 10: :func:`sweep` runs many workloads on any
``concurrent.futures``-style executor, :mod:`moped.analysis` turns run records into
reductions against the baseline and checks the paper's claims, :mod:`moped.plot` draws
the figure, and ``moped.experiments.figure10(out)`` does all of it.

gem5: :func:`read_stats` reads any gem5-format ``stats.txt`` into a DataFrame, and
:func:`compare` sets a gem5 run beside an embedded run of the same workload.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from os import PathLike, fspath
from typing import Any

from moped import _core
from moped._core import (
    ConfigError,
    MopedError,
    ProgramError,
    ProtocolError,
    SimulationError,
    StatsError,
)
from moped.results import Result, Stat, read_stats_txt

__version__: str = _core.__version__

__all__ = [
    "ConfigError",
    "MopedError",
    "ProgramError",
    "ProtocolError",
    "Result",
    "SimulationError",
    "Stat",
    "StatsError",
    "SweepError",
    "SystemConfig",
    "Task",
    "__version__",
    "analysis",
    "compare",
    "experiments",
    "host_speed",
    "lint_protocol",
    "load_goal",
    "plot",
    "protocol_names",
    "protocol_table",
    "random_test",
    "read_stats",
    "read_stats_txt",
    "run",
    "sweep",
]


def _read_text(path: str, error: type[MopedError]) -> str:
    """The UTF-8 text of a file; a file that cannot be read raises ``error`` naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{path}: cannot read: {e}") from e


def _expand(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Expands dotted keys (``"l2.latency": 12``) into nested dicts, merging with nested ones
    (``l2={"latency": 12}``)."""
    out: dict[str, Any] = {}

    def put(path: list[str], value: Any) -> None:
        node = out
        for i, part in enumerate(path[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"config key `{'.'.join(path[: i + 1])}` is not a table")
            node = child
        leaf = path[-1]
        if isinstance(value, Mapping):
            for k, v in value.items():
                put([*path, *str(k).split(".")], v)
        elif isinstance(node.get(leaf), dict):
            raise ConfigError(f"config key `{'.'.join(path)}` is a table, not a value")
        else:
            node[leaf] = value

    for key, value in overrides.items():
        put(str(key).split("."), value)
    return out


class SystemConfig:
    """A validated system configuration; every field defaults to the paper's Table 1.

    Overrides are given nested or dotted, and checked at once (an unknown key raises
    :class:`ConfigError` naming its key path)::

        SystemConfig(l2={"latency": 12})
        SystemConfig(**{"l2.latency": 12, "system.cores": 4})
        SystemConfig.from_file("configs/table1.toml", memory={"latency": 50})
    """

    __slots__ = ("_file", "_toml")

    def __init__(self, **overrides: Any) -> None:
        self._file = "<defaults>"
        self._toml = _core.validate_config(_core.default_config_toml(), self._file, None)
        if overrides:
            self._toml = _core.validate_config(self._toml, "<overrides>", _expand(overrides))

    @classmethod
    def _from_text(cls, text: str, file: str, overrides: Mapping[str, Any]) -> SystemConfig:
        cfg = cls.__new__(cls)
        cfg._file = file
        cfg._toml = _core.validate_config(text, file, _expand(overrides) if overrides else None)
        return cfg

    @classmethod
    def from_toml(cls, text: str, *, file: str = "<string>", **overrides: Any) -> SystemConfig:
        """A config from TOML text (missing fields take their defaults), plus overrides."""
        return cls._from_text(text, file, overrides)

    @classmethod
    def from_file(cls, path: str | PathLike[str], **overrides: Any) -> SystemConfig:
        """A config from a TOML file (missing fields take their defaults), plus overrides."""
        p = fspath(path)
        return cls._from_text(_read_text(p, ConfigError), p, overrides)

    def replace(self, **overrides: Any) -> SystemConfig:
        """A copy of this config with more overrides applied."""
        return self._from_text(self._toml, self._file, overrides)

    def to_toml(self) -> str:
        """The resolved configuration as TOML (every field written out)."""
        return self._toml

    def to_dict(self) -> dict[str, Any]:
        """The resolved configuration as a nested dict."""
        return json.loads(_core.config_to_json(self._toml, self._file))

    def __getitem__(self, key: str) -> Any:
        node: Any = self.to_dict()
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(key)
            node = node[part]
        return node

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SystemConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self._toml)

    def __repr__(self) -> str:
        return f"SystemConfig(file={self._file!r})"


def _config_toml(config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None) -> str:
    if config is None:
        return SystemConfig().to_toml()
    if isinstance(config, SystemConfig):
        return config.to_toml()
    if isinstance(config, Mapping):
        return SystemConfig(**config).to_toml()
    return SystemConfig.from_file(config).to_toml()


def run(
    program: str | PathLike[str],
    config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None = None,
    protocol: str = "baseline",
    seed: int = 1,
    out: str | PathLike[str] | None = None,
) -> Result:
    """Simulates a program file (see the README for its format) and returns its statistics.

    ``config`` is a :class:`SystemConfig`, a dict of overrides, a TOML file path, or None for
    the paper's Table 1. With ``out``, stats.txt, stats.json, stats.csv and config.toml are
    written into that folder too.
    """
    out_dir = None if out is None else fspath(out)
    raw = _core.run(_config_toml(config), fspath(program), protocol, seed, out_dir)
    return Result.from_core(raw, out=out_dir)


def random_test(cores: int = 4, checks: int = 1000, seed: int = 1) -> dict[str, int]:
    """Runs the random coherence tester; raises :class:`SimulationError` (naming the seed and
    the replay command) on a failure, else returns its counters."""
    return _core.random_test(cores, checks, seed)


def protocol_names() -> list[str]:
    """Names of the shipped protocols."""
    return _core.protocol_names()


def protocol_table(name: str = "baseline") -> str:
    """The transition tables of a protocol's machines, as Markdown."""
    return _core.protocol_markdown(name)


def lint_protocol(path: str | PathLike[str]) -> None:
    """Checks one protocol machine file; raises :class:`ProtocolError` (``file:line:col:``)."""
    p = fspath(path)
    _core.lint_protocol(_read_text(p, ProtocolError), p)


# After the definitions above: these modules use them.
from moped import analysis, experiments, plot  # noqa: E402
from moped.batch import SweepError, Task, sweep  # noqa: E402
from moped.gem5 import compare, host_speed, read_stats  # noqa: E402


def load_goal(path: str | PathLike[str]) -> dict[str, Any]:
    """Reads a GOAL schedule (LogGOPSim's text format) as the simulator would run it and
    returns a summary: ``name``, ``notes`` and per rank its ``calls``, ``sends``,
    ``recvs``, ``any_source_recvs`` and ``buffer_bytes``. A malformed schedule raises
    :class:`ProgramError` naming ``file:line:col``. Run one with
    ``moped.sweep([{"workload": path, "design": "optcopy"}])``."""
    p = fspath(path)
    return json.loads(_core.parse_goal(_read_text(p, ProgramError), p))
