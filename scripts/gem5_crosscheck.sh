#!/usr/bin/env bash
# Cross-checks the gem5 companion against the embedded simulator:
#   1. gem5's RubyTester over MOPED_CMP_directory under each design (CHECKS checks, 16 cores);
#   2. IMB PingPong, IMB Alltoall and NPB CG at 16 kB under each design in gem5 and in the
#      embedded simulator, every message's bytes checked in both;
#   3. `moped compare` on each pair, the host time of both, and the speed ratio to gem5
#      per workload and design (`moped.speed_ratio`).
#
#   GEM5=/path/to/gem5/build/MOPED/gem5.opt bash scripts/gem5_crosscheck.sh [OUT]
#
# GEM5 must name a gem5 v24.0 built with EXTRAS=gem5-configs/moped_ext (docs/gem5.md).
# CHECKS (default 1000000), DESIGNS, WORKLOADS, JOBS (parallel gem5 runs, default 2) and
# NETWORK (gem5's network: moped, the embedded model's timing, by default; or simple,
# gem5's SimpleNetwork) may be set in the environment; RT=0 leaves out the RubyTester runs (the report then
# shows those already in OUT), and RUN=0 runs nothing and writes the report of OUT. Results go to OUT (default results/gem5-crosscheck).
set -euo pipefail

cd "$(dirname "$0")/.."
: "${GEM5:?set GEM5 to a gem5.opt built with EXTRAS=gem5-configs/moped_ext}"
OUT="${1:-results/gem5-crosscheck}"
CHECKS="${CHECKS:-1000000}"
DESIGNS="${DESIGNS:-baseline basemoped optcopy optcache}"
WORKLOADS="${WORKLOADS:-imb-pingpong imb-alltoall npb-cg}"
JOBS="${JOBS:-2}"
RT="${RT:-1}"
RUN="${RUN:-1}"
NETWORK="${NETWORK:-moped}"
MOPED="${MOPED:-moped}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"

# gem5's embedded Python imports the moped package from where this Python finds it.
SITE=$("$PY" -c 'import moped, pathlib; print(pathlib.Path(moped.__file__).resolve().parents[1])')
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

spec() {
    case "$1" in
        imb-pingpong) echo workloads/imb/pingpong-16k.toml ;;
        imb-alltoall) echo workloads/imb/alltoall-16k.toml ;;
        npb-cg) echo workloads/npb/cg-S.toml ;;
        *) echo "unknown workload $1" >&2; return 1 ;;
    esac
}

timed() { # timed LOG CMD...: runs CMD, appends its wall time in seconds to LOG.time
    local log=$1; shift
    local t0=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    echo $((SECONDS - t0)) >"$log.time"
    return $rc
}

jobs_list=()
for d in $DESIGNS; do
    [ "$RT" = 0 ] || jobs_list+=("rt $d")
    for w in $WORKLOADS; do jobs_list+=("cmp $d $w"); done
done

run_job() {
    set -- $1
    case "$1" in
        rt)
            timed "$OUT/rt-$2.log" "$GEM5" -d "$OUT/rt-$2" gem5-configs/moped_random_test.py \
                --design "$2" --checks "$CHECKS" --network "$NETWORK" ;;
        cmp)
            timed "$OUT/gem5-$3-$2.log" "$GEM5" -d "$OUT/gem5-$3-$2" gem5-configs/moped_cmp.py \
                --design "$2" --workload "$3" --network "$NETWORK" &&
            # Both hosts run the workload as `moped mpi` does by default: warmed up, over
            # its timed region (gem5's statistics reset and dumped at its marks), the cores
            # overlapping their loads' misses.
            timed "$OUT/emb-$3-$2.log" "$MOPED" mpi --workload "$(spec "$3")" --protocol "$2" \
                --out "$OUT/emb-$3-$2" ;;
    esac
}
export -f run_job timed spec
export OUT CHECKS GEM5 MOPED NETWORK

if [ "$RUN" != 0 ]; then
    printf '%s\n' "${jobs_list[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_job "{}" || echo "FAILED: {}"' \
        | tee "$OUT/failures.txt"
fi

