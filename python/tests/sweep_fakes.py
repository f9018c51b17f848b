"""Stand-ins for ``moped._core.run_workload`` in sweep tests. They live in a module of
their own so process-pool workers can import them by name."""

from __future__ import annotations

import json
from pathlib import Path

#: Baseline cycles per benchmark; each design's cycles are a fixed share of them.
BASE_CYCLES = {"PP": 1000, "XC": 1200, "BC": 1500, "RD": 1800, "GA": 2000, "AA": 3000}
DESIGN_SHARE = {"baseline": 1.0, "basemoped": 0.3, "optcopy": 0.2, "optcache": 0.19}


#: Spec file stems of the real specs, by their short names.
SHORT = {"pingpong": "PP", "pingping": "XC", "bcast": "BC", "reduce": "RD", "gather": "GA"}
SHORT["alltoall"] = "AA"

#: The text of a spec file the fake reads by name only: its `suite` makes it an MPI
#: workload to the sweep.
SPEC_TEXT = 'name = "fake"\nsuite = "imb"\n'


def parse_spec_name(spec_path: str) -> tuple[str, str]:
    """(benchmark, group) from a spec file name: ``pp-16k.toml`` or ``pingpong-16k.toml``
    is PP in ``imb``, ``cg-S.toml`` CG in ``npb``, ``bc-1m.toml`` BC in ``imb-1m``."""
    stem = Path(spec_path).stem
    name, _, size = stem.partition("-")
    group = {"16k": "imb", "S": "npb", "1m": "imb-1m"}[size]
    return SHORT.get(name.lower(), name.upper()), group


def fake_run_workload(
    spec_path: str,
    design: str,
    config_toml: str,
    seed: int,
    iteration_scale: float | None,
    out: str | None,
) -> str:
    """A run record computed from the spec's name, the design and the seed; a spec whose
    name starts with ``boom`` fails. Like the simulator's, its metrics are floats, the
    counts among them whole."""
    if Path(spec_path).name.startswith("boom"):
        raise RuntimeError(f"simulated failure in {Path(spec_path).name}")
    assert "[system]" in config_toml
    bench, group = parse_spec_name(spec_path)
    base = BASE_CYCLES.get(bench, 5000) * (10 if group == "imb-1m" else 1)
    scale = 1.0 if iteration_scale is None else iteration_scale
    cycles = round(base * DESIGN_SHARE[design] * scale) + seed
    return json.dumps(
        {
            "benchmark": bench,
            "group": group,
            "design": design,
            "seed": seed,
            "metrics": {
                "cycles": float(cycles),
                "l1_misses": float(cycles // 10),
                "l2_misses_private": float(cycles // 20),
                "l2_misses_global": float(cycles // 50),
                "coherence_messages": float(cycles // 5),
                # A mean that happens to be whole.
                "moped_prq_depth_mean": 1.0,
            },
            "events": int(cycles * 3),
            "host_seconds": 0.01,
            "messages_verified": 6,
            "bytes_verified": 6 * 4096,
            "notes": ["fake runner"],
        }
    )
