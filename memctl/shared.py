"""A process-wide setting that nested and concurrent users share (numpy's BLAS threads, the collector's thresholds)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional


class SharedSetting:
    """The first user (`held`) sets the value, the last one puts back the value it found."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: Any = None
        self._changed = False

    @contextmanager
    def held(self, get: Callable[[], Any], put: Callable[[Any], None], choose: Callable[[Any], Optional[Any]]) -> Iterator[None]:
        """Run the block with the value `choose` picks given the current one (None: leave it as it is)."""
        with self._lock:
            if self._depth == 0:
                self._saved = get()
                wanted = choose(self._saved)
                self._changed = wanted is not None and wanted != self._saved
                if self._changed:
                    put(wanted)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._changed:
                    put(self._saved)
                    self._changed = False
