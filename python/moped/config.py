"""System configurations: :class:`SystemConfig`, validated by the simulator's own config
reader, and the TOML every run is given."""

from __future__ import annotations

import json
from collections.abc import Mapping
from os import PathLike
from typing import Any

from moped import _args, _core
from moped._core import ConfigError, MopedError

__all__ = ["SystemConfig", "check_config", "config_toml", "read_text"]


def read_text(path: str, error: type[MopedError]) -> str:
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
        return cls._from_text(_args.text("text", text), _args.text("file", file), overrides)

    @classmethod
    def from_file(cls, path: str | PathLike[str], **overrides: Any) -> SystemConfig:
        """A config from a TOML file (missing fields take their defaults), plus overrides."""
        p = _args.path("path", path)
        return cls._from_text(read_text(p, ConfigError), p, overrides)

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
        """A value or section by its dotted key path (``cfg["l2.latency"]``); a key the
        config lacks raises :class:`ConfigError` naming it."""
        node: Any = self.to_dict()
        for part in _args.text("key", key).split("."):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"config key `{key}`: no such key")
            node = node[part]
        return node

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SystemConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self._toml)

    def __repr__(self) -> str:
        return f"SystemConfig(file={self._file!r})"


def config_toml(config: SystemConfig | Mapping[str, Any] | str | PathLike[str] | None) -> str:
    """The resolved TOML of a :class:`SystemConfig`, a dict of overrides, a TOML file path,
    or None (the paper's Table 1)."""
    if config is None:
        return SystemConfig().to_toml()
    if isinstance(config, SystemConfig):
        return config.to_toml()
    if isinstance(config, Mapping):
        return SystemConfig(**{str(k): v for k, v in config.items()}).to_toml()
    return SystemConfig.from_file(check_config(config)).to_toml()


def check_config(config: Any) -> Any:
    """``config`` itself if it is what :func:`config_toml` takes, else TypeError."""
    if config is None or isinstance(config, (SystemConfig, Mapping, str, PathLike)):
        return config
    raise TypeError(
        "config must be a SystemConfig, a dict of overrides, a TOML file path or None, "
        f"not {type(config).__name__}"
    )


def flatten(tree: Mapping[Any, Any], prefix: str = "") -> dict[str, Any]:
    """A nested configuration table as dotted keys: ``{"l2": {"latency": 12}}`` as
    ``{"l2.latency": 12}``; dotted keys stay as given."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{key}."))
        else:
            out[key] = v
    return out


def default_values() -> dict[str, Any]:
    """Every configuration key, dotted, with its default (the paper's Table 1) value."""
    return flatten(SystemConfig().to_dict())
