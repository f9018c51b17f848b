#!/usr/bin/env bash
# Host speed: `moped bench` on the plain release build, the wall time and simulated
# events per second of the main job (`moped figure10`, skipped with BENCH_FIGURE10=0),
# then `moped bench` on a profile-guided (PGO) build of the same sources.
#
#   bash scripts/bench.sh [--repeat N]      (arguments go to `moped bench`)
#
# The PGO build is trained on simulations other than the benchmark's own: random tests with
# other seeds and core counts, and the example programs (not the exhaustive checker, whose
# use of the controllers would weigh their branches differently). It needs the
# `llvm-profdata` that matches rustc's LLVM (rustup's `llvm-tools` component, installed
# here when missing); without it only the plain build is measured. Everything is built
# under target/ (or $CARGO_TARGET_DIR), in pgo/ for the profiles and both PGO builds.
set -euo pipefail

cd "$(dirname "$0")/.."
TARGET="${CARGO_TARGET_DIR:-target}"
PGO="$TARGET/pgo"

echo "==== plain release build ===="
cargo build --release --quiet
"$TARGET/release/moped" bench "$@"

if [[ "${BENCH_FIGURE10:-1}" != 0 ]]; then
    echo
    echo "==== moped figure10 (44 runs; the last line gives wall time and events/s) ===="
    out="$TARGET/bench-figure10"
    rm -rf "$out"
    "$TARGET/release/moped" figure10 --out "$out" 2>/dev/null | tail -1
    echo "timing: $(cat "$out/timing.json")"
fi

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [[ ! -x "$profdata" ]] && command -v rustup >/dev/null 2>&1; then
    echo "(installing rustup's llvm-tools component for llvm-profdata)"
    rustup component add llvm-tools >/dev/null 2>&1 || true
fi
if [[ ! -x "$profdata" ]]; then
    echo "no llvm-profdata for this rustc at $profdata: skipping the PGO build" >&2
    echo "(install it with: rustup component add llvm-tools)" >&2
    exit 0
fi

echo
echo "==== profile-guided build (trained on other seeds and workloads) ===="
rm -rf "$PGO/profiles"
RUSTFLAGS="-Cprofile-generate=$(realpath -m "$PGO/profiles")" \
    cargo build --release --quiet --target-dir "$PGO/gen"
train="$PGO/gen/release/moped"
"$train" random-test --cores 16 --checks 60000 --seed 101 >/dev/null
"$train" random-test --cores 4 --checks 30000 --seed 102 >/dev/null
for p in workloads/examples/*.toml; do
    # A program that uses the MOPED ports needs a design with MOPED.
    protocol=baseline
    if grep -qE '^[[:space:]]*moped_(reserve|send|recv|poll)' "$p"; then protocol=optcopy; fi
    "$train" run --program "$p" --protocol "$protocol" \
        --out "$PGO/train-runs/$(basename "$p" .toml)" >/dev/null
done
"$profdata" merge -o "$PGO/merged.profdata" "$PGO/profiles"
RUSTFLAGS="-Cprofile-use=$(realpath -m "$PGO/merged.profdata")" \
    cargo build --release --quiet --target-dir "$PGO/use"
"$PGO/use/release/moped" bench "$@"
echo
echo "PGO binary: $PGO/use/release/moped"
