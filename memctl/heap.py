"""Collect cyclic garbage less often while a run's phases plan and apply.

Python collects its youngest generation every 700 new container objects and, every 100 of those
collections, the whole heap once it grew by a quarter. A dream creates millions of short-lived
records, dicts and tuples (a 200,000-note store: 8,261 young, 751 middle and 21 full
collections, 12.7 s of a 101.5 s first dream, the full ones 10.7 s of it, each walking every
live object), and almost none of them is part of a reference cycle: reference counting frees
them. During a run the thresholds are (100,000, 50, 100): 67 young and 2 middle collections,
2.8 s, the same peak RSS (1,303 MiB against 1,311) and a 7 % shorter dream (93.7 s).

Cyclic garbage of a run is still collected: by the young collections, by a full collection
between slices of a sliced scope (memctl/phases/slices.py), and after the run, when the
thresholds in force before are put back. Nested and concurrent runs (shard workers in threads)
share one setting, put back when the last one ends.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator, Optional

from memctl.shared import SharedSetting

#: the thresholds in force during a run (generation 0, 1, 2)
RUN_THRESHOLDS = (100_000, 50, 100)

_thresholds = SharedSetting()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with `RUN_THRESHOLDS`, unless the thresholds are already higher (or the collector is off)."""
    with _thresholds.held(gc.get_threshold, lambda t: gc.set_threshold(*t), _run_thresholds):
        yield


def _run_thresholds(current: tuple[int, ...]) -> Optional[tuple[int, ...]]:
    return RUN_THRESHOLDS if current[0] and current[0] < RUN_THRESHOLDS[0] else None
