"""Wording keys read by a helper process (memctl/text/wordings.py, issue 25).

The helper runs the functions this process runs, on the same text and date: every key it gives
is the one computed here, on the held-out sets' notes in eight languages with relative dates;
a helper that cannot start, dies, hangs or answers nonsense changes no key and is never waited
for; a dream plans the same with and without it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import Db
from factory import NOW, Store, at

from memctl import api
from memctl import helper as helper_process
from memctl.phases.consolidate.copies import SAME_WORDS
from memctl.store import models as m
from memctl.text import wordings
from memctl.text.decide import wording_key
from memctl.text.wordings import WordingKeys, read_note

HELDOUT = Path(__file__).resolve().parents[1] / "benchmarks" / "heldout"


@dataclass(frozen=True)
class Written:
    id: str
    note: str
    created_at: datetime


def heldout_notes() -> list[Written]:
    """Every note of the three held-out sets, with relative dates ("yesterday", "nächste Woche") read against varied days."""
    out = []
    for name in ("set_a", "set_b", "set_c"):
        for line in (HELDOUT / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            for k, note in enumerate(case["notes"]):
                created = datetime(2026, 3, 1, tzinfo=timezone.utc) + timedelta(days=len(out) % 40, hours=k)
                out.append(Written(f"{name}-{case['id']}-{k}", note["text"], created))
    return out


def here(note: Written) -> Any:
    return wording_key(read_note(note.note, note.created_at))


@pytest.fixture
def helper_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper for even a few notes, in small batches, as on a 2-CPU machine."""
    monkeypatch.setattr(wordings, "HELPER_MIN", 2)
    monkeypatch.setattr(wordings, "FEED_NOTES", 7)
    monkeypatch.setattr(wordings, "cpus", lambda: 2)


def answered_by_helper(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the keys taken from the helper's lines."""
    taken: list[int] = []
    real = wordings._parsed

    def counting(line: bytes, count: int) -> Any:
        found = real(line, count)
        taken.append(len(found) if found is not None else 0)
        return found

    monkeypatch.setattr(wordings, "_parsed", counting)
    return taken


def no_helper_threads() -> bool:
    return not [t for t in threading.enumerate() if t.name.startswith("memctl-wordings")]


def test_the_helpers_keys_are_the_keys_read_here_in_every_language(monkeypatch: pytest.MonkeyPatch, helper_wanted: None) -> None:
    notes = heldout_notes()
    assert len(notes) > 4000 and len({n.id for n in notes}) == len(notes)
    monkeypatch.setattr(wordings, "FEED_NOTES", 500)
    taken = answered_by_helper(monkeypatch)
    with WordingKeys(notes) as read:
        assert read._helper is not None
        read._helper.process.wait(120)  # type: ignore[union-attr]  # let it answer every batch before any is read here
        got = [read.key(n, lambda n: pytest.fail(f"read here: {n.id}")) for n in notes]
    assert sum(taken) == len(notes)
    assert got == [here(n) for n in notes]
    assert no_helper_threads()


def test_the_helper_and_this_process_share_the_notes_and_meet(monkeypatch: pytest.MonkeyPatch, helper_wanted: None) -> None:
    """Wanted at once, the keys come partly from the helper (from the front), partly from here (from the back)."""
    notes = heldout_notes()[:3000]
    taken = answered_by_helper(monkeypatch)
    with WordingKeys(notes) as read:
        got = [read.key(n, here) for n in notes]
    assert got == [here(n) for n in notes]
    assert no_helper_threads()
    assert sum(taken) < len(notes)  # this process read its part without waiting


@pytest.mark.parametrize("code", [
    "import os; os._exit(9)",
    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'not keys\\n')",
    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'[[[\"x\"]]]\\n')",  # one key for a batch of seven
    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'[' + b','.join([b'[[1]]'] * 7) + b']\\n')",  # not words
    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'[' + b','.join([b'\"ab\"'] * 7) + b']\\n')",  # not sentences
    "import sys, time; sys.stdin.buffer.read(); time.sleep(60)",  # stuck: never waited for
    "import os, sys, time; sys.stdin.buffer.read(); os.close(1); time.sleep(60)",  # lingers after an empty reply
])
def test_a_helper_that_dies_hangs_or_answers_nonsense_changes_no_key(monkeypatch: pytest.MonkeyPatch, code: str, helper_wanted: None) -> None:
    monkeypatch.setattr(wordings, "HELPER_CODE", code)
    notes = heldout_notes()[:40]
    with WordingKeys(notes) as read:
        assert read._helper is not None
        got = [read.key(n, here) for n in notes]
    assert got == [here(n) for n in notes]
    assert no_helper_threads()


