"""The Judge backed by an OpenAI-compatible LLM: render a prompt, ask, parse.

Each note's relative dates are normalised against its own created date before the prompt is
rendered, so the model sees absolute dates whenever memctl can compute them (the prompt still
asks it to convert any it finds). Replies are only parsed here; the phases validate IDs, types
and lengths against the cluster or pair they asked about.

Every question carries a reply budget (`max_tokens`, memctl/llm/budget.py), and with
`context_tokens` set a question whose prompt and budget would not fit is answered here with
the reason, without a request: a server would only fail it (or truncate the prompt silently).
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from pydantic import BaseModel

from memctl.llm import budget
from memctl.llm.base import JudgeResult
from memctl.llm.client import LLMClient, schema_instructions
from memctl.llm.prompts import Prompt, PromptError, load_prompt, notes_json
from memctl.llm.replies import AbsorptionReply, ConsolidationReply, ContradictionReply
from memctl.records import NoteRecord

#: kind -> (template name, reply model, schema name sent with response_format)
KINDS: dict[str, tuple[str, type[BaseModel], str]] = {
    "consolidate": ("consolidate-notes", ConsolidationReply, "consolidation_reply"),
    "contradiction": ("detect-contradictions", ContradictionReply, "contradiction_reply"),
    "absorb": ("absorb-note", AbsorptionReply, "absorption_reply"),
}


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def note_data(note: NoteRecord) -> dict[str, Any]:
    """Return the JSON object a prompt shows for `note`, its content with relative dates made absolute."""
    from memctl import temporal  # written alongside this module; imported late to keep the import graph flat

    created = _utc(note.created_at).date()
    return {
        "id": note.id,
        "type": note.type,
        "content": temporal.normalise(note.note, created),
        "createdAt": created.isoformat(),
        "accessCount": note.access_count,
    }


def pair_data(note: NoteRecord) -> dict[str, Any]:
    """Return what the contradiction prompt shows for `note`: no access count.

    Authority is decided in code, so the model does not need it, and leaving it out keeps a
    cached verdict valid while agents keep reading the notes (AccessCount changes on every read).
    """
    data = note_data(note)
    del data["accessCount"]
    return data


class LLMJudge:
    """Answers the Judge questions by asking an LLM through an `LLMClient`. Thread-safe."""

    def __init__(
        self,
        client: LLMClient,
        prompts_dir: Union[str, Path, None] = None,
        *,
        context_tokens: Optional[int] = None,
        max_note_chars: int = 2000,
    ) -> None:
        self.client = client
        self.model = client.model
        self.prompts_dir = prompts_dir
        self.context_tokens = context_tokens
        self.max_note_chars = max_note_chars
        self._prompts: dict[str, Prompt] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLMJudge(model={self.model!r})"

    def prompt(self, kind: str) -> Prompt:
        """Return the loaded template for `kind`, loading it on first use (PromptError if missing)."""
        if kind not in KINDS:
            raise PromptError(f"unknown judge kind {kind!r}; expected one of {', '.join(KINDS)}")
        with self._lock:
            if kind not in self._prompts:
                self._prompts[kind] = load_prompt(KINDS[kind][0], self.prompts_dir)
            return self._prompts[kind]

    def template_hash(self, kind: str) -> str:
        """Return the sha256 of the template file used for `kind`."""
        return self.prompt(kind).sha256

    def counters(self) -> dict[str, int]:
        """Return the client's request, retry, timeout, fallback and back-off counts so far."""
        return self.client.counters()

    def consolidate(self, notes: Sequence[NoteRecord], reference_date: str) -> JudgeResult:
        """Ask for one note keeping every distinct fact of `notes` (a ConsolidationReply)."""
        return self._ask("consolidate", [note_data(n) for n in notes], self._consolidation_budget(notes), reference_date)

    def contradiction(self, a: NoteRecord, b: NoteRecord) -> JudgeResult:
        """Ask whether `a` and `b` contradict each other (a ContradictionReply)."""
        return self._ask("contradiction", [pair_data(a), pair_data(b)], budget.VERDICT_REPLY_TOKENS)

    def absorption(self, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
        """Ask whether `broader` already states every fact of `narrower` (an AbsorptionReply)."""
        data = {"broader": note_data(broader), "narrower": note_data(narrower)}
        return self._ask("absorb", data, budget.VERDICT_REPLY_TOKENS)

    def consolidation_fits(self, notes: Sequence[NoteRecord], reference_date: str) -> bool:
        """Return whether asking to consolidate `notes` fits the context window (always, without a limit)."""
        if self.context_tokens is None:
            return True
        system, user = self._render("consolidate", [note_data(n) for n in notes], reference_date)
        return self._overflow("consolidate", system, user, self._consolidation_budget(notes)) is None

    def _consolidation_budget(self, notes: Sequence[NoteRecord]) -> int:
        return budget.consolidation_reply_tokens([n.note for n in notes], self.max_note_chars)

    def _render(self, kind: str, data: Any, reference_date: Optional[str] = None) -> tuple[str, str]:
        values = {"notes_json": notes_json(data)}
        if reference_date is not None:
            values["reference_date"] = str(reference_date)
        return self.prompt(kind).render(**values)

    def _overflow(self, kind: str, system: str, user: str, reply_tokens: int) -> Optional[str]:
        """Return why the question would not fit the context window, or None."""
        if self.context_tokens is None:
            return None
        text = system + user
        mode = self.client.response_format_mode
        if mode != "json_schema":
            text += schema_instructions(KINDS[kind][1], mode)
        needed = budget.estimate_tokens(text) + reply_tokens
        if needed <= self.context_tokens:
            return None
        return (
            f"not sent: about {needed} tokens (prompt ~{needed - reply_tokens} + reply {reply_tokens}) "
            f"exceed llm_context_tokens = {self.context_tokens}"
        )

    def _ask(self, kind: str, data: Any, reply_tokens: int, reference_date: Optional[str] = None) -> JudgeResult:
        _, reply_model, schema_name = KINDS[kind]
        system, user = self._render(kind, data, reference_date)
        too_big = self._overflow(kind, system, user, reply_tokens)
        if too_big:
            return JudgeResult(reply=None, error=too_big)
        return self.client.complete_json(system, user, reply_model, schema_name, max_tokens=reply_tokens)
