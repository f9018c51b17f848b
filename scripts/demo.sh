#!/usr/bin/env bash
# The main job: a long random coherence test on 16 cores, then the streaming example with
# its miss statistics. Uses the `moped` on PATH (pip install . puts it there), or builds
# the binary with cargo when there is none.
#
#   bash scripts/demo.sh [OUT_DIR]      (results in results/demo by default)
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="${1:-results/demo}"

if command -v moped >/dev/null 2>&1; then
    MOPED=(moped)
else
    echo "(no moped on PATH: building it with cargo)"
    cargo build --release --quiet
    MOPED=("${CARGO_TARGET_DIR:-target}/release/moped")
fi

echo "==== random coherence test: 16 cores, 20000 checks ===="
"${MOPED[@]}" random-test --cores 16 --checks 20000 --seed 1

echo
echo "==== exhaustive protocol check: c1, c2, c3 ===="
"${MOPED[@]}" check

echo
echo "==== streaming example (workloads/examples/stream.toml) ===="
"${MOPED[@]}" run --program workloads/examples/stream.toml --out "$OUT"

echo
echo "==== MOPED: a 16 KiB message sent three times from a reused send buffer ===="
echo "     (workloads/examples/moped_pingpong.toml under each MOPED design)"
printf '%-10s %10s %28s\n' design cycles "sender L2 misses to memory"
for design in basemoped optcopy optcache; do
    "${MOPED[@]}" run --program workloads/examples/moped_pingpong.toml \
        --protocol "$design" --out "$OUT/moped-$design" >/dev/null
    awk -v d="$design" '$1 == "sim.cycles" { c = $2 }
        $1 == "system.cpu0.l2.misses_memory" { m = $2 }
        END { printf "%-10s %10s %28s\n", d, c, m }' "$OUT/moped-$design/stats.txt"
done
echo
echo "results written to $OUT (stats.txt, stats.json, stats.csv, config.toml)"