def test_a_helper_that_answers_its_first_batch_then_hangs_gives_that_batch_only(monkeypatch: pytest.MonkeyPatch, helper_wanted: None) -> None:
    notes = heldout_notes()[:21]
    first = json.dumps([here(n) for n in notes[:7]], ensure_ascii=True)
    monkeypatch.setattr(
        wordings, "HELPER_CODE", f"import sys, time; sys.stdout.buffer.write({first!r}.encode() + b'\\n'); sys.stdout.buffer.flush(); time.sleep(60)"
    )
    taken = answered_by_helper(monkeypatch)
    with WordingKeys(notes) as read:
        for _ in range(200):  # until its line is there to read
            if read._helper is not None and read._helper.drained:
                break
            threading.Event().wait(0.05)
        got = [read.key(n, here) for n in notes]
    assert got == [here(n) for n in notes]
    assert taken == [7]


def test_lines_past_the_last_batch_are_not_read(monkeypatch: pytest.MonkeyPatch, helper_wanted: None) -> None:
    """A helper that answers every batch and then writes more lines: the batches' keys are used, the rest ignored."""
    monkeypatch.setattr(
        wordings, "HELPER_CODE", wordings.HELPER_CODE + "; sys.stdout.buffer.write(b'[[[\"x\"]]]\\n' * 5); sys.stdout.buffer.flush()"
    )
    notes = heldout_notes()[:21]
    taken = answered_by_helper(monkeypatch)
    with WordingKeys(notes) as read:
        assert read._helper is not None
        read._helper.process.wait(60)  # type: ignore[union-attr]
        got = [read.key(n, lambda n: pytest.fail(f"read here: {n.id}")) for n in notes]
    assert got == [here(n) for n in notes] and taken == [7, 7, 7]


def test_a_note_changed_since_it_was_sent_is_read_here(helper_wanted: None) -> None:
    notes = heldout_notes()[:20]
    with WordingKeys(notes) as read:
        changed = Written(notes[3].id, "Tom wants his reports monthly.", notes[3].created_at)
        redated = Written(notes[4].id, notes[4].note, notes[4].created_at + timedelta(days=400))
        assert read.key(changed, here) == here(changed)
        assert read.key(redated, here) == here(redated)
        assert read.key(Written("never-sent", "Ana prefers tea.", NOW), here) == (("ana", "prefer", "tea"),)


def test_no_helper_for_few_notes_one_cpu_or_no_python_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    notes = heldout_notes()[:50]
    monkeypatch.setattr(helper_process.subprocess, "Popen", lambda *a, **k: pytest.fail("started a helper"))
    monkeypatch.setattr(wordings, "HELPER_MIN", 51)
    with WordingKeys(notes) as read:
        assert [read.key(n, here) for n in notes] == [here(n) for n in notes]
    monkeypatch.setattr(wordings, "HELPER_MIN", 2)
    monkeypatch.setattr(wordings, "cpus", lambda: 1)
    with WordingKeys(notes) as read:
        assert read.key(notes[0], here) == here(notes[0])
    monkeypatch.setattr(wordings, "cpus", lambda: 2)
    monkeypatch.setattr(wordings, "runnable_python", lambda: False)
    with WordingKeys(notes) as read:
        assert read.key(notes[0], here) == here(notes[0])


def test_a_helper_that_cannot_start_leaves_every_key_to_this_process(monkeypatch: pytest.MonkeyPatch, helper_wanted: None) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("no processes left")

    monkeypatch.setattr(helper_process.subprocess, "Popen", broken)
    notes = heldout_notes()[:30]
    with WordingKeys(notes) as read:
        assert read._helper is None
        assert [read.key(n, here) for n in notes] == [here(n) for n in notes]


