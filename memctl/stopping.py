"""Stopping a run from outside its work: the run deadline, SIGINT and SIGTERM.

Every run has a wall-clock deadline (`run_deadline_seconds`). memctl checks it where a run waits
or moves on to new work: while waiting for LLM answers, before each unit of work and before each
phase. LLM questions are asked on daemon threads and the run waits for their answers with a
timeout, so at the deadline (or on a signal) an answer still trickling in is abandoned, never
awaited, and the process can exit at once. A unit is one transaction, so the unit in flight is
applied whole or not at all; the units before it stay applied with their change-log rows.

The CLI adds what a library must not do on its own (`stop_on_signals`): SIGINT and SIGTERM raise
`Interrupted` in the main thread, and a watchdog (SIGALRM) raises `DeadlineExceeded` there a few
seconds after the deadline, wherever the run is blocked (a database lock wait, an embedding
request). A second signal while the run is being closed ends the process at once.

Both are `BaseException`s, like KeyboardInterrupt: no `except Exception` on the way (a phase's
failure containment, a per-question error handler) may swallow them.
"""

from __future__ import annotations

import math
import os
import queue
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

T = TypeVar("T")
U = TypeVar("U")

#: how long after the run deadline the CLI's watchdog interrupts a run blocked outside the
#: cooperative checks (a database lock wait, an embedding request)
WATCHDOG_GRACE_SECONDS = 5.0
#: how often a run waiting for LLM answers wakes up to look at the clock
POLL_SECONDS = 0.25


class RunStopped(BaseException):
    """The run was stopped from outside its work; `exit_code` is what the process exits with."""

    exit_code = 1
    reason = "stopped"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        #: the report of the phase it stopped (set by the pipeline on its way out)
        self.phase_report: Any = None

    def __str__(self) -> str:
        return self.message


class DeadlineExceeded(RunStopped):
    """The run reached `run_deadline_seconds` (exit 1)."""

    reason = "deadline"


class Interrupted(RunStopped):
    """SIGINT or SIGTERM asked the run to stop (exit 128 + the signal number: 130, 143)."""

    def __init__(self, signum: int) -> None:
        self.signal_name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        self.reason = self.signal_name
        super().__init__(f"interrupted by {self.signal_name}")


class Deadline:
    """A run's wall-clock deadline (monotonic); `Deadline(None)` never expires."""

    def __init__(self, seconds: Optional[float], clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._at = math.inf if seconds is None else clock() + seconds

    @classmethod
    def unbounded(cls) -> "Deadline":
        return cls(None)

    def remaining(self) -> float:
        """Return the seconds left (inf without a deadline, never negative)."""
        return max(0.0, self._at - self._clock())

    @property
    def expired(self) -> bool:
        return self._clock() >= self._at

    def check(self, where: str) -> None:
        """Raise DeadlineExceeded when the deadline has passed; `where` says what is stopped."""
        if self.expired:
            raise DeadlineExceeded(self.message(where))

    def message(self, where: str) -> str:
        return (
            f"stopped at the run deadline ({self.seconds:g} s, setting run_deadline_seconds) {where}; "
            "units applied before it stay applied, nothing is half-done"
        )


def gather(fn: Callable[[T], U], items: Sequence[T], workers: int, deadline: Deadline, on_done: Callable[[int, U], None], where: str = "") -> None:
    """Compute `fn(item)` for every item on at most `workers` daemon threads.

    `on_done(index, result)` runs in the caller's thread as each result arrives. At the deadline
    (or when the caller's thread is interrupted) the calls still running are abandoned, not
    awaited: their threads are daemons, so they never keep the process alive. An exception that
    `fn` raises is re-raised here.
    """
    if not items:
        return
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(items)):
        todo.put(index)
    done: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
    abandoned = threading.Event()

    def work() -> None:
        while not abandoned.is_set():
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            try:
                result: tuple[int, bool, Any] = (index, True, fn(items[index]))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                result = (index, False, exc)
            done.put(result)

    for n in range(min(workers, len(items))):
        threading.Thread(target=work, name=f"memctl-ask-{n}", daemon=True).start()
    try:
        for _ in range(len(items)):
            while True:
                deadline.check(where or "while waiting for LLM answers")
                try:
                    index, ok, value = done.get(timeout=min(POLL_SECONDS, max(deadline.remaining(), 0.01)))
                    break
                except queue.Empty:
                    continue
            if not ok:
                raise value
            on_done(index, value)
    finally:
        abandoned.set()


# --- signals (the CLI only) ------------------------------------------------------------------

_closing = threading.Event()


@contextmanager
def closing() -> Iterator[None]:
    """Mark the run as being closed: a signal now ends the process at once instead of raising."""
    _closing.set()
    try:
        yield
    finally:
        _closing.clear()


@contextmanager
def stop_on_signals(deadline_seconds: Optional[float]) -> Iterator[None]:
    """Turn SIGINT/SIGTERM into `Interrupted` and arm the deadline watchdog (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, _frame: Any) -> None:
        stop = Interrupted(signum)
        if _closing.is_set():
            # The run is already being closed and the operator insists: go now (the lease
            # expires on its own and the next run closes this run as Failed).
            sys.stderr.write(f"memctl: {stop}: exiting without closing the run\n")
            sys.stderr.flush()
            os._exit(stop.exit_code)
        raise stop

    def on_alarm(_signum: int, _frame: Any) -> None:
        if not _closing.is_set():
            raise DeadlineExceeded(Deadline(deadline_seconds).message("while the run was blocked (the watchdog stopped it)"))

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    other_timer, armed_at = (0.0, 0.0), time.monotonic()
    if deadline_seconds is not None:
        previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, on_alarm)
        other_timer = signal.setitimer(signal.ITIMER_REAL, deadline_seconds + WATCHDOG_GRACE_SECONDS)
    try:
        yield
    finally:
        if deadline_seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if other_timer[0] > 0:  # give back a timer someone else had armed (a test harness's, say)
            signal.setitimer(signal.ITIMER_REAL, max(other_timer[0] - (time.monotonic() - armed_at), 0.001), other_timer[1])
