"""Stopping a run from outside its work: the run deadline, SIGINT and SIGTERM.

The deadline is checked where a run waits or moves on: while waiting for LLM answers (asked on
daemon threads, so an answer still arriving is abandoned, never awaited), before each unit and each
phase. A unit is one transaction, so the one in flight is applied whole or not at all.

The CLI adds `stop_on_signals`: SIGINT/SIGTERM raise `Interrupted` in the main thread, and a SIGALRM
watchdog raises `DeadlineExceeded` shortly after the deadline wherever the run is blocked. A second
signal while the run is closing ends the process at once. Both are `BaseException`s, like
KeyboardInterrupt, so no `except Exception` on the way may swallow them.
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
from typing import Any, Callable, Iterator, Optional, TypeVar

T = TypeVar("T")
U = TypeVar("U")

#: how long after the run deadline the CLI's watchdog interrupts a run blocked outside the checks
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


class Pool:
    """At most `workers` daemon threads computing what the caller submits, while it goes on.

    Results (or a job's exception, re-raised) come back in the caller's thread only, by `ready()`
    (no waiting) and `next()` (waits, checking the deadline). `close()` abandons what is still
    queued or running; daemon threads never keep the process alive.
    """

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._todo: queue.SimpleQueue[Optional[tuple[int, Callable[[Any], Any], Any]]] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
        self._abandoned = threading.Event()
        self._threads = 0
        self._queued = 0  # jobs put in `_todo` no thread has taken yet
        self._busy = 0  # threads computing a job
        self._lock = threading.Lock()
        self.submitted = 0
        #: jobs submitted whose result the caller has not taken yet
        self.pending = 0

    def submit(self, fn: Callable[[T], U], item: T) -> int:
        """Queue `fn(item)`; return its job number (0, 1, ... in submission order)."""
        number = self.submitted
        self.submitted += 1
        self.pending += 1
        with self._lock:
            # a new thread only when every thread has a job waiting for it already
            start = self._threads < self.workers and self._queued >= self._threads - self._busy
            name = f"memctl-ask-{self._threads}"
            self._threads += start
            self._queued += 1
        self._todo.put((number, fn, item))
        if start:
            threading.Thread(target=self._work, name=name, daemon=True).start()
        return number

    @property
    def waiting(self) -> int:
        """Return how many submitted jobs no thread has taken yet."""
        return self._queued

    def _work(self) -> None:
        while not self._abandoned.is_set():
            job = self._todo.get()
            if job is None:
                return
            number, fn, item = job
            with self._lock:
                self._queued -= 1
                self._busy += 1
            try:
                result: tuple[int, bool, Any] = (number, True, fn(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                result = (number, False, exc)
            with self._lock:
                self._busy -= 1
            self._done.put(result)

    def _take(self, result: tuple[int, bool, Any]) -> tuple[int, Any]:
        number, ok, value = result
        self.pending -= 1
        if not ok:
            raise value
        return number, value

    def ready(self) -> list[tuple[int, Any]]:
        """Return the (job number, result) of every job finished since, without waiting."""
        out = []
        while self.pending:
            try:
                out.append(self._take(self._done.get_nowait()))
            except queue.Empty:
                break
        return out

    def next(self, deadline: Deadline, where: str = "") -> tuple[int, Any]:
        """Wait for the next job and return (its number, its result); DeadlineExceeded at the deadline."""
        assert self.pending, "no job to wait for"
        while True:
            deadline.check(where or "while waiting for LLM answers")
            try:
                return self._take(self._done.get(timeout=min(POLL_SECONDS, max(deadline.remaining(), 0.01))))
            except queue.Empty:
                continue

    def close(self) -> None:
        """Abandon what is still queued or running; the threads end after their current job."""
        self._abandoned.set()
        for _ in range(self._threads):
            self._todo.put(None)


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
            # the operator insists: go now (the lease expires and the next run closes this one as Failed)
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
