"""The ``moped`` console script: the Rust command line, reached through the extension."""

import sys

from moped import _core


def main() -> None:
    """Runs ``moped`` with this process's arguments and exits with its status."""
    sys.exit(_core.cli_main(["moped", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
