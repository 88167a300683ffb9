"""The LLM client's plumbing: call failures, concurrency bounds (pinned or `auto`), calls made
under a wall-clock deadline, and the JSON Lines call log."""

from __future__ import annotations

import json
import math
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Union

from memctl.errors import ConfigError


class CallTimeout(Exception):
    """One HTTP call went past its wall-clock deadline."""


class CallDropped(Exception):
    """The connection broke while the body was being read."""


class ReplyTooLarge(Exception):
    """The HTTP body went past the size cap; `head` is its beginning, as received."""

    def __init__(self, message: str, head: str) -> None:
        super().__init__(message)
        self.head = head


class Limiter:
    """A pinned concurrency bound (`llm_concurrency = N`): N is the ceiling, halved on overload
    (a timeout, 429 or 503) and grown back by one after a run of successes."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = ceiling
        self._in_flight = 0
        self._streak = 0
        self._cond = threading.Condition()
        #: every bound in force so far, in order, for `peak_since`
        self._bounds = [self.limit]

    def acquire(self) -> float:
        """Wait for a free slot; return when it was granted (pass it to `release`)."""
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1
            return time.monotonic()

    def release(self, overloaded: bool, started: Optional[float] = None, key: Optional[str] = None) -> bool:
        """Release a slot; return True when an overload (timeout, 429, 503) lowered the bound.

        `started` (from `acquire`) and `key` (the kind of request, None when no reply arrived) feed
        the adaptive bound's latency; the pinned bound ignores them.
        """
        with self._cond:
            self._in_flight -= 1
            lowered = False
            if overloaded:
                self._streak = 0
                if self.limit > 1:
                    self._set(max(1, self.limit // 2))
                    lowered = True
            else:
                self._streak += 1
                if self.limit < self.ceiling and self._streak >= 2 * self.limit:
                    self._set(self.limit + 1)
                    self._streak = 0
            self._cond.notify_all()
            return lowered

    def mark(self) -> int:
        """Return a mark of now, for `peak_since`."""
        with self._cond:
            return len(self._bounds)

    def peak_since(self, mark: int) -> int:
        """Return the highest bound in force since `mark` was taken (the one then included)."""
        with self._cond:
            return max(self._bounds[max(0, mark - 1) :])

    def _set(self, limit: int) -> None:
        # with self._cond held
        if limit != self.limit:
            self.limit = limit
            self._bounds.append(limit)


class AdaptiveLimiter(Limiter):
    """The `auto` concurrency bound: grows while latency holds, backs off on overload and queueing.

    Latency is the congestion signal (as in TCP Vegas): 1 until the first reply, then `START`. Per
    window of replies, mean latency over the baseline (the ratio) below `QUEUE_RATIO` with every
    slot used grows the bound; at or above it twice in a row sets bound / ratio, which lands on the
    server's slot count. A timeout, 429 or 503 halves it at once, at most once per round.
    """

    START = 4
    QUEUE_RATIO = 1.5
    MIN_WINDOW = 3

    def __init__(self, ceiling: int) -> None:
        super().__init__(ceiling)
        self._start = max(1, min(ceiling, self.START))
        self.limit = 1  # until the first reply: the first request pays first-use costs, must not also queue
        self._bounds = [self.limit]
        self._warming = True
        self._slow_start = True
        self._step = 1
        #: the ratio of the last window when it was a queueing one (>= QUEUE_RATIO), else None
        self._queued: Optional[float] = None
        self._changed_at = time.monotonic()
        self._cut_at = -math.inf
        self._window: list[float] = []
        self._busy = 0
        self._baseline: dict[str, float] = {}
        self._inflation = 1.0
        #: calm windows (every slot used, no queueing) in a row at this bound since it last changed
        self._calm = 0

    def acquire(self) -> float:
        started = super().acquire()
        with self._cond:
            self._busy = max(self._busy, self._in_flight)
        return started

    def release(self, overloaded: bool, started: Optional[float] = None, key: Optional[str] = None) -> bool:
        now = time.monotonic()
        with self._cond:
            self._in_flight -= 1
            lowered = False
            if overloaded:
                if started is None or started >= self._cut_at:
                    lowered = self.limit > 1
                    self._change(max(1, self.limit // 2), now, cut=True)
            elif key is not None and started is not None:
                self._sample(key, now - started, started, now)
            self._cond.notify_all()
            return lowered

    def _sample(self, key: str, seconds: float, started: float, now: float) -> None:
        seconds = max(seconds, 1e-4)
        base = self._baseline.get(key)
        if base is None:
            base = seconds / self._inflation
        base = self._baseline[key] = min(base, seconds)
        if self._warming:
            self._warming = False
            self._change(self._start, now)
            return
        if started < self._changed_at:
            return  # asked under another bound: it says nothing about this one
        self._window.append(seconds / base)
        if len(self._window) < max(self.MIN_WINDOW, self.limit):
            return
        # the mean, not the median: by Little's law it is N times one answer whatever the serving order
        ratio = statistics.fmean(self._window)
        self._inflation = ratio if ratio >= self.QUEUE_RATIO else 1.0  # only queueing inflates
        queued, self._queued = self._queued, (ratio if ratio >= self.QUEUE_RATIO else None)
        if queued is not None and self._queued is not None:
            self._change(max(1, int(self.limit / min(ratio, queued))), now, cut=True)
        elif self._queued is not None:
            self._change(self.limit, now)  # queueing once: hold, and see whether it lasts
        elif self._busy >= self.limit and self.limit < self.ceiling and (self._slow_start or self._calm >= 1):
            grown = self.limit * 2 if self._slow_start else self.limit + self._step
            self._change(min(self.ceiling, grown), now)
            self._step *= 2
        elif self._busy >= self.limit:
            self._calm += 1
            self._change(self.limit, now, calm=True)  # after a back-off, a second calm window before growing
        else:
            self._change(self.limit, now)  # hold, and start a new window

    def _change(self, limit: int, now: float, cut: bool = False, calm: bool = False) -> None:
        # with self._cond held: a new bound (or the same one) and a new window
        if not calm:
            self._calm = 0
        if cut:
            self._warming = self._slow_start = False
            self._cut_at = now
            self._queued = None
        if cut or (limit == self.limit and not calm):
            self._step = 1
        self._set(limit)
        self._changed_at = now
        self._window = []
        self._busy = 0  # raised by the requests started from now on


class CallLog:
    """Append every request and reply to a JSON Lines file, secrets scrubbed."""

    def __init__(self, path: Union[str, Path], scrub: Callable[[str], str]) -> None:
        self.path = Path(path)
        self._scrub = scrub
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot open the LLM log {self.path}: {exc.strerror or exc}") from None

    def write(self, record: dict[str, Any]) -> None:
        line = self._scrub(json.dumps(record, ensure_ascii=False, default=str))
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def within(fn: Callable[[], Any], timeout: float) -> tuple[bool, Any, Optional[BaseException]]:
    """Run `fn` on a daemon thread; return (finished within `timeout`, its result, what it raised).

    A call past its deadline is abandoned, never awaited: its thread ends when the call does.
    """
    box: list[Any] = [None, None]

    def run() -> None:
        try:
            box[0] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            box[1] = exc

    thread = threading.Thread(target=run, name="memctl-llm-call", daemon=True)
    thread.start()
    thread.join(max(0.0, timeout))
    if thread.is_alive():
        return False, None, None
    return True, box[0], box[1]
