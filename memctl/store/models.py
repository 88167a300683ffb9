"""The store's tables, with MemberJunction's exact table and column names.

Tables are SQLAlchemy Core objects on a schema-less MetaData; the configured schema (for example
MJ's `__mj`) is applied per engine with `schema_translate_map`, so one set of definitions serves
SQLite (no schema), PostgreSQL and SQL Server. Alembic migrations in `alembic/versions` create
exactly these definitions; `tests/test_migrations.py` checks they never drift apart.

No foreign keys run from notes and examples to agents, users, companies or conversations: those
can be deleted or live in another system, which is what the prune phase detects. The only
declared foreign keys are the self-reference ConsolidatedIntoNoteID (FR-050) and the run tables'.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NOTE_STATUSES = ("Active", "Pending", "Revoked", "Archived", "Provisional")
EXAMPLE_STATUSES = ("Active", "Pending", "Revoked", "Archived")
NOTE_TYPES = ("Preference", "Constraint", "Context", "Example", "Issue")
PROTECTION_TIERS = ("Immutable", "Protected", "Standard", "Ephemeral")
AGENT_STATUSES = ("Active", "Disabled", "Pending")
RUN_STATUSES = ("Running", "Completed", "Failed", "Cancelled")
STEP_TYPES = ("Decision", "Prompt", "Validation")

# The row of AIAgent that owns memctl's own AIAgentRun records.
MEMCTL_AGENT_ID = "6d656d63-746c-4000-8000-000000000001"
MEMCTL_AGENT_NAME = "memctl"


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend.

    PostgreSQL and SQL Server store the offset natively; SQLite stores naive UTC text. Values
    going in must be aware (a naive value is a programming error, never silently local time);
    values coming out are always aware UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Optional[datetime], dialect: Dialect) -> Optional[datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: memctl stores timezone-aware UTC timestamps")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Optional[datetime], dialect: Dialect) -> Optional[datetime]:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def _id(name: str = "ID", **kw: Any) -> sa.Column:
    return sa.Column(name, sa.Uuid(as_uuid=False), **kw)


def _status_check(table: str, values: tuple[str, ...], column: str = "Status") -> sa.CheckConstraint:
    return sa.CheckConstraint(sa.column(column).in_(values), name=f"CK_{table}_{column}")


def _audit() -> list[sa.Column]:
    return [
        sa.Column("__mj_CreatedAt", UTCDateTime(), nullable=False, server_default=sa.func.current_timestamp()),
        sa.Column("__mj_UpdatedAt", UTCDateTime(), nullable=False, server_default=sa.func.current_timestamp()),
    ]


metadata = sa.MetaData()

company = sa.Table(
    "Company",
    metadata,
    _id(primary_key=True),
    sa.Column("Name", sa.Unicode(255), nullable=False),
    *_audit(),
)

user = sa.Table(
    "User",
    metadata,
    _id(primary_key=True),
    sa.Column("Name", sa.Unicode(255), nullable=False),
    sa.Column("Email", sa.Unicode(255), nullable=True),
    sa.Column("IsActive", sa.Boolean(), nullable=False, server_default=sa.true()),
    *_audit(),
)

conversation = sa.Table(
    "Conversation",
    metadata,
    _id(primary_key=True),
    _id("UserID", nullable=True),
    sa.Column("Name", sa.Unicode(255), nullable=True),
    sa.Column("IsArchived", sa.Boolean(), nullable=False, server_default=sa.false()),
    *_audit(),
)

agent = sa.Table(
    "AIAgent",
    metadata,
    _id(primary_key=True),
    sa.Column("Name", sa.Unicode(255), nullable=False),
    sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Active"),
    sa.Column("NoteRetentionDays", sa.Integer(), nullable=True),
    sa.Column("ExampleRetentionDays", sa.Integer(), nullable=True),
    sa.Column("AutoArchiveEnabled", sa.Boolean(), nullable=False, server_default=sa.true()),
    *_audit(),
    _status_check("AIAgent", AGENT_STATUSES),
)

note_type = sa.Table(
    "AIAgentNoteType",
    metadata,
    _id(primary_key=True),
    sa.Column("Name", sa.Unicode(255), nullable=False),
    sa.Column("Priority", sa.Integer(), nullable=True),
    *_audit(),
)

# The MJ v5.26 columns that an older MJ database lacks; `db upgrade` adds them when adopting.
NOTE_V526_COLUMNS = ("ConsolidatedIntoNoteID", "ConsolidationCount", "DerivedFromNoteIDs", "ProtectionTier", "ImportanceScore")

note = sa.Table(
    "AIAgentNote",
    metadata,
    _id(primary_key=True),
    _id("AgentID", nullable=True),
    _id("AgentNoteTypeID", nullable=True),
    sa.Column("Note", sa.UnicodeText(), nullable=True),
    _id("UserID", nullable=True),
    sa.Column("Type", sa.Unicode(20), nullable=False, server_default="Preference"),
    sa.Column("IsAutoGenerated", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("Comments", sa.UnicodeText(), nullable=True),
    sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Active"),
    _id("SourceConversationID", nullable=True),
    _id("SourceConversationDetailID", nullable=True),
    _id("SourceAIAgentRunID", nullable=True),
    _id("CompanyID", nullable=True),
    sa.Column("EmbeddingVector", sa.UnicodeText(), nullable=True),
    _id("EmbeddingModelID", nullable=True),
    _id("PrimaryScopeEntityID", nullable=True),
    sa.Column("PrimaryScopeRecordID", sa.Unicode(100), nullable=True),
    sa.Column("SecondaryScopes", sa.UnicodeText(), nullable=True),
    sa.Column("LastAccessedAt", UTCDateTime(), nullable=True),
    sa.Column("AccessCount", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("ExpiresAt", UTCDateTime(), nullable=True),
    _id("ConsolidatedIntoNoteID", nullable=True),
    sa.Column("ConsolidationCount", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("DerivedFromNoteIDs", sa.UnicodeText(), nullable=True),
    sa.Column("ProtectionTier", sa.Unicode(20), nullable=False, server_default="Standard"),
    sa.Column("ImportanceScore", sa.Numeric(5, 2), nullable=True),
    *_audit(),
    sa.ForeignKeyConstraint(["ConsolidatedIntoNoteID"], ["AIAgentNote.ID"], name="FK_AIAgentNote_ConsolidatedIntoNote"),
    _status_check("AIAgentNote", NOTE_STATUSES),
    _status_check("AIAgentNote", NOTE_TYPES, "Type"),
    _status_check("AIAgentNote", PROTECTION_TIERS, "ProtectionTier"),
    sa.Index("IX_AIAgentNote_Status_AgentID", "Status", "AgentID"),
    sa.Index("IX_AIAgentNote_ConsolidatedIntoNoteID", "ConsolidatedIntoNoteID"),
)

example = sa.Table(
    "AIAgentExample",
    metadata,
    _id(primary_key=True),
    _id("AgentID", nullable=True),
    _id("UserID", nullable=True),
    _id("CompanyID", nullable=True),
    sa.Column("Type", sa.Unicode(20), nullable=False, server_default="Example"),
    sa.Column("ExampleInput", sa.UnicodeText(), nullable=True),
    sa.Column("ExampleOutput", sa.UnicodeText(), nullable=True),
    sa.Column("IsAutoGenerated", sa.Boolean(), nullable=False, server_default=sa.false()),
    sa.Column("SuccessScore", sa.Numeric(5, 2), nullable=True),
    sa.Column("Comments", sa.UnicodeText(), nullable=True),
    sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Active"),
    _id("SourceConversationID", nullable=True),
    _id("SourceConversationDetailID", nullable=True),
    _id("SourceAIAgentRunID", nullable=True),
    sa.Column("EmbeddingVector", sa.UnicodeText(), nullable=True),
    _id("EmbeddingModelID", nullable=True),
    _id("PrimaryScopeEntityID", nullable=True),
    sa.Column("PrimaryScopeRecordID", sa.Unicode(100), nullable=True),
    sa.Column("SecondaryScopes", sa.UnicodeText(), nullable=True),
    sa.Column("LastAccessedAt", UTCDateTime(), nullable=True),
    sa.Column("AccessCount", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("ExpiresAt", UTCDateTime(), nullable=True),
    *_audit(),
    _status_check("AIAgentExample", EXAMPLE_STATUSES),
    sa.Index("IX_AIAgentExample_Status_AgentID", "Status", "AgentID"),
)

run = sa.Table(
    "AIAgentRun",
    metadata,
    _id(primary_key=True),
    _id("AgentID", nullable=False),
    sa.Column("RunName", sa.Unicode(255), nullable=True),
    sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Running"),
    sa.Column("StartedAt", UTCDateTime(), nullable=False),
    sa.Column("CompletedAt", UTCDateTime(), nullable=True),
    sa.Column("Success", sa.Boolean(), nullable=True),
    sa.Column("ErrorMessage", sa.UnicodeText(), nullable=True),
    sa.Column("Message", sa.UnicodeText(), nullable=True),
    sa.Column("Result", sa.UnicodeText(), nullable=True),
    *_audit(),
    _status_check("AIAgentRun", RUN_STATUSES),
    sa.Index("IX_AIAgentRun_AgentID_RunName_Status", "AgentID", "RunName", "Status"),
)

run_step = sa.Table(
    "AIAgentRunStep",
    metadata,
    _id(primary_key=True),
    _id("AgentRunID", nullable=False),
    _id("ParentID", nullable=True),
    sa.Column("StepNumber", sa.Integer(), nullable=False),
    sa.Column("StepType", sa.Unicode(20), nullable=False),
    sa.Column("StepName", sa.Unicode(255), nullable=False),
    sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Running"),
    sa.Column("StartedAt", UTCDateTime(), nullable=False),
    sa.Column("CompletedAt", UTCDateTime(), nullable=True),
    sa.Column("Success", sa.Boolean(), nullable=True),
    sa.Column("ErrorMessage", sa.UnicodeText(), nullable=True),
    sa.Column("InputData", sa.UnicodeText(), nullable=True),
    sa.Column("OutputData", sa.UnicodeText(), nullable=True),
    _id("TargetLogID", nullable=True),
    *_audit(),
    sa.ForeignKeyConstraint(["AgentRunID"], ["AIAgentRun.ID"], name="FK_AIAgentRunStep_AgentRun"),
    sa.ForeignKeyConstraint(["ParentID"], ["AIAgentRunStep.ID"], name="FK_AIAgentRunStep_Parent"),
    _status_check("AIAgentRunStep", RUN_STATUSES),
    _status_check("AIAgentRunStep", STEP_TYPES, "StepType"),
    sa.Index("IX_AIAgentRunStep_AgentRunID", "AgentRunID"),
)

# --- memctl's own tables -------------------------------------------------------------------

change = sa.Table(
    "memctl_change",
    metadata,
    sa.Column("ID", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    _id("RunID", nullable=False),
    _id("StepID", nullable=True),
    sa.Column("TableName", sa.Unicode(64), nullable=False),
    _id("RecordID", nullable=False),
    sa.Column("Action", sa.Unicode(32), nullable=False),
    sa.Column("Reason", sa.UnicodeText(), nullable=True),
    sa.Column("Before", sa.UnicodeText(), nullable=True),
    sa.Column("After", sa.UnicodeText(), nullable=True),
    sa.Column("ChangedAt", UTCDateTime(), nullable=False),
    sa.Index("IX_memctl_change_RunID", "RunID"),
    sa.Index("IX_memctl_change_RecordID", "RecordID"),
)

verdict = sa.Table(
    "memctl_verdict",
    metadata,
    sa.Column("CacheKey", sa.Unicode(64), primary_key=True),
    sa.Column("Kind", sa.Unicode(32), nullable=False),
    sa.Column("Model", sa.Unicode(255), nullable=False),
    sa.Column("Reply", sa.UnicodeText(), nullable=False),
    sa.Column("CreatedAt", UTCDateTime(), nullable=False),
)

embedding = sa.Table(
    "memctl_embedding",
    metadata,
    _id("NoteID", primary_key=True),
    sa.Column("Model", sa.Unicode(255), primary_key=True),
    sa.Column("ContentHash", sa.Unicode(64), nullable=False),
    sa.Column("Dim", sa.Integer(), nullable=False),
    sa.Column("Vector", sa.LargeBinary(), nullable=False),
    sa.Column("CreatedAt", UTCDateTime(), nullable=False),
)

lease = sa.Table(
    "memctl_lock",
    metadata,
    sa.Column("Name", sa.Unicode(100), primary_key=True),
    sa.Column("Holder", sa.Unicode(255), nullable=False),
    _id("RunID", nullable=True),
    sa.Column("AcquiredAt", UTCDateTime(), nullable=False),
    sa.Column("ExpiresAt", UTCDateTime(), nullable=False),
)

review = sa.Table(
    "memctl_review",
    metadata,
    _id("ID", primary_key=True),
    _id("NoteAID", nullable=False),
    _id("NoteBID", nullable=False),
    sa.Column("Reason", sa.UnicodeText(), nullable=True),
    sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Open"),
    _id("RunID", nullable=True),
    sa.Column("CreatedAt", UTCDateTime(), nullable=False),
    sa.Column("ResolvedAt", UTCDateTime(), nullable=True),
    _id("KeptNoteID", nullable=True),
    sa.CheckConstraint(sa.column("Status").in_(("Open", "Resolved", "Dismissed")), name="CK_memctl_review_Status"),
    sa.UniqueConstraint("NoteAID", "NoteBID", name="UQ_memctl_review_pair"),
)

pause = sa.Table(
    "memctl_pause",
    metadata,
    sa.Column("CacheKey", sa.Unicode(64), primary_key=True),
    sa.Column("Kind", sa.Unicode(32), nullable=False),
    sa.Column("Model", sa.Unicode(255), nullable=False),
    sa.Column("Unusable", sa.Integer(), nullable=False),
    sa.Column("LastAt", UTCDateTime(), nullable=False),
    sa.Column("AskAgainAt", UTCDateTime(), nullable=False),
    sa.Column("Reason", sa.UnicodeText(), nullable=True),
)

MJ_TABLES = ("Company", "User", "Conversation", "AIAgent", "AIAgentNoteType", "AIAgentNote", "AIAgentExample", "AIAgentRun", "AIAgentRunStep")
MEMCTL_TABLES = ("memctl_change", "memctl_verdict", "memctl_embedding", "memctl_lock", "memctl_review", "memctl_pause")
VERSION_TABLE = "memctl_alembic_version"


def utcnow() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(timezone.utc)