def _store_with_wordings(db: Db) -> dict[str, str]:
    """Partitions whose notes state one fact in other words, beside others that do not (languages of tests/test_languages.py)."""
    store = Store(db.engine)
    agent = store.agent()
    ids = {}
    # two wordings and another fact each: the partition is planned, no cluster of the minimum
    # size forms, and the wording keys alone join the two wordings
    facts = [
        ("Ana prefers answers in Spanish.", "Ana always prefers answers in Spanish.", "Her invoices go to the Lisbon office."),
        ("Анна предпочитает ответы на немецком.", "Анна всегда предпочитает ответы на немецком.", "Её счета уходят в офис в Лиссабоне."),
        ("アナはドイツ語での回答を好む。", "アナはいつもドイツ語での回答を好む。", "請求書はリスボン事務所に送られる。"),
        ("Account 1000 uses the billing module.", "Account 1009 uses the billing module.", "Account 1010 uses the export module."),
    ]
    for u, wordings_of in enumerate(facts):
        user = store.user(f"user{u}")
        for i, text in enumerate(wordings_of):
            ids[store.note(text, age_days=12 - i, AccessCount=i, AgentID=agent, UserID=user)] = text
    return ids


def _plan(db: Db, path: Path) -> Any:
    report = api.dream(at(db.settings, NOW), api.RunOptions(dry_run=True, plan_out=str(path)), force=True, engine=db.engine)
    assert report.status == "dry-run" and report.exit_code == 0, report.message
    return json.loads(path.read_text())


def test_a_dream_plans_the_same_with_the_helper_as_without(db: Db, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Offline (no model), so the wordings decide: the same plan, unit for unit, with every key from the helper."""
    _store_with_wordings(db)
    without = _plan(db, tmp_path / "without.json")
    monkeypatch.setattr(wordings, "HELPER_MIN", 2)
    monkeypatch.setattr(wordings, "cpus", lambda: 2)
    taken = answered_by_helper(monkeypatch)
    made: list[Any] = []
    real_init = WordingKeys.__init__

    def recording(self: WordingKeys, notes: Any) -> None:
        real_init(self, notes)
        made.append(self)
        if self._helper is not None:
            self._helper.process.wait(60)  # type: ignore[union-attr]  # every key from it, none read here

    monkeypatch.setattr(WordingKeys, "__init__", recording)
    assert _plan(db, tmp_path / "with.json") == without
    assert made and sum(taken) == len(made[0]._sent) >= 12
    report = api.dream(at(db.settings, NOW), force=True, engine=db.engine)
    assert report.exit_code == 0, report.message
    with db.engine.connect() as conn:
        revoked = conn.execute(sa.select(m.note.c.Note, m.note.c.Comments).where(m.note.c.Status == "Revoked")).all()
    assert len(revoked) == 3 and not [r for r in revoked if "Account" in r.Note], revoked  # one of each fact's two wordings
    assert all(SAME_WORDS in r.Comments for r in revoked), revoked
    assert no_helper_threads()


def test_a_note_whose_date_cannot_be_sent_is_read_here(helper_wanted: None) -> None:
    """A created date of a type pickle refuses (another application's row) ends the helper's input
    there (the helper is not left waiting for the rest): the batches before it come from the helper, the rest is read here."""

    class Odd(datetime):
        def __reduce_ex__(self, protocol: Any) -> Any:
            raise TypeError("cannot pickle this date")

    notes = heldout_notes()[:21]
    odd = Odd(2026, 3, 1, tzinfo=timezone.utc)
    notes[10] = Written(notes[10].id, notes[10].note, odd)
    with WordingKeys(notes) as read:
        assert read._helper is not None
        read._helper.process.wait(60)  # type: ignore[union-attr]  # its input ended early: it answered and left
        got = [read.key(n, here) for n in notes]
    assert got == [here(n) for n in notes]
    assert no_helper_threads()
