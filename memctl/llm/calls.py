"""What one HTTP call of the client can end in besides a reply, how many calls run at once (a
bound that adapts to overload), and the JSON Lines log of every call."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable, Union

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
