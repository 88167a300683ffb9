"""memctl.blas: OpenBLAS on one thread for a block, the count put back, products reproducible."""

from __future__ import annotations

import numpy as np

from memctl import blas


def test_single_thread_sets_one_thread_and_puts_the_count_back() -> None:
    controls = blas._controls()
    if controls is None:  # another BLAS: nothing to set, the block still runs
        with blas.single_thread():
            pass
        return
    get, put = controls
    before = get()
    put(2)
    try:
        with blas.single_thread():
            assert get() == 1
            with blas.single_thread():  # nested
                assert get() == 1
            assert get() == 1
        assert get() == 2
    finally:
        put(before)


def test_products_on_one_thread_are_reproducible_and_agree_with_threaded_ones() -> None:
    """Every product memctl's phases take runs inside single_thread, so a run's similarities do
    not depend on how many threads OpenBLAS had. Threaded products may differ from them in the last
    place (OpenBLAS gives a thread's edge block another kernel: measured on an AMD EPYC, up to
    1.3e-5 on values near 35), never by more than float32 rounding."""
    rng = np.random.default_rng(3)
    broad = rng.standard_normal((1500, 64)).astype(np.float32)
    narrow = [rng.standard_normal((n, 64)).astype(np.float32) for n in (1, 7, 33, 300)]
    threaded = [a @ broad.T for a in narrow]
    controls = blas._controls()
    runs = []
    for count in (1, 2):  # whatever count the process had before the block
        if controls is not None:
            before = controls[0]()
            controls[1](count)
        try:
            with blas.single_thread():
                runs.append([(a @ broad.T).tobytes() for a in narrow])
        finally:
            if controls is not None:
                controls[1](before)
    assert runs[0] == runs[1]
    for a, single, many in zip(narrow, runs[0], threaded):
        same = np.frombuffer(single, dtype=np.float32).reshape(len(a), len(broad))
        np.testing.assert_allclose(same, many, rtol=1e-5, atol=1e-5)
