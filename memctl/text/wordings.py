"""Notes read for their wording keys by a helper process, while this one clusters (issue 25).

In every partition it plans, the consolidate phase looks for notes that state one fact in other
words: the same words once punctuation, case, filler and adverbs are set aside
(`memctl.text.decide.wording_key`). That needs every note of those partitions read sentence by
sentence (tokens, negations, filler, stems): at 10k notes about a fifth of a first dream's CPU,
and none of it depends on the model's answers. It holds the GIL, so a thread would not help; on
a machine with a second CPU a helper process (`memctl.helper`) reads the notes while this
process clusters them and waits for the model.

The helper runs `read_note` and `wording_key`, the functions this process runs, on the note's
text and created date, the only inputs they read: a key from it is the key this process would
compute. A note it gave no key for (it could not start, died, hung or replied anything but one
key per note; a note whose text or date is not what was sent) is read here, so the keys, and
the plan, are the same with or without it. Its reply is JSON, never unpickled.
"""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from functools import partial
from typing import Any, Callable, Optional, Protocol, Sequence

from memctl.helper import Helper, cpus, read_items, runnable_python, serve_code
from memctl.temporal import normalise
from memctl.text.decide import NoteText, wording_key

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency; json reads the same reply
    _orjson = None  # type: ignore[assignment]

Key = tuple[tuple[str, ...], ...]

#: notes worth a helper. The run's own CPU for the keys, measured on this project's 2-core machine
#: (notes of ~90 characters): 2,000 notes 0.37 -> 0.19 s when the helper starts 0.3 s before the
#: keys are wanted (clustering takes longer than that), 0.31 -> 0.35 s when they are wanted at once;
#: 5,000 notes 0.87 -> 0.37 s and 0.93 -> 0.52 s; 20,000 notes 3.9 -> 2.0 s
HELPER_MIN = 2_000
#: notes sent in one pickle (the helper reads each as it arrives)
FEED_NOTES = 1_000
#: what the helper process runs
HELPER_CODE = serve_code("memctl.text.wordings")


class Written(Protocol):
    id: str
    note: str
    created_at: datetime


def read_note(text: str, created: date | datetime) -> NoteText:
    """Return a note's text read sentence by sentence, its relative dates made absolute against its created date."""
    return NoteText(text, partial(normalise, reference=created))


class WordingKeys:
    """The wording keys of `notes`, read by a helper process from the start when they are many.

    `key(note, here)` returns `note`'s key, or `here(note)` for a note that was not given (or
    whose text or date changed since). When the keys are first wanted, this process takes what
    the helper has answered and reads the rest itself, from the last notes back, while the
    helper goes on from the front: neither waits for the other, and the helper is ended where
    they meet. Use it as a context manager: leaving it ends the helper.
    """

    def __init__(self, notes: Sequence[Written]) -> None:
        self._keys: Optional[dict[str, Key]] = {}
        self._sent: dict[str, tuple[str, Any]] = {}
        self._helper: Optional[Helper] = None
        self._per = FEED_NOTES
        for n in notes:
            self._sent.setdefault(n.id, (n.note, n.created_at))
        if len(self._sent) < HELPER_MIN or cpus() < 2 or not runnable_python():
            self._sent = {}
            return
        helper = Helper(HELPER_CODE, list(self._sent.values()), self._per, "memctl-wordings-feed")
        if helper.running:
            helper.drain()  # it answers batch by batch
            self._helper, self._keys = helper, None
        else:
            self._sent = {}

    def __enter__(self) -> "WordingKeys":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def key(self, note: Written, here: Callable[[Any], Key]) -> Key:
        keys = self._collect()
        if self._sent.get(note.id) == (note.note, note.created_at) and note.id in keys:
            return keys[note.id]
        return here(note)

    def close(self) -> None:
        self._end_helper()
        if self._keys is None:
            self._keys = {}

    def _collect(self) -> dict[str, Key]:
        if self._keys is not None:
            return self._keys
        ids = list(self._sent)
        batches = [ids[i : i + self._per] for i in range(0, len(ids), self._per)]  # as they were sent
        keys: dict[str, Key] = {}
        front, back = 0, len(batches)  # the helper answered the batches before `front`; this process, from `back` on
        pending = b""
        helper = self._helper
        while front < back:
            if helper is not None:
                got, ended = helper.available()
                lines = (pending + got).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if front >= back:  # the rest is read here already
                        break
                    found = _parsed(line, len(batches[front]))
                    if found is None:  # not one key per note of its batch: nothing more is taken from it
                        ended = True
                        break
                    keys.update(zip(batches[front], found))
                    front += 1
                if ended:
                    helper = None
                    self._end_helper()
            if front < back:
                back -= 1
                for note_id in batches[back]:
                    text, created = self._sent[note_id]
                    keys[note_id] = wording_key(read_note(text, created))
        self._end_helper()
        self._keys = keys
        return keys

    def _end_helper(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.close()


def _parsed(reply: bytes, count: int) -> Optional[list[Key]]:
    """Return the `count` keys of a helper's reply, or None when it is anything else."""
    try:
        values = _orjson.loads(reply) if _orjson is not None else json.loads(reply)
    except ValueError:  # orjson refuses a lone surrogate's escape, which json reads
        try:
            values = json.loads(reply)
        except (ValueError, RecursionError):
            return None
    if type(values) is not list or len(values) != count:
        return None
    keys = []
    for value in values:
        if type(value) is not list or not all(type(s) is list and all(type(w) is str for w in s) for s in value):
            return None
        keys.append(tuple(tuple(s) for s in value))
    return keys


def _serve() -> None:
    """The helper process: read batches of (text, created) pickled on stdin until it ends, and
    write each batch's wording keys, in order, as one line of JSON on stdout as soon as it is read."""
    out = sys.stdout.buffer
    for batch in read_items(sys.stdin.buffer):
        keys = [wording_key(read_note(text, created)) for text, created in batch]
        out.write(json.dumps(keys, ensure_ascii=True).encode("ascii") + b"\n")  # escaped: no newline inside
        out.flush()
