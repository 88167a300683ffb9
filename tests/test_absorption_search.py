"""The absorption search: one product per group of user partitions, on several threads, deciding as one thread does.

Each user note is compared with every live note of its broader partitions (an agent-wide
partition is a target of every user partition of its agent), so at a million notes this product
is the one cost that grows with an agent's size squared. The user partitions that share their
broader partitions (a company's users) are searched in one product, and the products run on
several threads (`cover_threads`); a row's best match depends on neither.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import Db, make_db
from llmstub import LLMStub
from memctl import api
from memctl.blas import single_thread
from memctl.phases.consolidate import absorption
from memctl.phases.consolidate.absorption import _covers, best_cover, best_of

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.corpus import CorpusSpec, build  # noqa: E402
from test_shards import settings_for, state  # noqa: E402


def unit_rows(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def jobs(seed: int = 5) -> list[tuple[int, int, tuple]]:
    """Searches of several sizes, some rows of a narrow side near a broad row, some broad rows expiring early."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(12):
        b = unit_rows(rng, int(rng.integers(1, 2500)))
        a = unit_rows(rng, int(rng.integers(1, 80)))
        near = rng.integers(0, len(b), size=len(a) // 2)
        a[: len(near)] = b[near] + 0.05 * unit_rows(rng, len(near))
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        b_expiry = np.where(rng.random(len(b)) < 0.2, 1_000.0, np.inf)
        out.append((k, -k, (a, [(np.arange(len(b)), b, b_expiry)], 0.8, np.full(len(a), 2_000.0))))
    return out


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_searches_come_back_in_order_with_one_threads_results(threads: int) -> None:
    todo = jobs()
    with single_thread():
        expected = [best_of(*job) for _, _, job in todo]
        pulled = []

        def source():
            for job in todo:
                pulled.append(job[0])
                yield job

        got = []
        for narrow, wide, result in _covers(source(), threads):
            # no more than `threads` searches run ahead of the one handed back (each holds a wide side)
            assert len(pulled) - len(got) <= threads + 1
            got.append((narrow, wide, result))
    assert [(n, w) for n, w, _ in got] == [(k, -k) for k, _, _ in todo]
    assert sum(int((best >= 0).sum()) for best, _ in expected) > 20, "the jobs must find matches for the test to say anything"
    for (best, sims), (_, _, (got_best, got_sims)) in zip(expected, got, strict=True):
        assert np.array_equal(best, got_best)
        assert np.array_equal(sims, got_sims)


def test_the_best_match_over_several_partitions_is_the_one_a_search_of_all_their_rows_in_rank_order_finds() -> None:
    """Each broader partition's matrix is searched in place; the most similar row wins and, of
    equal ones (the same vector in two partitions), the lower rank, as over all rows at once."""
    rng = np.random.default_rng(3)
    every = unit_rows(rng, 900)
    every[600:650] = every[100:150]  # copies: equally similar, ranked after the originals
    every[10:20] = every[700:710]  # and copies ranked before them
    ranks = rng.permutation(len(every))  # the partitions interleave in rank order
    # each partition's rows in rank order, as `side` lists a partition's notes
    parts = [part[np.argsort(ranks[part])] for part in np.array_split(np.argsort(rng.random(len(every))), 3)]
    expiries = np.where(rng.random(len(every)) < 0.1, 1_000.0, np.inf)
    a = every[rng.integers(0, len(every), size=200)] + 0.01 * unit_rows(rng, 200)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    a_expiry = np.full(len(a), 2_000.0)
    with single_thread():
        in_rank_order = np.argsort(ranks)
        best, sims = best_cover(a, every[in_rank_order], 0.8, a_expiry, expiries[in_rank_order])
        got, got_sims = best_of(a, [(ranks[p], every[p], expiries[p]) for p in parts], 0.8, a_expiry)
    assert (best >= 0).sum() > 150
    assert np.array_equal(got, np.where(best >= 0, best, -1))
    np.testing.assert_allclose(got_sims[best >= 0], sims[best >= 0], rtol=1e-6)


def test_a_company_s_users_searched_in_one_product_find_what_each_finds_alone() -> None:
    rng = np.random.default_rng(9)
    b = unit_rows(rng, 3000)
    users = [unit_rows(rng, int(rng.integers(1, 60))) for _ in range(25)]
    for a in users:
        a[:3] = b[rng.integers(0, len(b), size=len(a[:3]))] + 0.02 * unit_rows(rng, len(a[:3]))
        a /= np.linalg.norm(a, axis=1, keepdims=True)
    never = np.full(len(b), np.inf)
    with single_thread():
        alone = [best_cover(a, b, 0.8, np.full(len(a), np.inf), never) for a in users]
        stacked = np.vstack(users)
        best, sims = best_cover(stacked, b, 0.8, np.full(len(stacked), np.inf), never)
    assert np.array_equal(best, np.concatenate([found for found, _ in alone]))
    assert (best >= 0).sum() >= 25
    np.testing.assert_allclose(sims, np.concatenate([s for _, s in alone]), rtol=1e-6)


SPEC = CorpusSpec(notes=1500, agents=3, dim=384, seed=17, duplicate_share=0.05, contradiction_share=0.02, absorption_share=0.12)


def test_a_dream_absorbs_the_same_notes_on_one_thread_and_on_several(tmp_path: Path, stub: LLMStub, monkeypatch: pytest.MonkeyPatch) -> None:
    stores: list[Db] = []
    for threads in (1, 3):
        db = make_db("sqlite", tmp_path / str(threads))
        build(db.engine, SPEC)
        monkeypatch.setattr(absorption, "cover_threads", lambda threads=threads: threads)
        report = api.dream(settings_for(db, stub), force=True)
        assert report.status == "completed", report.message
        out = {p.phase: p.output for p in report.phases}["consolidate"]
        assert out["absorptionsChecked"] > 10 and out["notesAbsorbed"] > 5, out
        stores.append(db)
    one, several = (state(db) for db in stores)
    assert one == several
    for db in stores:
        db.engine.dispose()
