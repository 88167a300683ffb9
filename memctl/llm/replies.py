"""Pydantic models of the JSON replies memctl asks an LLM (or the offline provider) for.

Replies are untrusted: parsed strictly here, checked against their cluster or pair by the phase
that asked, quoted evidence by memctl.text.evidence. The schemas leave a weak model little room:
enums, confidences in 0..1, and a contradiction is ONE `verdict` field.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

NOTE_TYPES = ("Preference", "Constraint", "Context", "Example", "Issue")
NoteType = Literal["Preference", "Constraint", "Context", "Example", "Issue"]
#: the contradiction verdicts; "none" is "not a contradiction"
VERDICTS = ("none", "competing_value", "negation", "temporal_supersession")
Verdict = Literal["none", "competing_value", "negation", "temporal_supersession"]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=False)


class ConsolidatedNote(_Reply):
    type: NoteType
    content: str
    confidence: float = Field(ge=0.0, le=1.0)

    @field_validator("type", mode="before")
    @classmethod
    def _type_name(cls, value: Any) -> Any:
        # "preference" names the Preference type; anything else fails the enum
        if isinstance(value, str):
            wanted = value.strip().lower()
            return next((t for t in NOTE_TYPES if t.lower() == wanted), value)
        return value


class NoteQuotes(_Reply):
    """A model's evidence from one note of a cluster: verbatim quotes of its subject and its value."""

    id: str
    subject: str = ""
    value: str = ""


class ConsolidationReply(_Reply):
    """Answer to prompts/consolidate-notes.md. `quotes`: one entry per note the merge replaces (DESIGN 4)."""

    quotes: list[NoteQuotes] = Field(default_factory=list)
    shouldConsolidate: bool
    consolidatedNote: Optional[ConsolidatedNote] = None
    sourceNoteIds: list[str] = Field(default_factory=list)
    reason: str = ""


class ContradictionReply(_Reply):
    """Answer to prompts/detect-contradictions.md: one verdict, "none" when the notes are compatible.

    Without `verdict`, the two-field form (`isContradiction` + `contradictionType`) of the offline
    provider and cached verdicts is read; fields that disagree make the reply invalid.
    """

    #: verbatim quotes from note A (the first) and note B: the subject each is about, the value each states
    subjectA: str = ""
    valueA: str = ""
    subjectB: str = ""
    valueB: str = ""
    verdict: Verdict
    reason: str = ""
    confidence: float = Field(ge=0.0, le=1.0)
    #: the offline rules found a conflict but no rule says the value is single (or it is a number):
    #: a person settles it. Not part of the schema an LLM is asked for.
    review: SkipJsonSchema[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _two_field_form(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "verdict" in data or "isContradiction" not in data:
            return data
        flag, kind = data.get("isContradiction"), data.get("contradictionType", "none")
        if not isinstance(flag, bool):
            raise ValueError("isContradiction must be true or false")
        if flag == (kind == "none"):
            raise ValueError(f"isContradiction {str(flag).lower()} does not match contradictionType {kind!r}")
        rest = {k: v for k, v in data.items() if k not in ("isContradiction", "contradictionType")}
        return {**rest, "verdict": kind}

    @property
    def isContradiction(self) -> bool:  # noqa: N802 - the reply's JSON vocabulary
        return self.verdict != "none"

    @property
    def contradictionType(self) -> str:  # noqa: N802
        return self.verdict


class AbsorptionReply(_Reply):
    """Answer to prompts/absorb-note.md: does the broader note state every fact of the narrower one."""

    subjectBroader: str = ""
    valueBroader: str = ""
    subjectNarrower: str = ""
    valueNarrower: str = ""
    isCovered: bool
    reason: str = ""
    confidence: float = Field(ge=0.0, le=1.0)


# --- several questions in one request (questions_per_call) ------------------------------------


class BatchReply(_Reply):
    """What a reply to several questions is parsed into first: a list, each entry checked on its own.

    An entry is one question's reply plus `item` (its number, from 1). The envelope is lenient so
    that one bad entry invalidates only its own question.
    """

    answers: list[Any]


class _ItemNumber(BaseModel):
    item: int


def _batch(reply: type[_Reply]) -> type[_Reply]:
    """Return the schema sent with a request of several `reply` questions (parsed as BatchReply).

    Its `answers` are `reply`s plus their `item` number; the class names (ContradictionItem...) are sent in its $defs.
    """
    kind = reply.__name__.removesuffix("Reply")
    item = type(f"{kind}Item", (reply, _ItemNumber), {"__module__": __name__})
    return create_model(f"{kind}Batch", __base__=_Reply, __module__=__name__, answers=(list[item], ...))


ConsolidationBatch = _batch(ConsolidationReply)
ContradictionBatch = _batch(ContradictionReply)
AbsorptionBatch = _batch(AbsorptionReply)