{
    echo "# gem5 cross-check (gem5's network: $NETWORK)"
    echo
    "$PY" - "$OUT" "$WORKLOADS" "$DESIGNS" <<'PYEOF'
import sys
from pathlib import Path

import moped

# gem5 - embedded in percent of gem5, per run: the summary of the tables below.
out, workloads, designs = Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
metrics = ["cycles", "l1_misses", "l2_misses", "l2_misses_private", "l2_misses_global"]
print("| workload | design | gem5 cycles | embedded cycles | " +
      " | ".join(m.replace("_", " ") + " %" for m in metrics) + " |")
print("|---|---|---:|---:|" + "---:|" * len(metrics))
for w in workloads:
    for d in designs:
        try:
            df = moped.compare(out / f"gem5-{w}-{d}", out / f"emb-{w}-{d}").set_index("metric")
        except moped.StatsError as e:
            print(f"| {w} | {d} | ({e}) |" + " |" * (len(metrics) + 1))
            continue
        cells = [f"{df.at[m, 'relative_pct']:+.2f}" if m in df.index else "" for m in metrics]
        print(f"| {w} | {d} | {df.at['cycles', 'gem5']:,.0f} | "
              f"{df.at['cycles', 'embedded']:,.0f} | " + " | ".join(cells) + " |")
PYEOF
    echo
    echo "| RubyTester | result | host s |"
    echo "|---|---|---:|"
    for d in $DESIGNS; do
        [ -f "$OUT/rt-$d.log" ] || continue
        n=$(grep -o -- '--checks [0-9]*' "$OUT/rt-$d.log" | head -1 | cut -d' ' -f2 || true)
        r=$(grep -o "Ruby Tester completed\|Deadlock detected\|failure[^\n]*" "$OUT/rt-$d.log" | head -1 || true)
        echo "| $d (${n:-?} checks) | ${r:-see rt-$d.log} | $(cat "$OUT/rt-$d.log.time" 2>/dev/null) |"
    done
    for w in $WORKLOADS; do
        for d in $DESIGNS; do
            echo
            echo "## $w under $d (host s: gem5 $(cat "$OUT/gem5-$w-$d.log.time" 2>/dev/null), embedded $(cat "$OUT/emb-$w-$d.log.time" 2>/dev/null))"
            echo
            "$MOPED" compare --gem5 "$OUT/gem5-$w-$d" --embedded "$OUT/emb-$w-$d" --format md \
                || echo "(compare failed)"
        done
    done
    echo
    echo "## Payloads verified and host speed"
    echo
    "$PY" - "$OUT" "$WORKLOADS" "$DESIGNS" <<'PYEOF'
import math
import sys
from pathlib import Path

import moped

out, workloads, designs = Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
print("| workload | design | host | messages verified | bytes verified | cycles | "
      "host s | cycles/s | messages/s | events/s | wall s |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for w in workloads:
    for d in designs:
        for host, tag in (("gem5", "gem5"), ("embedded", "emb")):
            run = out / f"{tag}-{w}-{d}"
            wall = Path(f"{run}.log.time")
            try:
                s = moped.host_speed(run)
            except moped.StatsError as e:
                print(f"| {w} | {d} | {host} | ({e}) |||||||| |")
                continue
            print(f"| {w} | {d} | {host} | {s['messages_verified']:,.0f} | "
                  f"{s['bytes_verified']:,.0f} | {s['cycles']:,.0f} | {s['host_seconds']:.3g} | "
                  f"{s['cycles_per_second']:,.0f} | {s['messages_per_second']:,.0f} | "
                  f"{s['events_per_second']:,.0f} | "
                  f"{wall.read_text().strip() if wall.exists() else ''} |")

# The speed-up for the same traffic: gem5's host seconds over the embedded run's, per
# design, and per workload their geometric mean.
print()
print("## Speed ratio to gem5 (gem5 host s / embedded host s, same messages verified)")
print()
print("| workload | " + " | ".join(designs) + " | geometric mean |")
print("|---|" + "---:|" * (len(designs) + 1))
for w in workloads:
    cells, ratios = [], []
    for d in designs:
        try:
            r = moped.speed_ratio(out / f"gem5-{w}-{d}", out / f"emb-{w}-{d}")
        except moped.StatsError as e:
            cells.append(f"({e})")
            continue
        ratios.append(r["host_seconds"])
        cells.append(f"{r['host_seconds']:.1f}x")
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"| {w} | " + " | ".join(cells) + f" | {gm:.1f}x |")
PYEOF
} >"$OUT/report.md"
echo "report: $OUT/report.md"
