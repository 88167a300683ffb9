"""A run collects cyclic garbage less often (memctl/heap.py), and puts the collector's thresholds back after."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

from conftest import Db
from factory import NOW, Store, at
from memctl import api
from memctl.heap import RUN_THRESHOLDS, fewer_collections
from memctl.phases.archive import ArchivePhase


def test_nested_and_concurrent_runs_share_the_setting_and_the_last_one_puts_the_thresholds_back() -> None:
    before = gc.get_threshold()
    inside, release = threading.Event(), threading.Event()

    def other_run() -> None:
        with fewer_collections():
            inside.set()
            release.wait(5)

    with fewer_collections():
        assert gc.get_threshold() == RUN_THRESHOLDS
        worker = threading.Thread(target=other_run)
        worker.start()
        assert inside.wait(5)
        with fewer_collections():
            assert gc.get_threshold() == RUN_THRESHOLDS
    assert gc.get_threshold() == RUN_THRESHOLDS, "the other run is still going"
    release.set()
    worker.join(5)
    assert gc.get_threshold() == before


def test_higher_thresholds_or_a_disabled_collector_are_left_as_they_are() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(500_000, 10, 10)
        with fewer_collections():
            assert gc.get_threshold() == (500_000, 10, 10)
        gc.set_threshold(0)
        with fewer_collections():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


def test_a_dream_plans_under_the_run_thresholds_and_puts_the_old_ones_back(db: Db, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(db.engine)
    store.note("User prefers email.", AgentID=store.agent())
    seen: list[tuple[int, ...]] = []
    original = ArchivePhase.plan

    def plan(self: Any, ctx: Any, overlay: Any) -> Any:
        seen.append(gc.get_threshold())
        return original(self, ctx, overlay)

    monkeypatch.setattr(ArchivePhase, "plan", plan)
    before = gc.get_threshold()
    assert before != RUN_THRESHOLDS
    report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    assert report.exit_code == 0, report.message
    assert seen == [RUN_THRESHOLDS]
    assert gc.get_threshold() == before
