"""The Judge backed by an OpenAI-compatible LLM: render a prompt, ask, parse.

Relative dates are made absolute against each note's created date before rendering. Replies are
only parsed here; the phases validate them. With `context_tokens` set, a question that would not
fit is answered here with the reason, without a request (a server would fail or truncate it).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from pydantic import BaseModel

from memctl.llm import budget
from memctl.llm.base import Judge, JudgeResult
from memctl.llm.client import LLMClient
from memctl.llm.prompts import Prompt, PromptError, load_prompt, notes_json
from memctl.llm.questions import question_data
from memctl.llm.replies import (
    AbsorptionBatch,
    AbsorptionReply,
    BatchReply,
    ConsolidationBatch,
    ConsolidationReply,
    ContradictionBatch,
    ContradictionReply,
)
from memctl.llm.schema import schema_instructions
from memctl.records import NoteRecord

#: kind -> (template name, reply model, schema name sent with response_format)
KINDS: dict[str, tuple[str, type[BaseModel], str]] = {
    "consolidate": ("consolidate-notes", ConsolidationReply, "consolidation_reply"),
    "contradiction": ("detect-contradictions", ContradictionReply, "contradiction_reply"),
    "absorb": ("absorb-note", AbsorptionReply, "absorption_reply"),
}
#: the template that wraps several questions of one kind into one request
SEVERAL_TEMPLATE = "several-questions"
#: kind -> (schema of a reply to several questions, its schema name)
BATCH_KINDS: dict[str, tuple[type[BaseModel], str]] = {
    "consolidate": (ConsolidationBatch, "consolidation_batch"),
    "contradiction": (ContradictionBatch, "contradiction_batch"),
    "absorb": (AbsorptionBatch, "absorption_batch"),
}
#: reply tokens per answer on top of its own budget: its "item" key and the list's punctuation
ITEM_REPLY_TOKENS = 16


class LLMJudge(Judge):
    """Answers the Judge questions by asking an LLM through an `LLMClient`. Thread-safe."""

    batches = True

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
        return self._load(KINDS[kind][0])

    def _load(self, name: str) -> Prompt:
        with self._lock:
            if name not in self._prompts:
                self._prompts[name] = load_prompt(name, self.prompts_dir)
            return self._prompts[name]

    def template_hash(self, kind: str) -> str:
        return self.prompt(kind).sha256

    def close(self) -> None:
        """Close the client's connections (an answer still trickling in is not awaited)."""
        self.client.close()

    def counters(self) -> dict[str, int]:
        return self.client.counters()

    def concurrency_mark(self) -> int:
        return self.client.concurrency_mark()

    def concurrency_reached(self, mark: int) -> tuple[int, int]:
        return self.client.concurrency_reached(mark)

    def consolidate(self, notes: Sequence[NoteRecord], reference_date: str) -> JudgeResult:
        return self._ask("consolidate", question_data("consolidate", notes), self._consolidation_budget(notes), reference_date)

    def contradiction(self, a: NoteRecord, b: NoteRecord) -> JudgeResult:
        return self._ask("contradiction", question_data("contradiction", (a, b)), budget.VERDICT_REPLY_TOKENS)

    def absorption(self, broader: NoteRecord, narrower: NoteRecord) -> JudgeResult:
        return self._ask("absorb", question_data("absorb", (broader, narrower)), budget.VERDICT_REPLY_TOKENS)

    def consolidation_fits(self, notes: Sequence[NoteRecord], reference_date: str) -> bool:
        """Return whether asking to consolidate `notes` fits the context window (always, without a limit)."""
        if self.context_tokens is None:
            return True
        system, user = self._render("consolidate", question_data("consolidate", notes), reference_date)
        return self._overflow("consolidate", system, user, self._consolidation_budget(notes)) is None

    def ask_many(self, kind: str, items: Sequence[Any], reference_date: Optional[str] = None) -> JudgeResult:
        """Ask several questions of `kind` (`items`: their `question_data`) in one request.

        The caller checks the `BatchReply`'s entries one by one; a request too big for the context
        window is answered here with the reason.
        """
        schema, schema_name = BATCH_KINDS[kind]
        system, user = self._render_many(kind, items, reference_date)
        return self._send(kind, system, user, self.batch_reply_tokens(kind, items), BatchReply, schema_name, schema)

    def batch_fits(self, kind: str, items: Sequence[Any], reference_date: Optional[str] = None) -> bool:
        """Return whether asking `items` in one request fits the context window (always, without a limit)."""
        if self.context_tokens is None:
            return True
        system, user = self._render_many(kind, items, reference_date)
        return self._overflow(kind, system, user, self.batch_reply_tokens(kind, items), BATCH_KINDS[kind][0]) is None

    def batch_reply_tokens(self, kind: str, items: Sequence[Any]) -> int:
        """Return the max_tokens of a request of `items`: each answer's own budget, and its item number."""
        total = ITEM_REPLY_TOKENS * (len(items) + 1)
        if kind != "consolidate":
            return total + budget.VERDICT_REPLY_TOKENS * len(items)
        return total + sum(budget.consolidation_reply_tokens([d["content"] for d in data], self.max_note_chars) for data in items)

    def _render_many(self, kind: str, items: Sequence[Any], reference_date: Optional[str]) -> tuple[str, str]:
        single, several = self.prompt(kind), self._load(SEVERAL_TEMPLATE)
        preamble = f"Today is {reference_date}.\n\n" if kind == "consolidate" and reference_date is not None else ""
        data = {"questions": [{"item": k + 1, "data": item} for k, item in enumerate(items)]}
        extra, user = several.render(count=str(len(items)), preamble=preamble, notes_json=notes_json(data))
        return f"{single.system}\n\n{extra}", user

    def _consolidation_budget(self, notes: Sequence[NoteRecord]) -> int:
        return budget.consolidation_reply_tokens([n.note for n in notes], self.max_note_chars)

    def _render(self, kind: str, data: Any, reference_date: Optional[str] = None) -> tuple[str, str]:
        values = {"notes_json": notes_json(data)}
        if reference_date is not None:
            values["reference_date"] = str(reference_date)
        return self.prompt(kind).render(**values)

    def _overflow(self, kind: str, system: str, user: str, reply_tokens: int, schema: Optional[type[BaseModel]] = None) -> Optional[str]:
        """Return why the question would not fit the context window, or None."""
        if self.context_tokens is None:
            return None
        text = system + user
        mode = self.client.response_format_mode
        if mode != "json_schema":
            text += schema_instructions(schema or KINDS[kind][1], mode)
        needed = budget.estimate_tokens(text) + reply_tokens
        if needed <= self.context_tokens:
            return None
        return (
            f"not sent: about {needed} tokens (prompt ~{needed - reply_tokens} + reply {reply_tokens}) "
            f"exceed llm_context_tokens = {self.context_tokens}"
        )

    def _ask(self, kind: str, data: Any, reply_tokens: int, reference_date: Optional[str] = None) -> JudgeResult:
        _, reply_model, schema_name = KINDS[kind]
        return self._send(kind, *self._render(kind, data, reference_date), reply_tokens, reply_model, schema_name)

    def _send(
        self, kind: str, system: str, user: str, reply_tokens: int, reply_model: type[BaseModel], schema_name: str,
        schema: Optional[type[BaseModel]] = None,
    ) -> JudgeResult:
        too_big = self._overflow(kind, system, user, reply_tokens, schema)
        if too_big:
            return JudgeResult(reply=None, error=too_big)
        return self.client.complete_json(system, user, reply_model, schema_name, max_tokens=reply_tokens, schema_model=schema)
