#!/usr/bin/env bash
# Host speed of this tree against the code from before the access path was rebuilt
# (commit 99e9bf3, or --base COMMIT): both are built in release mode side by side, then
# run in one invocation, alternating, on the same host.
#
#   bash scripts/bench_compare.sh [--base COMMIT] [--repeat N] [--iterations F] [--no-figure10]
#
# 1. `moped bench --repeat 1`, N times for each build (5 by default), alternating; the
#    median host seconds of each benchmark, the ratio current / base, and host ns per
#    simulated load of stream-l1 (the loads are the same program's in both).
# 2. `moped figure10 --jobs 2` (its 44 runs; `--iterations F` scales them), base then
#    current: wall seconds and their ratio; reductions.csv and every run's stats.txt (all
#    but the simulator's own event counts and host time) must be byte-identical, or the
#    script fails.
#
# The base is checked out with `git worktree` under target/bench-base (or
# $CARGO_TARGET_DIR/bench-base) and built there once; nothing outside target/ is written.
set -euo pipefail

cd "$(dirname "$0")/.."
base=99e9bf38112f2c57419f1675ad0169d2b8ee0c66
repeat=5
iterations=""
figure10=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --base) base="$2"; shift 2 ;;
        --repeat) repeat="$2"; shift 2 ;;
        --iterations) iterations="$2"; shift 2 ;;
        --no-figure10) figure10=0; shift ;;
        *) echo "bench_compare.sh: unknown argument $1 (expected --base, --repeat, --iterations or --no-figure10)" >&2; exit 2 ;;
    esac
done

target="${CARGO_TARGET_DIR:-target}"
work="$(realpath -m "$target/bench-base")"
mkdir -p "$work"
if [[ ! -d "$work/src/.git" && ! -f "$work/src/.git" ]]; then
    git worktree add --detach "$work/src" "$base" >/dev/null
fi
git -C "$work/src" checkout --quiet --detach "$base"

echo "building the current tree and $base (release; the first build of each takes minutes)" >&2
cargo build --release --quiet
(cd "$work/src" && cargo build --release --quiet --target-dir "$work/build")
cur="$work/current-moped"
old="$work/base-moped"
cp "$target/release/moped" "$cur"
cp "$work/build/release/moped" "$old"

# ---- moped bench, alternating ----
runs="$work/bench-runs"
rm -rf "$runs"
mkdir -p "$runs"
for i in $(seq 1 "$repeat"); do
    "$old" bench --repeat 1 > "$runs/base-$i.txt"
    "$cur" bench --repeat 1 > "$runs/current-$i.txt"
done

calc() { awk "BEGIN { print $1 }"; }

# The median of the host seconds (field 8 of a `moped bench` line) of benchmark $2 in
# files $1-*.txt.
median() {
    awk -v b="$2" '$1 == b { print $8 }' "$runs/$1"-*.txt | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
loads=$(awk '$1 == "stream-l1" { for (i = 1; i < NF; i++) if ($i == "ns/load") { sub(/^\(/, "", $(i + 1)); print $(i + 1); exit } }' "$runs"/current-1.txt)

echo
echo "moped bench, median of $repeat alternating runs (host seconds):"
printf '%-10s %10s %10s %8s\n' benchmark base current ratio
for b in tester stream stream-l1 pingpong alltoall; do
    o=$(median base "$b")
    c=$(median current "$b")
    printf '%-10s %10.3f %10.3f %7.2fx\n' "$b" "$o" "$c" "$(calc "$c / $o")"
done
o=$(median base stream-l1)
c=$(median current stream-l1)
printf 'stream-l1: %.1f ns per load before, %.1f now (%s loads)\n' \
    "$(calc "$o * 1e9 / $loads")" "$(calc "$c * 1e9 / $loads")" "$loads"

if [[ "$figure10" == 0 ]]; then
    exit 0
fi

# ---- moped figure10 ----
scale=()
if [[ -n "$iterations" ]]; then
    scale=(--iterations "$iterations")
fi
seconds() {
    local out="$1"
    shift
    rm -rf "$out"
    local t0 t1
    t0=$(date +%s.%N)
    "$@" figure10 --out "$out" --jobs 2 "${scale[@]}" > /dev/null 2>&1
    t1=$(date +%s.%N)
    calc "$t1 - $t0"
}
echo
echo "moped figure10 --jobs 2 ${scale[*]} (44 runs), base then current:"
wo=$(seconds "$work/figure10-base" "$old")
wc=$(seconds "$work/figure10-current" "$cur")
printf 'wall seconds: base %.1f, current %.1f, ratio %.2fx\n' "$wo" "$wc" "$(calc "$wc / $wo")"

# The simulator's own counts and host time, and the miss latencies, which 99e9bf3 did not
# write: the lines tests/integration/identical_stats.rs (`own_count`) leaves out too.
own='^(sim\.events|sim\.event_kinds\.|sim\.max_queue|sim\.short_hits|host\.|system\.total\.miss_latency\.|system\.total\.l1d\.miss_latency|system\.total\.l2\.miss_latency)'
differ=0
cmp -s "$work/figure10-base/reductions.csv" "$work/figure10-current/reductions.csv" || {
    echo "reductions.csv differs" >&2
    differ=1
}
n=0
for f in "$work/figure10-base"/runs/*/stats.txt; do
    run=$(basename "$(dirname "$f")")
    n=$((n + 1))
    if ! cmp -s <(grep -Ev "$own" "$f") <(grep -Ev "$own" "$work/figure10-current/runs/$run/stats.txt"); then
        echo "stats.txt of $run differs" >&2
        differ=1
    fi
done
if [[ "$differ" != 0 ]]; then
    exit 1
fi
echo "reductions.csv and the $n runs' stats.txt identical (but event counts and host time)"
