"""Reading gem5-format ``stats.txt`` files (gem5's own and the embedded simulator's) and
comparing a gem5 run with an embedded run of the same workload.

Both go through the crate's reader (``src/stats/gem5.rs``): every dump of the file,
scalars, vector elements, histogram and distribution fields and buckets (``name::samples``,
``name::0-3``, ``name::overflows``, ..., with their pdf and cdf), and Ruby's ``oneline``
counters, whose elements are named ``name::0``, ``name::1``, ... A malformed file raises
:class:`moped.StatsError` naming ``file:line:col`` and what was expected there.
"""

from __future__ import annotations

import json
from os import PathLike
from typing import TYPE_CHECKING, Any

from moped import _args, _core
from moped._core import StatsError
from moped.results import parse_stats, read_stats_txt, read_text

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["STATS_COLUMNS", "compare", "host_speed", "parse_stats", "read_stats", "speed_ratio"]

#: Columns of :func:`read_stats`' frame.
STATS_COLUMNS = ["dump", "name", "value", "pdf", "cdf", "unit", "description", "line"]


def read_stats(path: str | PathLike[str], *, dump: int | None = -1) -> pandas.DataFrame:
    """Reads a ``stats.txt`` into a DataFrame with the columns of :data:`STATS_COLUMNS`,
    one row per value.

    ``dump`` picks one dump (from 0, or from the end when negative: -1, the default, is
    gem5's last); ``None`` keeps every dump, told apart by the ``dump`` column.
    """
    import pandas as pd

    text, file = read_text(path)
    dumps = parse_stats(text, file=file, dump=dump)
    rows = [(i, *row) for i, dump_rows in dumps for row in dump_rows]
    return pd.DataFrame(rows, columns=STATS_COLUMNS)


def compare(
    gem5_dir: str | PathLike[str],
    embedded_dir: str | PathLike[str],
    *,
    tolerance: float = 10.0,
    dump: int = -1,
) -> pandas.DataFrame:
    """Compares a gem5 run (an ``m5out`` folder with ``config.ini`` or ``config.json``) with
    an embedded run (a folder written by ``moped run``/``moped mpi`` or :func:`moped.run`).

    One row per metric (cycles, L1 misses, L2 misses and their private, global and upgrade
    parts, and the MOPED's line requests where a run has them) with the columns ``metric``,
    ``label``, ``embedded``, ``gem5``, ``difference`` (gem5 - embedded), ``relative_pct``
    (that difference in percent of gem5), ``within`` (``|relative_pct| <= tolerance``) and
    how each value was found (``embedded_source``, ``gem5_source``). ``dump`` picks the
    dump of gem5's file. The frame's ``attrs`` name both runs and the tolerance. A missing
    folder or statistic raises :class:`moped.StatsError` naming it.
    """
    import pandas as pd

    raw = _core.compare(
        _args.path("gem5_dir", gem5_dir),
        _args.path("embedded_dir", embedded_dir),
        _args.integer("dump", dump, -(2**63), 2**63 - 1),
        _args.number("tolerance", tolerance),
    )
    raw = json.loads(raw)
    df = pd.DataFrame(raw["rows"])
    df.attrs = {k: raw[k] for k in ("gem5", "embedded", "tolerance_pct")}
    return df


#: The controllers' input buffers from the network in ``MOPED_CMP_directory``: a message
#: dequeued from one of them is one delivery, as the embedded simulator's ``sim.messages``
#: counts one per destination.
_DELIVERY_BUFFERS = ("requestToDir", "responseToDir", "forwardToL2", "responseToL2")


