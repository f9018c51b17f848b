"""Figure 10 from gem5, beside the embedded simulator's.

    GEM5=/path/to/gem5/build/MOPED/gem5.opt python scripts/gem5_figure10.py --out DIR \\
        [--iterations F] [--jobs N] [--large] [--config FILE]

Runs (or reuses) the embedded Figure 10 into DIR/embedded, then each of its runs in gem5
(gem5-configs/moped_cmp.py: the same workload file, design, seed, iteration scale and
configuration, warmed up and counted over the same timed region, every message's bytes
checked at its receiver) into DIR/gem5/runs/, and writes into DIR/gem5 what `moped
figure10` writes from gem5's statistics (reductions.csv and .json, report.md with the
paper's claims checked, the figure), and into DIR:

- comparison.csv: per run and metric, the embedded value, gem5's, and their difference
  in percent of gem5 (`moped compare`'s reader, src/analysis/sources.rs);
- comparison.md: the reductions and the claims' verdicts side by side, every run's
  cycles and misses against the tolerances (cycles 10 %, misses 5 %), and the host time
  of both simulators.

A gem5 run whose folder already holds a finished run is reused. Needs the moped package
(run it with the virtual environment that holds moped active, its Python the minor
version gem5 embeds) and GEM5 naming a gem5 built with EXTRAS=gem5-configs/moped_ext.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import moped

ROOT = Path(__file__).resolve().parents[1]
# The tolerances the gem5 companion is held to on Figure 10's metrics: cycles within 10 %,
# misses within 5 % (the L2 misses as Figure 10 counts them: the MOPEDs' line requests'
# with the cores').
TOLERANCE_PCT = {
    "cycles": 10.0,
    "l1_misses": 5.0,
    "l2_misses_private": 5.0,
    "l2_misses_global": 5.0,
}
# Shown beside them as counts: the cores' own L2 misses (requests sent to the directory).
CORES_L2 = "l2_misses"
# Each gem5 run's wall time, start-up and warm-up included (gem5's own hostSeconds restart
# with its statistics where the timed region starts).
WALL_FILE = "wall.json"


def gem5_env() -> dict[str, str]:
    env = dict(os.environ)
    site = str(Path(moped.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
    return env


def finished(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / "moped.json").read_text())["state"] == "finished"
    except (OSError, ValueError, KeyError):
        return False


def run_gem5(gem5: str, row: dict[str, Any], run_dir: Path, args: argparse.Namespace) -> float:
    """Runs one run of Figure 10 in gem5 unless its folder holds it; its wall seconds."""
    if finished(run_dir):
        return 0.0
    cmd = [
        gem5,
        "-d",
        str(run_dir),
        str(ROOT / "gem5-configs" / "moped_cmp.py"),
        "--workload",
        str(ROOT / row["workload"]) if not os.path.isabs(row["workload"]) else row["workload"],
        "--design",
        row["design"],
        "--seed",
        str(int(row["seed"])),
    ]
    if args.iterations is not None:
        cmd += ["--iterations", str(args.iterations)]
    if args.config:
        cmd += ["--config", str(Path(args.config).resolve())]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=gem5_env())
    (run_dir / "gem5.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = (r.stdout + r.stderr)[-2000:]
        raise SystemExit(f"gem5 failed on {row['benchmark']} under {row['design']}:\n{tail}")
    wall = time.monotonic() - t0
    (run_dir / WALL_FILE).write_text(json.dumps({"wall_seconds": wall}) + "\n")
    print(f"gem5: {row['benchmark']} under {row['design']} done", file=sys.stderr)
    return wall


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--iterations", type=float, default=None, help="scale every iteration count")
    p.add_argument("--jobs", type=int, default=2, help="gem5 runs at once")
    p.add_argument("--large", action="store_true", help="add the 1 MB IMB runs")
    p.add_argument("--config", default=None, help="moped system config (TOML), both hosts")
    args = p.parse_args()
    gem5 = os.environ.get("GEM5")
    if not gem5 or not os.access(gem5, os.X_OK):
        p.error("set GEM5 to a gem5.opt built with EXTRAS=gem5-configs/moped_ext")
    emb_dir, g5_dir = args.out / "embedded", args.out / "gem5"
    moped.experiments.figure10(
        emb_dir, large=args.large, iteration_scale=args.iterations, config=args.config
    )
    runs = moped.load_results(emb_dir).to_dict("records")
    (g5_dir / "runs").mkdir(parents=True, exist_ok=True)
    run_dir = {
        r["key"]: g5_dir / "runs" / f"{r['benchmark']}-{r['design']}-s{int(r['seed'])}"
        for r in runs
    }
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_gem5, gem5, r, run_dir[r["key"]], args) for r in runs]
        for f in futures:
            f.result()
    write_results(runs, run_dir, emb_dir, g5_dir, args)
    return 0


def write_results(runs, run_dir, emb_dir: Path, g5_dir: Path, args) -> None:
    import pandas as pd

    rows, records = [], []
    for r in runs:
        # The embedded run's folder, as `moped figure10` names it: <spec>-<design>-s<seed>.
        emb_run = f"{Path(r['workload']).stem}-{r['design']}-s{int(r['seed'])}"
        df = moped.compare(run_dir[r["key"]], emb_dir / "runs" / emb_run)
        for m in df.itertuples():
            rows.append(
                {
                    "benchmark": r["benchmark"],
                    "design": r["design"],
                    "seed": int(r["seed"]),
                    "metric": m.metric,
                    "embedded": m.embedded,
                    "gem5": m.gem5,
                    "relative_pct": m.relative_pct,
                }
            )
        metrics = dict(zip(df["metric"], df["gem5"], strict=True))
        records.append(
            {k: r[k] for k in ("benchmark", "group", "design")} | {"seed": int(r["seed"])} | metrics
        )
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "comparison.csv", index=False)
    moped.analysis.write_tables(g5_dir, records)
    notes = ["gem5 v24 with moped's extras (gem5-configs/moped_ext): Ruby runs the caches."]
    if args.iterations is not None:
        notes.append(f"Iteration counts scaled by {args.iterations}.")
    (g5_dir / "report.md").write_text(moped.analysis.report(records, notes))
    reductions = moped.analysis.reductions_frame(records)
    moped.plot.figure10(reductions, g5_dir, notes=notes)
    emb_records = moped.load_results(emb_dir)
    (args.out / "comparison.md").write_text(
        comparison_md(table, reductions, emb_records, records, runs, run_dir)
    )
    print(f"results in {args.out}", file=sys.stderr)


def wall_seconds(run_dir: Path) -> float | None:
    try:
        return float(json.loads((run_dir / WALL_FILE).read_text())["wall_seconds"])
    except (OSError, ValueError, KeyError):
        return None


def cycle_reductions_md(both) -> list[str]:
    """The execution-time reductions of Figure 10, each as `embedded / gem5` in percent."""
    cyc = both[both["metric"] == "cycles"]
    designs = list(dict.fromkeys(cyc["design"]))
    out = ["## Execution-time reductions, embedded / gem5", ""]
    out += ["| benchmark | " + " | ".join(d.upper() for d in designs) + " |"]
    out += ["|---|" + "---:|" * len(designs)]
    for bench, g in cyc.groupby("benchmark", sort=False):
        by = {r.design: r for r in g.itertuples()}
        cells = [
            f"{100 * by[d].reduction_embedded:.1f} / {100 * by[d].reduction_gem5:.1f}"
            if d in by
            else "-"
            for d in designs
        ]
        out.append(f"| {bench} | " + " | ".join(cells) + " |")
    return out + [""]


def comparison_md(table, g5_red, emb_records, g5_records, runs, run_dir) -> str:
    emb_red = moped.analysis.reductions_frame(emb_records)
    key = ["benchmark", "design", "metric"]
    both = emb_red[key + ["reduction"]].merge(
        g5_red[key + ["reduction"]], on=key, suffixes=("_embedded", "_gem5")
    )
    out = ["# Figure 10: gem5 beside the embedded simulator", ""]
    out += cycle_reductions_md(both)
    out += ["## Reductions against the baseline (1 - design / baseline)", ""]
    out += ["| benchmark | design | metric | embedded | gem5 |", "|---|---|---|---:|---:|"]
    for b in both.itertuples():
        out.append(
            f"| {b.benchmark} | {b.design} | {b.metric} | "
            f"{100 * b.reduction_embedded:.1f} % | {100 * b.reduction_gem5:.1f} % |"
        )
    out += ["", "## The paper's claims", "", "| claim | embedded | gem5 |", "|---|---|---|"]
    g5_claims = {c["id"]: c for c in moped.analysis.claims(g5_records)}
    for c in moped.analysis.claims(emb_records):
        other = g5_claims.get(c["id"], {}).get("verdict", "-")
        out.append(f"| {c['id']}: {c['title']} | {c['verdict']} | {other} |")
    out += ["", "## Every run, gem5 against embedded", ""]
    out += [
        "(gem5 - embedded) in percent of gem5; tolerances: cycles 10 %, L1 and L2 misses 5 %. "
        "Private and global L2 misses as Figure 10 counts them (the MOPEDs' line requests' "
        "misses with the cores'); the cores' own L2 misses as counts, embedded / gem5.",
        "",
    ]
    out += [
        "| benchmark | design | cycles | L1 misses | private L2 misses | global L2 misses "
        "| within | cores' L2 misses |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    worst = {m: 0.0 for m in TOLERANCE_PCT}
    for (bench, design), g in table.groupby(["benchmark", "design"], sort=False):
        pct = dict(zip(g["metric"], g["relative_pct"], strict=True))
        ok = all(abs(pct.get(m, 0.0)) <= t for m, t in TOLERANCE_PCT.items())
        for m in TOLERANCE_PCT:
            worst[m] = max(worst[m], abs(pct.get(m, 0.0)))
        cells = " | ".join(f"{pct.get(m, float('nan')):+.2f} %" for m in TOLERANCE_PCT)
        cores = g[g["metric"] == CORES_L2].iloc[0]
        counts = f"{cores['embedded']:.0f} / {cores['gem5']:.0f}"
        out.append(f"| {bench} | {design} | {cells} | {'yes' if ok else 'NO'} | {counts} |")
    out += ["", "Largest gaps: " + ", ".join(f"{m} {v:.2f} %" for m, v in worst.items()) + "."]
    g5_walls = [wall_seconds(run_dir[r["key"]]) for r in runs]
    emb_s = float(emb_records["host_seconds"].sum())
    out += ["", "## Host time", ""]
    if all(w is not None for w in g5_walls):
        g5_s = sum(w for w in g5_walls if w is not None)
        out.append(
            f"Seconds summed over the {len(runs)} runs, each whole (warm-up and timed region): "
            f"gem5 {g5_s:.1f} s of wall time per process (start-up included), embedded "
            f"{emb_s:.1f} s of simulation; gem5 took {g5_s / emb_s:.1f} times as long."
        )
    else:
        out.append(
            f"Embedded: {emb_s:.1f} s of simulation over the {len(runs)} runs; some gem5 "
            f"runs were reused from a folder without their wall time ({WALL_FILE})."
        )
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
