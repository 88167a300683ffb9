"""Run numpy's BLAS on one thread while memctl multiplies its (small) similarity matrices.

memctl's products are blocks of at most 1,024 rows against a partition's vectors, most of them a
few dozen rows (a user's notes against its company's). OpenBLAS splits each product across its
threads and has them spin-wait for the next one; for products this small that costs more than it
saves, and on a machine whose cores are busy with other work (or with memctl's own LLM threads
and a local database) the waiting threads are descheduled and every product waits for them:
measured on a shared 2-core machine at load 6, 20 x 384 by 384 x 2,200 products took 19 ms each
with OpenBLAS's two threads and 3.5 ms with one. Results may differ from threaded ones in the
last place (OpenBLAS gives a thread's edge block another kernel; seen on an AMD EPYC, not on
every CPU), so every product the LLM phases take runs inside `single_thread`: a run's
similarities do not depend on the thread count the process had.

The thread count is process-wide: `single_thread` sets it for the duration and puts back the
count it found. Without OpenBLAS (another BLAS, no /proc) it does nothing.
"""

from __future__ import annotations

import ctypes
import importlib
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator, Optional

from memctl.shared import SharedSetting

#: (get, set) symbol pairs of the OpenBLAS builds numpy ships or links
_SYMBOLS = [
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
]


@lru_cache(maxsize=1)
def _controls() -> Optional[tuple[Any, Any]]:
    """Return (get_num_threads, set_num_threads) of the OpenBLAS loaded in this process, or None."""
    importlib.import_module("numpy")  # its BLAS must be loaded to be found

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = sorted({line.split(None, 5)[5].strip() for line in maps if line.count(" ") >= 5 and "openblas" in line.lower()})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in _SYMBOLS:
            get, put = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


_threads = SharedSetting()


@contextmanager
def single_thread() -> Iterator[None]:
    """Run the block with numpy's OpenBLAS on one thread (nested and concurrent uses share one setting)."""
    controls = _controls()
    if controls is None:
        yield
        return
    get, put = controls
    with _threads.held(get, put, lambda _: 1):
        yield