def host_speed(run_dir: str | PathLike[str]) -> dict[str, Any]:
    """How fast a host simulated a run: a gem5 run (an ``m5out`` folder of
    ``gem5-configs/moped_cmp.py``, with its ``moped.json``) or an embedded run.

    Keys: ``host`` (``"gem5"`` or ``"embedded"``), ``cycles`` (simulated core cycles),
    ``host_seconds`` (the host's own timer of the simulation), ``cycles_per_second``,
    ``messages`` (coherence-message deliveries: the embedded ``sim.messages``, or the
    messages gem5's controllers took from their network buffers), ``messages_per_second``,
    ``events`` and ``events_per_second`` (the embedded simulator's every event; in gem5 the
    cores' and MOPEDs' events of the traffic driver, gem5 keeping no count of its own),
    ``messages_verified`` and ``bytes_verified`` (MPI payloads checked at the receivers).
    A missing file or statistic raises :class:`moped.StatsError` naming it.
    """
    d = _args.path("run_dir", run_dir)
    sidecar = f"{d}/moped.json"
    try:
        with open(sidecar, encoding="utf-8") as f:
            side = json.load(f)
    except FileNotFoundError:
        side = None
    except (OSError, ValueError) as e:
        raise StatsError(f"{sidecar}: cannot read: {e}") from e
    file = f"{d}/stats.txt"
    stats = read_stats_txt(file, dump=-1)

    def stat(name: str) -> float:
        if name not in stats:
            raise StatsError(f"{file}: no statistic {name}")
        return stats[name]

    r: dict[str, Any]
    if side is None:
        r = {
            "host": "embedded",
            "cycles": stat("sim.cycles"),
            "host_seconds": stat("host.seconds"),
            "messages": stat("sim.messages"),
            "events": stat("sim.events"),
            "messages_verified": stat("mpi.messages_verified"),
            "bytes_verified": stat("mpi.bytes_verified"),
        }
    else:
        deliveries = [
            v
            for k, v in stats.items()
            if k.endswith(".m_msg_count") and k.split(".")[-2] in _DELIVERY_BUFFERS
        ]
        if not deliveries:
            raise StatsError(f"{file}: no m_msg_count of {', '.join(_DELIVERY_BUFFERS)}")
        side_stats = {s["name"]: s["value"] for s in side.get("stats", [])}
        if "sim.events" not in side_stats:
            raise StatsError(f"{sidecar}: no statistic sim.events")
        try:
            verified = (side["messages_verified"]["value"], side["bytes_verified"]["value"])
        except (KeyError, TypeError) as e:
            raise StatsError(f"{sidecar}: no {e} of the verified payloads") from e
        r = {
            "host": "gem5",
            "cycles": stat("system.moped.cycles"),
            "host_seconds": stat("hostSeconds"),
            "messages": sum(deliveries),
            "events": side_stats["sim.events"],
            "messages_verified": verified[0],
            "bytes_verified": verified[1],
        }
    secs = r["host_seconds"]
    for k in ("cycles", "messages", "events"):
        r[f"{k}_per_second"] = r[k] / secs if secs > 0 else float("nan")
    return r


def speed_ratio(gem5_dir: str | PathLike[str], embedded_dir: str | PathLike[str]) -> dict[str, Any]:
    """How many times faster the embedded simulator ran the same traffic as gem5: the two
    runs' :func:`host_speed` and their ratios.

    Keys: ``gem5`` and ``embedded`` (each run's :func:`host_speed`), ``host_seconds``
    (gem5's host seconds over the embedded run's: the speed-up for the same messages, the
    number to quote) and ``cycles_per_second`` (the embedded run's simulated cycles per
    host second over gem5's; it differs from ``host_seconds`` by how far the two hosts'
    cycle counts differ). Both runs must have verified the same messages and bytes,
    else they did not carry the same traffic and :class:`moped.StatsError` says so.
    """
    g, e = host_speed(gem5_dir), host_speed(embedded_dir)
    if g["host"] != "gem5" or e["host"] != "embedded":
        raise StatsError(
            f"{gem5_dir} and {embedded_dir}: expected a gem5 run, then an embedded run"
        )
    (gm, gb), (em, eb) = [(r["messages_verified"], r["bytes_verified"]) for r in (g, e)]
    if (gm, gb) != (em, eb):
        raise StatsError(
            f"{gem5_dir} verified {gm:,.0f} messages ({gb:,.0f} bytes), "
            f"{embedded_dir} {em:,.0f} ({eb:,.0f} bytes): not the same traffic"
        )

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else float("nan")

    return {
        "gem5": g,
        "embedded": e,
        "host_seconds": ratio(g["host_seconds"], e["host_seconds"]),
        "cycles_per_second": ratio(e["cycles_per_second"], g["cycles_per_second"]),
    }
