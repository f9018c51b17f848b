"""The paper's designs as the simulator defines them (``src/design.rs``): their names,
the paper's labels and a line about each. Nothing here spells a design name."""

from __future__ import annotations

from moped import _core

__all__ = ["DESCRIPTIONS", "DESIGNS", "LABELS", "MOPED_DESIGNS"]

_ALL = _core.designs()
#: Every design's name, the baseline first.
DESIGNS: tuple[str, ...] = tuple(name for name, _, _ in _ALL)
#: The designs with a MOPED beside each L2, in the paper's order.
MOPED_DESIGNS: tuple[str, ...] = DESIGNS[1:]
#: The paper's spelling of each design (``OPTCOPY``).
LABELS: dict[str, str] = {name: label for name, label, _ in _ALL}
#: One line about each design.
DESCRIPTIONS: dict[str, str] = {name: desc for name, _, desc in _ALL}
BASELINE: str = DESIGNS[0]
