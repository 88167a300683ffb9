"""The kinds of record a transfer file holds, the table each is, and the declared self-references."""

from __future__ import annotations

import sqlalchemy as sa

from memctl.store import models

KINDS: dict[str, sa.Table] = {
    "company": models.company,
    "user": models.user,
    "conversation": models.conversation,
    "agent": models.agent,
    "note_type": models.note_type,
    "note": models.note,
    "example": models.example,
    "run": models.run,
    "run_step": models.run_step,
}

# Declared self-references: inserted parents first, and a row may not point at itself.
SELF_REFERENCES = {"note": "ConsolidatedIntoNoteID", "run_step": "ParentID"}
