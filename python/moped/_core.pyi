"""Type stub for the compiled extension ``moped._core`` (built from ``src/python.rs``).

The module's ``__all__`` lists every name the extension adds, private ones included;
``mypy.stubtest`` compares it, and each signature here, with the built module. Each
section below extends ``__all__`` with its own names, so a new function goes into one
section only.
"""

from collections.abc import Callable
from typing import Any, final

# What an experiment calls per finished run: (runs done, runs in all, the run's line,
# the events it simulated).
_RunsCallback = Callable[[int, int, str, int], None]

__all__ = [
    "__version__",
    "ConfigError",
    "InputError",
    "MopedError",
    "ProgramError",
    "ProtocolError",
    "SimulationError",
    "StatsError",
]

__version__: str

class MopedError(Exception): ...
class ConfigError(MopedError): ...
class ProtocolError(MopedError): ...
class ProgramError(MopedError): ...
class SimulationError(MopedError): ...
class StatsError(MopedError): ...
class InputError(MopedError): ...

__all__ += [
    "_panic_for_test",
    "_stop_runs",
    "cli_main",
    "config_to_json",
    "default_config_toml",
    "designs",
    "info_config_json",
    "info_stats_json",
    "lint_protocol",
    "protocol_markdown",
    "protocol_names",
    "random_test",
    "run",
    "summed_metrics",
    "validate_config",
]

def cli_main(argv: list[str]) -> int: ...
def default_config_toml() -> str: ...
def validate_config(toml_text: str, file: str, overrides: dict[str, Any] | None = None) -> str: ...
def config_to_json(toml_text: str, file: str) -> str: ...
def info_config_json() -> str: ...
def info_stats_json() -> str: ...
def run(
    config_toml: str,
    program_path: str,
    protocol: str,
    seed: int,
    out: str | None = None,
    force: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]: ...
def random_test(
    cores: int,
    checks: int,
    seed: int,
    design: str = "baseline",
    prefetch: str = "none",
    cache_ops: bool = False,
) -> dict[str, int]: ...
def designs() -> list[tuple[str, str, str]]: ...
def summed_metrics() -> list[tuple[str, list[str]]]: ...
def protocol_names() -> list[str]: ...
def protocol_markdown(name: str) -> str: ...
def lint_protocol(text: str, file: str) -> None: ...
def _stop_runs() -> None: ...
def _panic_for_test() -> None: ...

# MPI workloads: a spec (.toml) or a GOAL schedule (.goal), every message checked.
__all__ += ["parse_goal", "run_workload"]

def run_workload(
    spec_path: str,
    design: str,
    config_toml: str,
    seed: int,
    iteration_scale: float | None = None,
    out: str | None = None,
) -> str: ...
def parse_goal(text: str, file: str) -> str: ...

# Figure 10 analysis: records_json is a JSON list of run records
# ({"benchmark", "group", "design", "seed", "metrics": {name: value}}).
__all__ += [
    "claims",
    "figure10_report",
    "published_values",
    "reductions",
    "summaries",
    "write_figure10_tables",
]

def reductions(records_json: str) -> str: ...
def summaries(records_json: str) -> str: ...
def claims(records_json: str) -> str: ...
def published_values() -> str: ...
def figure10_report(
    records_json: str,
    notes: list[str],
    explanations: dict[str, str] | None = None,
) -> str: ...
def write_figure10_tables(dir: str, records_json: str) -> None: ...

# The Figure-10 pipeline (src/api/figure10.rs): plan, run on the simulator's threads,
# or finish runs made elsewhere.
__all__ += ["OutputClaim", "figure10", "figure10_claim", "figure10_finish", "figure10_plan"]

def figure10_plan(
    workloads_dir: str, large: bool, seeds: list[int]
) -> list[tuple[str, str, int, str]]: ...
def figure10(
    out: str,
    workloads_dir: str,
    large: bool,
    seeds: list[int],
    iteration_scale: float | None,
    config_toml: str,
    jobs: int | None = None,
    progress: _RunsCallback | None = None,
    force: bool = False,
    sensitivity: bool = False,
    fresh: bool = False,
) -> str: ...

