"""Figure-10 analysis from Python: run records in; reductions, summaries, claims, the
report and the tables out.

The numbers are computed in Rust (``moped._core``, ``src/analysis``); this module only
converts records. A record is one run: ``benchmark``, ``group`` (``"imb"``, ``"npb"``,
``"imb-1m"``), ``design``, ``seed`` and its metrics, given nested
(``{"metrics": {"cycles": ...}}``, as ``run_workload`` returns them) or flat
(``{"cycles": ...}``, as the rows of :func:`moped.sweep`'s DataFrame)::

    df = moped.sweep(tasks)
    red = moped.analysis.reductions_frame(df)
    print(red[red.metric == "cycles"][["benchmark", "design", "reduction"]])

A reduction is ``1 - design / baseline`` for the same seed, averaged over seeds, with a
95 % Student-t interval (``ci_low``, ``ci_high``) when there are several; undefined values
(a zero baseline, no interval with one seed) are NaN in frames and None in dicts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from numbers import Integral, Real
from os import PathLike
from typing import TYPE_CHECKING, Any, TypeAlias

from moped import _args, _core
from moped.designs import DESIGNS

if TYPE_CHECKING:  # pragma: no cover
    import pandas

#: What the functions below take as run records.
Records: TypeAlias = "pandas.DataFrame | Iterable[Mapping[str, Any]] | str"

__all__ = [
    "DESIGNS",
    "FIGURE10_METRICS",
    "METRICS",
    "claims",
    "published_values",
    "records_json",
    "reductions",
    "reductions_frame",
    "report",
    "summaries_frame",
    "to_records",
    "write_tables",
]

#: The columns that name a run; every other numeric field of a flat record is a metric.
RUN_KEYS = ("benchmark", "group", "design", "seed")
#: The analysed metrics (others are carried but ignored); ``l2_misses_local`` is optional.
METRICS = (
    "cycles",
    "l1_misses",
    "l2_misses_private",
    "l2_misses_global",
    "coherence_messages",
    "l2_misses_local",
)
#: The metrics of Figure 10's four graphs.
FIGURE10_METRICS = ("cycles", "l1_misses", "l2_misses_private", "l2_misses_global")


def _metric_value(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, Real):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _record(row: Any) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise TypeError(f"records: a run record must be a mapping, not {type(row).__name__}")
    missing = [k for k in RUN_KEYS if k not in row]
    if missing:
        raise _core.MopedError(f"run record {dict(row)!r} lacks {', '.join(missing)}")
    if "metrics" in row and isinstance(row["metrics"], Mapping):
        source: Mapping[str, Any] = row["metrics"]
    else:
        source = {k: v for k, v in row.items() if k not in RUN_KEYS}
    metrics = {}
    for k, v in source.items():
        value = _metric_value(v)
        if value is not None:
            metrics[str(k)] = value
    return {
        "benchmark": str(row["benchmark"]),
        "group": str(row["group"]),
        "design": str(row["design"]),
        "seed": _seed(row),
        "metrics": metrics,
    }


def _seed(row: Mapping[str, Any]) -> int:
    seed = row["seed"]
    whole: int | None = None
    if isinstance(seed, Integral) and not isinstance(seed, bool):
        whole = int(seed)
    elif isinstance(seed, Real) and float(seed).is_integer():
        # A frame's seed column turns float once any cell in it is NaN.
        whole = int(float(seed))
    if whole is None or whole < 0:
        raise _core.InputError(f"run record {dict(row)!r}: seed must be a whole number >= 0")
    return whole


def to_records(records: Records) -> list[dict[str, Any]]:
    """Run records in the nested form the Rust side reads, from a DataFrame (one row per
    run), dicts (nested or flat) or a JSON string. NaN and non-numeric fields are
    dropped from the metrics."""
    data: object = records
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as e:
            raise _core.InputError(f"records: not JSON: {e}") from e
    rows: Iterable[object]
    # Duck-typed, so pandas is imported only by callers that pass a frame.
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        rows = data.to_dict("records")
    elif isinstance(data, Iterable) and not isinstance(data, (bytes, Mapping)):
        rows = data
    else:
        raise TypeError(
            "records must be a DataFrame, a list of dicts or a JSON string, "
            f"not {type(data).__name__}"
        )
    return [_record(r) for r in rows]


def records_json(records: Records) -> str:
    """The records as the JSON list that ``moped._core``'s analysis functions take."""
    return json.dumps(to_records(records))


def reductions(records: Records) -> list[dict[str, Any]]:
    """One dict per (group, benchmark, design, metric): baseline, design_value, ratio,
    reduction, std_dev, ci_low, ci_high, n, seeds; in the paper's order."""
    return json.loads(_core.reductions(records_json(records)))


_FLOAT_COLUMNS = ("baseline", "design_value", "ratio", "reduction", "std_dev", "ci_low", "ci_high")


def reductions_frame(records: Records) -> pandas.DataFrame:
    """:func:`reductions` as a DataFrame (undefined values NaN), in the paper's order."""
    import pandas as pd

    columns = ["group", "benchmark", "design", "metric", *_FLOAT_COLUMNS, "n", "seeds"]
    df = pd.DataFrame(reductions(records), columns=columns)
    for c in _FLOAT_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    df["n"] = df["n"].astype(int)
    return df


def summaries_frame(records: Records) -> pandas.DataFrame:
    """Per (group, design, metric): the geometric mean of the ratios design / baseline
    (``geomean_ratio``, ``geomean_reduction``) and the smallest and largest reduction with
    their benchmarks."""
    import pandas as pd

    columns = [
        "group",
        "design",
        "metric",
        "benchmarks",
        "geomean_ratio",
        "geomean_reduction",
        "min_reduction",
        "min_benchmark",
        "max_reduction",
        "max_benchmark",
    ]
    df = pd.DataFrame(json.loads(_core.summaries(records_json(records))), columns=columns)
    for c in ("geomean_ratio", "geomean_reduction", "min_reduction", "max_reduction"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    return df


def claims(records: Records) -> list[dict[str, Any]]:
    """The paper's claims (a) to (f) checked on the records: per claim its ``verdict``
    (``"holds"``, ``"does_not_hold"``, ``"not_measured"``), ``definition``, ``evidence``
    (the deciding numbers), ``missing`` cells and ``explanation``."""
    return json.loads(_core.claims(records_json(records)))


def published_values() -> list[dict[str, Any]]:
    """The values the paper publishes (abstract and section 6), with their sources."""
    return json.loads(_core.published_values())


def report(
    records: Records,
    notes: Iterable[str] = (),
    explanations: Mapping[str, str] | None = None,
) -> str:
    """The Markdown report; ``notes`` go under "What was run", ``explanations`` (claim id
    to text) are added to the claims' explanations."""
    if isinstance(notes, str) or not isinstance(notes, Iterable):
        raise TypeError(f"notes must be an iterable of str, not {type(notes).__name__}")
    if explanations is not None:
        _args.mapping("explanations", explanations)
    return _core.figure10_report(
        records_json(records),
        [str(n) for n in notes],
        {str(k): str(v) for k, v in (explanations or {}).items()},
    )


def write_tables(out_dir: str | PathLike[str], records: Records) -> None:
    """Writes ``reductions.csv`` and ``reductions.json`` into ``out_dir``."""
    _core.write_figure10_tables(_args.path("out_dir", out_dir), records_json(records))
