#!/usr/bin/env bash
# The project's test command: Rust formatting, lints and tests, then the Python package
# built into a local virtual environment (.venv) and its lints and tests.
#
#   bash scripts/test.sh
#
# Needs cargo (with rustfmt and clippy) and Python 3.10+ with pip; everything else is
# installed into .venv (the documentation site's MkDocs too; it builds into target/site). PYTHON picks the interpreter (default python3).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
START=$SECONDS

section() {
    printf '\n==== %s (%ds) ====\n' "$1" "$((SECONDS - START))"
}

section "cargo fmt --check"
cargo fmt --all -- --check

section "cargo clippy"
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --features python -- -D warnings
cargo clippy --all-targets --features ffi -- -D warnings

section "cargo test"
# One build for every test: the C ABI (`ffi`) only adds its module to the library.
cargo test --features ffi

section "python: build and install into .venv"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The tests need the extension's behaviour, not its last few percent of speed: thin LTO
# over 16 codegen units builds it in a few minutes, where the release profile's fat LTO
# over one unit (what the README's install builds) takes over 20 on two cores.
CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    .venv/bin/python -m pip install --quiet '.[test,docs]' ruff

section "ruff check"
.venv/bin/ruff check python
.venv/bin/ruff format --check python

section "mypy and stubtest"
# mypy checks the sources ([tool.mypy] in pyproject.toml); stubtest needs the extension
# itself, so it reads the stub installed beside it above, a copy of python/moped/_core.pyi.
.venv/bin/python -m mypy
.venv/bin/python -m mypy.stubtest moped._core

section "documentation site: mkdocs build --strict"
# Any warning (a broken link or anchor, a page left out of the navigation) fails it.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet

section "pytest"
set +e
# On every core (pytest-xdist), each file's tests on one worker, which computes the file's
# module fixtures (quick experiments) once.
PATH="$PWD/.venv/bin:$PATH" .venv/bin/python -m pytest -n auto --dist loadfile "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest: no tests collected (treated as success)"
    status=0
fi
if [ "$status" -ne 0 ]; then
    exit "$status"
fi

section "notebooks: every tutorial in examples/ runs"
PATH="$PWD/.venv/bin:$PATH" .venv/bin/python -m pytest --nbmake -n auto examples -p no:cacheprovider -q

section "all tests passed"
