"""What one HTTP call of the client can end in besides a reply, how many calls run at once (a
bound that adapts to overload), and the JSON Lines log of every call."""

from __future__ import annotations

import json
import os
import queue
import threading
import weakref
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
    """A concurrency bound that halves on overload and grows back by one after steady success."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = ceiling
        self._in_flight = 0
        self._streak = 0
        self._cond = threading.Condition()

    def acquire(self) -> None:
        with self._cond:
            while self._in_flight >= self.limit:
                self._cond.wait()
            self._in_flight += 1

    def release(self, overloaded: bool) -> bool:
        """Release a slot; return True when this release lowered the bound."""
        with self._cond:
            self._in_flight -= 1
            lowered = False
            if overloaded:
                self._streak = 0
                if self.limit > 1:
                    self.limit = max(1, self.limit // 2)
                    lowered = True
            else:
                self._streak += 1
                if self.limit < self.ceiling and self._streak >= 2 * self.limit:
                    self.limit += 1
                    self._streak = 0
            self._cond.notify_all()
            return lowered


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


class _Job:
    """One fetch handed to a reader thread; `done` is released when it has run and its reader is idle again."""

    __slots__ = ("done", "error", "fn", "result")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn: Optional[Callable[[], Any]] = fn
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        fn, self.fn = self.fn, None
        try:
            self.result = fn()  # type: ignore[misc]
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
            self.error = exc


class Readers:
    """Threads that make HTTP calls for callers who wait on a wall-clock deadline, kept between calls.

    `run` hands a fetch to an idle reader, or to a new one when every reader is busy (a reader
    still reading the body of a call whose caller gave up at its deadline never delays another
    call), and waits for it no longer than `timeout`. Starting a thread per call cost more CPU
    than the rest of the client (benchmarks/client_overhead.py); a reader idle for
    `idle_seconds` ends, and `close` ends the idle ones.
    """

    def __init__(self, name: str = "memctl-llm-call", idle_seconds: float = 60.0) -> None:
        self.name = name
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        #: the job queues of the readers waiting for work, the most recently idle last
        self._idle: list[queue.SimpleQueue] = []
        self._closed = False
        _ALL_READERS.add(self)

    def _forget_threads(self) -> None:
        # in a forked child: the parent's readers do not exist here, so no job may be handed to them
        self._lock = threading.Lock()
        self._idle = []

    def run(self, fn: Callable[[], Any], timeout: float) -> tuple[bool, Any, Optional[BaseException]]:
        """Run `fn` in a reader; return (finished within `timeout`, its result, what it raised)."""
        job = _Job(fn)
        with self._lock:
            jobs = self._idle.pop() if self._idle else None
        if jobs is not None:
            jobs.put(job)
        else:
            threading.Thread(target=self._serve, args=(job,), name=self.name, daemon=True).start()
        if not job.done.acquire(timeout=max(0.0, timeout)):
            return False, None, None
        return True, job.result, job.error

    def close(self) -> None:
        """End the idle readers; busy ones end when their call does."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for jobs in idle:
            jobs.put(None)

    def _serve(self, job: Optional[_Job]) -> None:
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        while job is not None:
            job.run()
            # back on the idle list before the caller hears of the result, so that its next
            # call finds this reader instead of starting another
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle.append(jobs)
            job.done.release()
            job = None
            if closed:
                return
            try:
                job = jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if any(q is jobs for q in self._idle):
                        self._idle.remove(jobs)
                        return
                # a caller took this reader off the idle list just now: its job is on the way
                job = jobs.get()


_ALL_READERS: weakref.WeakSet[Readers] = weakref.WeakSet()
if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=lambda: [r._forget_threads() for r in list(_ALL_READERS)])
