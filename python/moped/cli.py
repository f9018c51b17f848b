"""The ``moped`` console script: the Rust command line, reached through the extension.

``moped figure10`` also draws Figure 10 (matplotlib: ``figure10.*`` wide and
``figure10-2x2.*`` for a column, each as PNG, SVG and PDF) from the ``reductions.json``
the Rust side wrote into its ``--out`` folder, and where the ranks' cycles go
(``breakdown.*``, PNG, SVG and PDF) from its ``breakdown.csv``; ``moped matching``
its ``matching-*.png`` and ``.svg`` plots from ``matching.csv``, and ``moped engines`` its
``engines-*`` plots from ``engines.csv``."""

import sys
from pathlib import Path

from moped import _core


def _out_dir(args: list[str]) -> Path | None:
    """The value of ``--out`` in ``args``, if given."""
    for i, a in enumerate(args):
        if a == "--out" and i + 1 < len(args):
            return Path(args[i + 1])
        if a.startswith("--out="):
            return Path(a.split("=", 1)[1])
    return None


def main() -> None:
    """Runs ``moped`` with this process's arguments and exits with its status."""
    args = sys.argv[1:]
    status = _core.cli_main(["moped", *args])
    if status == 0 and args[:1] == ["figure10"] and "--help" not in args:
        out = _out_dir(args)
        paths: list[Path] = []
        if out is not None and (out / "reductions.json").is_file():
            from moped.plot import figure10

            paths += figure10(out / "reductions.json", out)
        if out is not None and (out / "breakdown.csv").is_file():
            from moped.plot import breakdown

            paths += breakdown(out / "breakdown.csv", out)
        if paths:
            print("figure: " + ", ".join(p.name for p in paths))
    if status == 0 and args[:1] == ["matching"] and "--help" not in args:
        out = _out_dir(args)
        if out is not None and (out / "matching.csv").is_file():
            from moped.plot import matching

            paths = matching(out / "matching.csv", out)
            print("plots: " + ", ".join(p.name for p in paths))
    if status == 0 and args[:1] == ["engines"] and "--help" not in args:
        out = _out_dir(args)
        if out is not None and (out / "engines.csv").is_file():
            from moped.plot import engines

            paths = engines(out / "engines.csv", out)
            print("plots: " + ", ".join(p.name for p in paths))
    sys.exit(status)


if __name__ == "__main__":
    main()
