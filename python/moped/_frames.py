"""Column types of the run tables (a sweep's frame, an experiment's ``runs.csv``): one
rule, shared by both readers, for which columns are counts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas

#: Metrics that are not counts even when whole: the means. The simulator's run record
#: sends every metric as a float, so the values alone cannot tell a mean of 1.0 from a
#: count.
MEAN_SUFFIXES = ("_mean",)


def _whole(value: Any) -> bool:
    try:
        return float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        return False


def _counts_as_integers(df: pandas.DataFrame, columns: Iterable[str]) -> None:
    """Gives the columns that hold counts an integer dtype (``Int64`` where a run lacks
    the value): a column is a count when every value it holds is a whole number and its
    name is not a mean's. The run records send counts as floats."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    for c in columns:
        col = df[c]
        if c.endswith(MEAN_SUFFIXES) or not is_numeric_dtype(col) or is_bool_dtype(col):
            continue
        known = col.dropna()
        if all(_whole(v) for v in known):
            df[c] = col.astype("Int64" if len(known) < len(col) else "int64")
