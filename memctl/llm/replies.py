"""Pydantic models of the JSON replies memctl asks an LLM (or the offline provider) for.

Replies are untrusted input: they are parsed strictly here, and checked against the
cluster or pair they answer for by the phase that asked.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

NOTE_TYPES = ("Preference", "Constraint", "Context", "Example", "Issue")


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=False)


class ConsolidatedNote(_Reply):
    type: str
    content: str
    confidence: float = Field(ge=0.0, le=1.0)


class ConsolidationReply(_Reply):
    """Answer to prompts/consolidate-notes.md."""

    shouldConsolidate: bool
    consolidatedNote: Optional[ConsolidatedNote] = None
    sourceNoteIds: list[str] = Field(default_factory=list)
    reason: str = ""


class ContradictionReply(_Reply):
    """Answer to prompts/detect-contradictions.md."""

    isContradiction: bool
    contradictionType: Literal["competing_value", "negation", "temporal_supersession", "none"] = "none"
    reason: str = ""
    confidence: float = Field(ge=0.0, le=1.0)


class AbsorptionReply(_Reply):
    """Answer to prompts/absorb-note.md: does the broader note state every fact of the narrower one."""

    isCovered: bool
    reason: str = ""
    confidence: float = Field(ge=0.0, le=1.0)
