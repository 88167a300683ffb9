"""Measure one invocation per phase: wall time, SQL statements, peak resident memory.

Statements are counted with SQLAlchemy's `before_cursor_execute` event (an executemany is one
statement: one round trip). Memory is sampled from /proc/self/statm every few milliseconds by a
daemon thread and kept as the peak per phase; the process peak (`ru_maxrss`) is reported too.

CPU seconds (user + system, all threads of the process) are kept per phase as well: on a shared
machine the wall time of a run also measures everyone else's load, its CPU time much less so.

Phases are told apart without touching memctl: the pipeline records each phase's run step
("Consolidate Related Notes", ...) when the phase starts, so the INSERT of that step switches
the meter to that phase. Code that is not memctl (the baseline) calls `phase()` itself.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from sqlalchemy import event
from sqlalchemy.engine import Engine

STEP_PHASES = {
    "Check Maintenance Gate": "gate",
    "Consolidate Related Notes": "consolidate",
    "Detect Note Contradictions": "contradictions",
    "Prune Stale References": "prune",
    "Archive Expired Items": "archive",
}
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """Return this process's resident set size now."""
    with open("/proc/self/statm", "rb") as handle:
        return int(handle.read().split()[1]) * PAGE


def peak_rss_bytes() -> int:
    """Return this process's peak resident set size so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass
class PhaseMeter:
    statements: int = 0
    peak_rss: int = 0
    started: float = 0.0
    seconds: float = 0.0
    cpu_started: float = 0.0
    cpu: float = 0.0


@dataclass
class Meter:
    """Count statements and sample memory per phase while an invocation runs."""

    engine: Engine
    interval: float = 0.005
    phases: dict[str, PhaseMeter] = field(default_factory=dict)
    current: str = "setup"
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: Optional[threading.Thread] = None

    def __post_init__(self) -> None:
        self.phases[self.current] = PhaseMeter(started=time.monotonic(), peak_rss=rss_bytes(), cpu_started=time.process_time())

    def phase(self, name: str) -> None:
        """Attribute what follows to phase `name`."""
        now, cpu = time.monotonic(), time.process_time()
        previous = self.phases[self.current]
        previous.seconds += now - previous.started
        previous.cpu += cpu - previous.cpu_started
        meter = self.phases.setdefault(name, PhaseMeter())
        meter.started, meter.cpu_started = now, cpu
        meter.peak_rss = max(meter.peak_rss, rss_bytes())
        self.current = name

    def _on_statement(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if not executemany and "AIAgentRunStep" in statement and statement.lstrip()[:6].upper() == "INSERT":
            values = parameters.values() if isinstance(parameters, dict) else (parameters or ())
            for value in values:
                if isinstance(value, str) and value in STEP_PHASES:
                    self.phase(STEP_PHASES[value])
                    break
        self.phases[self.current].statements += 1

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            meter = self.phases[self.current]
            meter.peak_rss = max(meter.peak_rss, rss_bytes())

    def __enter__(self) -> "Meter":
        event.listen(self.engine, "before_cursor_execute", self._on_statement)
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.phase("done")
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        event.remove(self.engine, "before_cursor_execute", self._on_statement)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {
            name: {
                "statements": m.statements,
                "peakRssMiB": round(m.peak_rss / 2**20, 1),
                "meteredSeconds": round(m.seconds, 3),
                "cpuSeconds": round(m.cpu, 3),
            }
            for name, m in self.phases.items()
            if name != "done"
        }