# Not subclassable: the extension's class is final.
@final
class OutputClaim:
    @property
    def path(self) -> str: ...
    def fail(self, error: str) -> None: ...

def figure10_claim(
    out: str, workloads_dir: str, seeds: list[int], force: bool = False
) -> OutputClaim: ...

# The results store of an experiment whose runs Python makes (moped.sweep into a folder).
__all__ += ["store_claim", "store_finish", "store_keep", "store_take"]

def store_claim(
    out: str,
    experiment: str,
    args: list[tuple[str, str]],
    force: bool = False,
    fresh: bool = False,
) -> OutputClaim: ...
def store_take(
    claim: OutputClaim,
    spec: str,
    design: str,
    config_toml: str,
    seed: int,
    iteration_scale: float | None = None,
) -> tuple[str, str | None]: ...
def store_keep(
    claim: OutputClaim,
    name: str,
    spec: str,
    design: str,
    config_toml: str,
    seed: int,
    record_json: str,
) -> None: ...
def store_finish(
    claim: OutputClaim, workload: str, designs: str, seeds: list[int]
) -> tuple[int, int]: ...
def figure10_finish(
    claim: OutputClaim,
    outcomes_json: str,
    workloads_dir: str,
    large: bool,
    seeds: list[int],
    iteration_scale: float | None,
    config_toml: str,
) -> None: ...

# The matching experiment (src/api/matching): the queue benchmarks under the software path
# and each engine; writes matching.csv and report.md into `out`.
__all__ += [
    "MATCHING_CSV_HEADER",
    "MATCHING_ENGINES",
    "MATCHING_FIGURE10_CSV_HEADER",
    "MATCHING_LHS_CSV_HEADER",
    "MATCHING_STREAM64_CSV_HEADER",
    "matching",
]

MATCHING_CSV_HEADER: list[str]
MATCHING_FIGURE10_CSV_HEADER: list[str]
MATCHING_STREAM64_CSV_HEADER: list[str]
MATCHING_LHS_CSV_HEADER: list[str]
MATCHING_ENGINES: list[str]

def matching(
    out: str,
    config_toml: str,
    engines: list[str] | None = None,
    quick: bool = False,
    jobs: int | None = None,
    progress: _RunsCallback | None = None,
    force: bool = False,
    workloads: str | None = None,
    fresh: bool = False,
) -> dict[str, Any]: ...

# The LHS paper in its own setting (src/api/lhs): DIMMnet-2 and the emulated DIMMnet-3;
# writes lhs.csv and report.md into `out`.
__all__ += ["lhs"]

def lhs(
    out: str,
    overrides: list[tuple[str, str]] = ...,
    quick: bool = False,
    jobs: int | None = None,
    progress: _RunsCallback | None = None,
    force: bool = False,
    fresh: bool = False,
) -> dict[str, Any]: ...

# The engines experiment (src/api/engines): the multi-CPU NIC paper's tests on its testbed
# (tigon.csv) and IMB Uniband, Biband and PingPong under each scheme with one and two
# engines in MOPED (engines.csv); writes them and report.md into `out`.
__all__ += ["ENGINES_CSV_HEADER", "SCALING_CSV_HEADER", "TIGON_CSV_HEADER", "engines"]

ENGINES_CSV_HEADER: list[str]
TIGON_CSV_HEADER: list[str]
# The columns of `moped bench --scaling --out FILE` (src/bench.rs).
SCALING_CSV_HEADER: list[str]

def engines(
    out: str,
    config_toml: str,
    schemes: list[str] | None = None,
    costs: str = "emp",
    design: str = "optcopy",
    quick: bool = False,
    jobs: int | None = None,
    progress: _RunsCallback | None = None,
    force: bool = False,
    workloads: str | None = None,
    only: str | None = None,
    fresh: bool = False,
) -> dict[str, Any]: ...

# gem5-format stats.txt and the comparison of a gem5 run with an embedded run.
__all__ += ["compare", "parse_stats"]

def parse_stats(
    text: str, file: str, dump: int | None = None
) -> list[tuple[int, list[tuple[Any, ...]]]]: ...
def compare(gem5_dir: str, embedded_dir: str, dump: int, tolerance_pct: float) -> str: ...
