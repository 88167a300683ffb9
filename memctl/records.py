"""Plain, immutable views of store rows that the phases and providers work on.

The phases never hand ORM objects to providers (embedders, judges, the similarity engine):
they pass these frozen records, so that planning is a pure function of loaded data.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Optional

PartitionKey = tuple[Optional[str], Optional[str], Optional[str], Optional[str], Optional[str], Optional[str]]


@dataclass(frozen=True)
class NoteRecord:
    """One AIAgentNote row as the maintenance phases see it."""

    id: str
    agent_id: Optional[str]
    company_id: Optional[str]
    user_id: Optional[str]
    primary_scope_entity_id: Optional[str]
    primary_scope_record_id: Optional[str]
    secondary_scopes: Optional[str]
    type: str
    note: str
    is_auto_generated: bool
    status: str
    protection_tier: str
    access_count: int
    last_accessed_at: Optional[datetime]
    created_at: datetime
    updated_at: datetime
    expires_at: Optional[datetime] = None
    consolidation_count: int = 0
    embedding_vector: Optional[str] = None
    embedding_model_id: Optional[str] = None
    source_conversation_id: Optional[str] = None
