"""Progress of the experiments and sweeps, one mechanism for all of them: a tqdm bar where a
person watches (stderr is a terminal, or a notebook), one line per finished run otherwise
(a log, CI, a captured stderr), or each line handed to the caller's function.

``progress`` as the experiments and :func:`moped.sweep` take it: True (a bar or lines, as
above), False (nothing), or a callable that gets each run's line instead.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Runs", "check", "say"]

#: What a ``progress`` argument may be.
Progress = bool | Callable[[str], None]


def check(progress: Any) -> Progress:
    """``progress`` itself, or TypeError naming what it must be."""
    if isinstance(progress, bool) or callable(progress):
        return progress
    raise TypeError(f"progress must be a bool or a callable, not {type(progress).__name__}")


def say(progress: Progress, line: str) -> None:
    """Tells ``line`` (an experiment's closing word, such as how many runs it reused) as
    ``progress`` asks: to its callable, on stderr when True, nowhere when False."""
    if progress is False:
        return
    if callable(progress) and not isinstance(progress, bool):
        progress(line)
    else:
        print(line, file=sys.stderr, flush=True)


def _tqdm() -> Any:
    """tqdm's bar class: the notebook widget in a notebook that has ipywidgets, else the
    text bar (which a notebook shows too)."""
    if "ipykernel" in sys.modules and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm as widget

        return widget
    from tqdm import tqdm

    return tqdm


def _watched() -> bool:
    """Whether a person watches stderr: a terminal, or a Jupyter kernel's cell."""
    try:
        if sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False
    return "ipykernel" in sys.modules


class Runs:
    """The progress of an experiment's runs, ``what`` naming it on the bar. Call
    :meth:`finished` (or pass :meth:`callback` to the simulator) as each run ends, and
    :meth:`close` when all have."""

    def __init__(self, progress: Progress, what: str, total: int | None = None) -> None:
        self.progress = check(progress)
        self.what = what
        self.total = total
        self.started = time.monotonic()
        self.events = 0
        self.bar: Any = None
        self.drawn = progress is True and _watched()

    def finished(self, done: int, total: int, line: str, events: int = 0) -> None:
        """Hears of a finished run: ``done`` of ``total`` runs, its line, the events it
        simulated (none when it was reused)."""
        if self.progress is False:
            return
        if callable(self.progress) and not isinstance(self.progress, bool):
            self.progress(line)
            return
        if not self.drawn:
            print(line, file=sys.stderr, flush=True)
            return
        if self.bar is None:
            self.bar = _tqdm()(total=total, desc=self.what, unit="run", file=sys.stderr)
        self.events += int(events)
        rate = self.events / max(time.monotonic() - self.started, 1e-9) / 1e6
        self.bar.set_postfix_str(f"{rate:.1f} M events/s", refresh=False)
        self.bar.update(max(done - self.bar.n, 0))

    def callback(self) -> Callable[[int, int, str, int], None] | None:
        """What the simulator's experiments call per finished run, None without
        progress."""
        return None if self.progress is False else self.finished

    def close(self) -> None:
        """Ends the bar, if one was drawn."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
