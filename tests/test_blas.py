"""memctl.blas: OpenBLAS on one thread for a block, the count put back, products unchanged."""

from __future__ import annotations

import numpy as np

from memctl import blas
from memctl.llm.offline_judge import EXCLUSIVE_SETS


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


def test_products_are_the_same_bits_on_one_thread() -> None:
    rng = np.random.default_rng(3)
    broad = rng.standard_normal((1500, 64)).astype(np.float32)
    narrow = [rng.standard_normal((n, 64)).astype(np.float32) for n in (1, 7, 33, 300)]
    threaded = [(a @ broad.T).tobytes() for a in narrow]
    with blas.single_thread():
        single = [(a @ broad.T).tobytes() for a in narrow]
    assert single == threaded


def test_exclusive_set_lookup_gives_the_first_group_holding_the_word() -> None:
    for exclusive in EXCLUSIVE_SETS:
        for group in exclusive.groups:
            for word in group:
                assert exclusive.group_of(word) == next(i for i, g in enumerate(exclusive.groups) if word in g)
        assert exclusive.group_of("no-such-word") is None
