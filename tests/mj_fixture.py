"""A MemberJunction database for tests, built the way MJ's own migrations build it.

Two versions:
- ``"newest"``: MJ v6.2 (the consolidation columns of v5.26, the in-flight memory-write columns,
  EmbeddingVectorBinary of v6.2).
- ``"older"``: MJ after v3.3 and before v5.26: the lifecycle columns (LastAccessedAt, AccessCount,
  ExpiresAt, retention settings) but none of the v5.26 / v6.2 columns.

Only the columns memctl reads or writes are declared, plus every NOT NULL column MJ has on these
tables (with MJ's default), so a row memctl writes meets the same constraints it would on MJ.
What each part follows (paths in the MemberJunction/MJ repository):

- Base tables, value lists, defaults, NOT NULL: the CodeGen'd entity classes
  ``packages/MJCoreEntities/src/generated/entity_subclasses.ts`` (the zod schemas, read at commit
  002a732f; Company, User, Conversation, AIAgentRun, AIAgentRunStep, AIAgentExample checked column by
  column) and the v2 agent-memory migration
  ``migrations/v2/V202510270900__v2.112.x__Agent_Memory_Complete_Schema.sql`` (EmbeddingVector,
  EmbeddingModelID, AIAgent.IsRestricted BIT NOT NULL DEFAULT 0).
- AIAgentRun / AIAgentRunStep DDL (named CHECKs, FKs with their ON DELETE):
  ``migrations/v2/V202506051300__v2.45.x__AI_Agent_Type_And_Run.sql``; StepType NOT NULL DEFAULT 'Prompt'
  and its CHECK: ``migrations/v2/V202506280858__v2.61.x_AIAgent_Execution_Tracking_Enhancements.sql``, its
  value list as widened by the v2.111.x (ForEach, While), v5.35.x (Tool) and v5.44.x (Plan, Skill)
  migrations. Details and what stays unverified at each table below.
- Lifecycle columns, the dropped note Status check CK_AIAgentNote_Status ('Archived' is only
  metadata there, for notes and examples alike) and the filtered lifecycle indexes
  IX_AIAgentNote_Lifecycle, IX_AIAgentExample_Lifecycle, IX_AIAgentNote_ExpiresAt,
  IX_AIAgentExample_ExpiresAt:
  ``migrations/v3/V202601251751__v3.3.x__Add_Agent_Memory_Lifecycle_Fields.sql``.
- ConsolidatedIntoNoteID (self-FK + FK index), ConsolidationCount, DerivedFromNoteIDs,
  ProtectionTier (default 'Standard', CHECK), ImportanceScore DECIMAL(5,2), AIAgentRun.CompanyID:
  the v5.26 "Memory Consolidation Schema Enhancement" migration (PostgreSQL conversion read).
- The note author column ('Agent','MemoryManager','User', default 'MemoryManager'),
  AIAgent.AllowMemoryWrite (BIT NOT NULL DEFAULT 0; MJ names its SQL Server defaults
  DF_..., the rendering here leaves them unnamed), the note Status
  check CK_AIAgentNote_Status ('Active','Pending','Revoked','Archived','Provisional'): the "Agent
  In-Flight Memory Writes" migration. Its SQL Server text names the author column `AuthoredBy`
  (DF_AIAgentNote_AuthoredBy, CK_AIAgentNote_AuthoredBy); its PostgreSQL conversion names it
  `AuthorType` (../shared/mj/SOURCES.md). The fixture follows each dialect's name.
- EmbeddingVectorBinary (BYTEA / VARBINARY(MAX)) on notes and examples, the FK indexes, the
  per-table update trigger: ``V202610061614__v6.2.x__Binary_Vector_Columns`` (SQL Server and
  ``.pg.sql`` variants). On SQL Server the indexes are ``IDX_AUTO_MJ_FKEY_<Table>_<Column>`` and
  the trigger ``trgUpdate<Table>`` (AFTER UPDATE, joins INSERTED, sets GETUTCDATE()); on
  PostgreSQL v6.2's CodeGen names them ``idx_auto_mj_fkey_<table>_<column>`` (snake case) with a
  BEFORE UPDATE trigger ``trg_update_<table>`` calling ``fn_trg_update_<table>()``, while the
  earlier PostgreSQL migrations used the SQL Server names, which the older version keeps.

Foreign keys to MJ tables this fixture leaves out (AIModel, Entity, ConversationDetail,
Environment) are not declared; their FK indexes are, as MJ has them.

The example Status CHECK allows no 'Archived' in either version (MJ added it as metadata only),
which is what memctl must live with. No MJ migration declaring that CHECK was found; it is inferred
from the CodeGen'd value list (see the AIAgentExample table below).
"""

from __future__ import annotations

import re
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, postgresql
from sqlalchemy.engine import Engine
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.sql.functions import FunctionElement

VERSIONS = ("newest", "older")
MJ_TABLES = ("Company", "User", "Conversation", "AIAgent", "AIAgentNoteType", "AIAgentRun", "AIAgentRunStep", "AIAgentNote", "AIAgentExample")

# Columns the newest version has and the older one lacks, per table.
NEWEST_ONLY = {
    "AIAgent": ("AllowMemoryWrite",),
    "AIAgentRun": ("CompanyID",),
    "AIAgentNote": (
        "ConsolidatedIntoNoteID", "ConsolidationCount", "DerivedFromNoteIDs", "ProtectionTier", "ImportanceScore",
        "AuthorType", "AuthoredBy", "EmbeddingVectorBinary",
    ),
    "AIAgentExample": ("EmbeddingVectorBinary",),
}


def _dialect_default(name: str, kind: sa.types.TypeEngine, mssql: str, other: str) -> type[FunctionElement]:  # type: ignore[type-arg]
    """A server default spelled `mssql` on SQL Server and `other` elsewhere (PostgreSQL)."""
    element = type(name, (FunctionElement,), {"type": kind, "inherit_cache": True})
    compiles(element, "mssql")(lambda element, compiler, **kw: mssql)
    compiles(element)(lambda element, compiler, **kw: other)
    return element


# MJ's timestamp default and key default
_utcnow = _dialect_default("_utcnow", sa.DateTime(timezone=True), "GETUTCDATE()", "NOW()")
_newid = _dialect_default("_newid", sa.Uuid(), "NEWSEQUENTIALID()", "gen_random_uuid()")


def snake(name: str) -> str:
    """Return MJ's PostgreSQL CodeGen spelling of a PascalCase name (AIAgentNote -> ai_agent_note)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _pk() -> sa.Column:
    return sa.Column("ID", sa.Uuid(as_uuid=False), primary_key=True, server_default=_newid())


def _uuid(name: str, nullable: bool = True, **kw) -> sa.Column:  # type: ignore[no-untyped-def]
    return sa.Column(name, sa.Uuid(as_uuid=False), nullable=nullable, **kw)


def _text(name: str, nullable: bool = True) -> sa.Column:
    return sa.Column(name, sa.UnicodeText(), nullable=nullable)


def _when(name: str, nullable: bool = True, default: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable, server_default=_utcnow() if default else None)


def _flag(name: str, default: bool) -> sa.Column:
    return sa.Column(name, sa.Boolean(), nullable=False, server_default=sa.true() if default else sa.false())


def _int(name: str, default: int | None = None, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.Integer(), nullable=nullable, server_default=None if default is None else sa.text(str(default)))


def _choice(name: str, length: int, values: tuple[str, ...], default: str | None, nullable: bool = False, check_name: str | None = None) -> sa.Column:
    """A string column with MJ's CHECK (column IN (...)) and default; the check is unnamed unless MJ names it."""
    return sa.Column(
        name, sa.Unicode(length), nullable=nullable, server_default=default, info={"check": sa.column(name).in_(values), "check_name": check_name}
    )


def _audit() -> list[sa.Column]:
    # MJ's CodeGen adds both to every table: DATETIMEOFFSET / TIMESTAMPTZ NOT NULL DEFAULT GETUTCDATE() / NOW().
    return [_when("__mj_CreatedAt", nullable=False, default=True), _when("__mj_UpdatedAt", nullable=False, default=True)]


def _fk(column: str, table: str, schema: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{schema}.{table}.ID"])


def build_metadata(schema: str, version: str = "newest", dialect: str = "postgresql") -> tuple[sa.MetaData, dict[str, list[str]]]:
    """Return MJ's tables in `schema` at `version` as MJ builds them on `dialect`, and each table's FK-indexed columns."""
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {VERSIONS}, got {version!r}")
    newest = version == "newest"
    md = sa.MetaData(schema=schema)
    indexed: dict[str, list[str]] = {}

    def table(name: str, *items, fk_columns: tuple[str, ...] = ()) -> None:  # type: ignore[no-untyped-def]
        keep = [i for i in items if newest or not (isinstance(i, sa.Column) and i.name in NEWEST_ONLY.get(name, ()))]
        keep = [i for i in keep if newest or not (isinstance(i, sa.ForeignKeyConstraint) and set(i.column_keys) & set(NEWEST_ONLY.get(name, ())))]
        # Unnamed, as MJ declares them: the database names each check (PostgreSQL: <table>_<column>_check).
        checks = [sa.CheckConstraint(i.info["check"], name=i.info.get("check_name")) for i in keep if isinstance(i, sa.Column) and "check" in i.info]
        sa.Table(name, md, *keep, *_audit(), *checks)
        indexed[name] = [c for c in fk_columns if newest or c not in NEWEST_ONLY.get(name, ())]

    # entity_subclasses.ts, MJCompanySchema (commit 002a732f), checked: Name nvarchar(50) and Description
    # nvarchar(200) NOT NULL with no defaults, Website nvarchar(100), Domain nvarchar(255) nullable.
    table(
        "Company",
        _pk(),
        sa.Column("Name", sa.Unicode(50), nullable=False),
        sa.Column("Description", sa.Unicode(200), nullable=False),
        sa.Column("Website", sa.Unicode(100)),
        sa.Column("Domain", sa.Unicode(255)),
    )
    # entity_subclasses.ts, MJUserSchema (commit 002a732f): Name nvarchar(100) and Email nvarchar(100)
    # NOT NULL, no defaults; Type nchar(15) NOT NULL with no default and the value list ('Owner','User')
    # (MJ's CodeGen builds value lists from CHECK constraints; the CHECK's name is not in that file, so it
    # is left unnamed); IsActive bit NOT NULL DEFAULT 0; LinkedRecordType nchar(10) NOT NULL DEFAULT 'None'
    # with NO value list, so no CHECK (the earlier fixture's ('Employee','None','Other') check was invented).
    table(
        "User",
        _pk(),
        sa.Column("Name", sa.Unicode(100), nullable=False),
        sa.Column("FirstName", sa.Unicode(50)),
        sa.Column("LastName", sa.Unicode(50)),
        sa.Column("Email", sa.Unicode(100), nullable=False),
        sa.Column("Type", sa.NCHAR(15), nullable=False, info={"check": sa.column("Type").in_(("Owner", "User")), "check_name": None}),
        _flag("IsActive", False),
        sa.Column("LinkedRecordType", sa.NCHAR(10), nullable=False, server_default="None"),
    )
    # entity_subclasses.ts, MJConversationSchema (commit 002a732f), checked column by column: UserID NOT
    # NULL (FK User), Type nvarchar(50) NOT NULL DEFAULT 'Skip', Status nvarchar(20) NOT NULL DEFAULT
    # 'Available' with the value list ('Available','Processing'), EnvironmentID NOT NULL DEFAULT
    # F51358F3-9447-4176-B313-BF8025FD8D09 (FK Environment, not declared here), IsArchived / IsPinned bit
    # NOT NULL DEFAULT 0.
    table(
        "Conversation",
        _pk(),
        _uuid("UserID", nullable=False),
        sa.Column("ExternalID", sa.Unicode(500)),
        sa.Column("Name", sa.Unicode(255)),
        _text("Description"),
        sa.Column("Type", sa.Unicode(50), nullable=False, server_default="Skip"),
        _flag("IsArchived", False),
        _choice("Status", 20, ("Available", "Processing"), "Available"),
        _uuid("EnvironmentID", nullable=False, server_default=sa.text("'f51358f3-9447-4176-b313-bf8025fd8d09'")),
        _flag("IsPinned", False),
        _fk("UserID", "User", schema),
        fk_columns=("UserID", "EnvironmentID"),
    )
    # entity_subclasses.ts, AIAgentEntity (+ IsRestricted from v2.112, retention from v3.3,
    # AllowMemoryWrite from the in-flight memory-write migration).
    table(
        "AIAgent",
        _pk(),
        sa.Column("Name", sa.Unicode(255), nullable=False),
        _text("Description"),
        _uuid("ParentID"),
        _flag("ExposeAsAction", False),
        _int("ExecutionOrder", 0),
        _choice("ExecutionMode", 20, ("Parallel", "Sequential"), "Sequential"),
        _flag("EnableContextCompression", False),
        _choice("Status", 20, ("Active", "Disabled", "Pending"), "Pending"),
        _flag("IsRestricted", False),
        _flag("InjectNotes", True),
        _int("MaxNotesToInject", 5),
        _choice("NoteInjectionStrategy", 20, ("All", "Recent", "Relevant"), "Relevant"),
        _flag("InjectExamples", True),
        _int("MaxExamplesToInject", 3),
        _choice("ExampleInjectionStrategy", 20, ("Recent", "Rated", "Semantic"), "Semantic"),
        _int("NoteRetentionDays", 90, nullable=True),
        _int("ExampleRetentionDays", 180, nullable=True),
        _flag("AutoArchiveEnabled", True),
        _flag("AllowMemoryWrite", False),
        _fk("ParentID", "AIAgent", schema),
        fk_columns=("ParentID",),
    )
    # entity_subclasses.ts, AIAgentNoteTypeEntity.
    table(
        "AIAgentNoteType",
        _pk(),
        sa.Column("Name", sa.Unicode(255), nullable=False),
        _text("Description"),
        _int("Priority", 0),
    )
    # AIAgentRun. Base DDL: migrations/v2/V202506051300__v2.45.x__AI_Agent_Type_And_Run.sql (CREATE TABLE:
    # AgentID NOT NULL, Status nvarchar(50) NOT NULL DEFAULT 'Running', StartedAt NOT NULL DEFAULT
    # sysdatetimeoffset(), TotalTokensUsed DEFAULT 0, TotalCost decimal(18,6) DEFAULT 0, the named FKs with
    # ON DELETE SET NULL on ConversationID and UserID, and CK_AIAgentRun_Status ('Running', 'Completed',
    # 'Paused', 'Failed', 'Cancelled')). The CodeGen'd value list in entity_subclasses.ts (MJAIAgentRunSchema,
    # commit 002a732f) also has 'AwaitingFeedback'; the migration that widened the CHECK for it was not found,
    # so the fixture keeps the CHECK text the v2.45 file states (memctl writes Running / Completed / Failed /
    # Cancelled, which both lists allow). TotalPromptIterations int NOT NULL DEFAULT 0, RunName, Message:
    # entity_subclasses.ts. CompanyID: the v5.26 consolidation migration (FK name not known: unnamed).
    table(
        "AIAgentRun",
        _pk(),
        _uuid("AgentID", nullable=False),
        _uuid("ParentRunID"),
        _choice("Status", 50, ("Running", "Completed", "Paused", "Failed", "Cancelled"), "Running", check_name="CK_AIAgentRun_Status"),
        _when("StartedAt", nullable=False, default=True),
        _when("CompletedAt"),
        sa.Column("Success", sa.Boolean()),
        _text("ErrorMessage"),
        _uuid("ConversationID"),
        _uuid("UserID"),
        _text("Result"),
        _text("AgentState"),
        _int("TotalTokensUsed", 0, nullable=True),
        sa.Column("TotalCost", sa.Numeric(18, 6), server_default=sa.text("0")),
        _int("TotalPromptIterations", 0),
        sa.Column("RunName", sa.Unicode(255)),
        _text("Message"),
        _uuid("CompanyID"),
        sa.ForeignKeyConstraint(["AgentID"], [f"{schema}.AIAgent.ID"], name="FK_AIAgentRun_AgentID"),
        sa.ForeignKeyConstraint(["ParentRunID"], [f"{schema}.AIAgentRun.ID"], name="FK_AIAgentRun_ParentRunID"),
        sa.ForeignKeyConstraint(["ConversationID"], [f"{schema}.Conversation.ID"], name="FK_AIAgentRun_ConversationID", ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["UserID"], [f"{schema}.User.ID"], name="FK_AIAgentRun_UserID", ondelete="SET NULL"),
        _fk("CompanyID", "Company", schema),
        fk_columns=("AgentID", "ParentRunID", "ConversationID", "UserID", "CompanyID"),
    )
    # AIAgentRunStep. Base DDL: the same v2.45 file (AgentRunID NOT NULL with FK_AIAgentRunStep_AgentRunID
    # ON DELETE CASCADE, StepNumber int NOT NULL with CK_AIAgentRunStep_StepNumber (StepNumber > 0), StepName
    # nvarchar(255) NOT NULL, Status nvarchar(50) NOT NULL DEFAULT 'Running' with CK_AIAgentRunStep_Status
    # ('Running', 'Completed', 'Failed', 'Cancelled')). StepType: made NOT NULL with DEFAULT 'Prompt' and
    # CK_AIAgentRunStep_StepType by migrations/v2/V202506280858__v2.61.x_AIAgent_Execution_Tracking_Enhancements.sql;
    # its value list as re-created by the v2.111.x "Add ForEach and While to AIAgentRunStep.StepType" migration
    # (the older version), then by the v5.35.x "Add 'Tool' StepType" and v5.44.x "Agent Skills + Plan Mode"
    # migrations (the newest: + 'Tool', 'Plan', 'Skill'). A further MJ migration ("Agent Conversation Compaction")
    # re-creates the CHECK with 'Compaction' and without 'Plan' / 'Skill'; its version and order relative to
    # v5.44 were not found, so the fixture follows v5.44. memctl writes 'Prompt', 'Decision', 'Validation',
    # allowed by every one of these lists. ParentID (FK to AIAgentRunStep), TargetLogID, Comments:
    # entity_subclasses.ts (MJAIAgentRunStepSchema); the ParentID FK's name is not known (unnamed).
    step_types = ("Prompt", "Actions", "Sub-Agent", "Chat", "Decision", "Validation", "ForEach", "While")
    if newest:
        step_types += ("Tool", "Plan", "Skill")
    table(
        "AIAgentRunStep",
        _pk(),
        _uuid("AgentRunID", nullable=False),
        _int("StepNumber"),
        _choice("StepType", 50, step_types, "Prompt", check_name="CK_AIAgentRunStep_StepType"),
        sa.Column("StepName", sa.Unicode(255), nullable=False),
        _uuid("TargetID"),
        _choice("Status", 50, ("Running", "Completed", "Failed", "Cancelled"), "Running", check_name="CK_AIAgentRunStep_Status"),
        _when("StartedAt", nullable=False, default=True),
        _when("CompletedAt"),
        sa.Column("Success", sa.Boolean()),
        _text("ErrorMessage"),
        _text("InputData"),
        _text("OutputData"),
        _uuid("TargetLogID"),
        _uuid("ParentID"),
        _text("Comments"),
        sa.CheckConstraint(sa.column("StepNumber") > 0, name="CK_AIAgentRunStep_StepNumber"),
        sa.ForeignKeyConstraint(["AgentRunID"], [f"{schema}.AIAgentRun.ID"], name="FK_AIAgentRunStep_AgentRunID", ondelete="CASCADE"),
        _fk("ParentID", "AIAgentRunStep", schema),
        fk_columns=("AgentRunID", "ParentID"),
    )
    note_statuses = ("Active", "Pending", "Revoked", "Archived", "Provisional")
    table(
        "AIAgentNote",
        _pk(),
        _uuid("AgentID"),
        _uuid("AgentNoteTypeID"),
        _text("Note"),
        _uuid("UserID"),
        _choice("Type", 20, ("Preference", "Constraint", "Context", "Example", "Issue"), "Preference"),
        _flag("IsAutoGenerated", False),
        _text("Comments"),
        # v3.3 dropped the note Status CHECK ('Archived' became metadata only); the in-flight
        # memory-write migration put one back that allows 'Archived' and 'Provisional'.
        _choice("Status", 20, note_statuses, "Active", check_name="CK_AIAgentNote_Status") if newest else sa.Column("Status", sa.Unicode(20), nullable=False, server_default="Active"),
        _uuid("SourceConversationID"),
        _uuid("SourceConversationDetailID"),
        _uuid("SourceAIAgentRunID"),
        _uuid("CompanyID"),
        _text("EmbeddingVector"),
        _uuid("EmbeddingModelID"),
        _uuid("PrimaryScopeEntityID"),
        sa.Column("PrimaryScopeRecordID", sa.Unicode(100)),
        _text("SecondaryScopes"),
        _when("LastAccessedAt"),
        _int("AccessCount", 0),
        _when("ExpiresAt"),
        _uuid("ConsolidatedIntoNoteID"),
        _int("ConsolidationCount", 0),
        _text("DerivedFromNoteIDs"),
        _choice("ProtectionTier", 20, ("Immutable", "Protected", "Standard", "Ephemeral"), "Standard"),
        sa.Column("ImportanceScore", sa.Numeric(5, 2)),
        _choice("AuthoredBy", 20, ("Agent", "MemoryManager", "User"), "MemoryManager", check_name="CK_AIAgentNote_AuthoredBy")
        if dialect == "mssql"
        else _choice("AuthorType", 20, ("Agent", "MemoryManager", "User"), "MemoryManager"),
        sa.Column("EmbeddingVectorBinary", sa.LargeBinary()),
        _fk("AgentID", "AIAgent", schema),
        _fk("AgentNoteTypeID", "AIAgentNoteType", schema),
        _fk("UserID", "User", schema),
        _fk("SourceConversationID", "Conversation", schema),
        _fk("SourceAIAgentRunID", "AIAgentRun", schema),
        _fk("CompanyID", "Company", schema),
        _fk("ConsolidatedIntoNoteID", "AIAgentNote", schema),
        fk_columns=(
            "AgentID", "AgentNoteTypeID", "UserID", "SourceConversationID", "SourceConversationDetailID", "SourceAIAgentRunID",
            "CompanyID", "EmbeddingModelID", "PrimaryScopeEntityID", "ConsolidatedIntoNoteID",
        ),
    )
    table(
        "AIAgentExample",
        _pk(),
        _uuid("AgentID", nullable=False),
        _uuid("UserID"),
        _uuid("CompanyID"),
        # entity_subclasses.ts, MJAIAgentExampleSchema (commit 002a732f): Type's value list is the note's
        # ('Constraint','Context','Example','Issue','Preference'), default 'Example' (the earlier fixture's
        # ('Example','Counter-Example','Edge-Case') was invented).
        _choice("Type", 20, ("Preference", "Constraint", "Context", "Example", "Issue"), "Example"),
        _text("ExampleInput", nullable=False),
        _text("ExampleOutput", nullable=False),
        _flag("IsAutoGenerated", False),
        _uuid("SourceConversationID"),
        _uuid("SourceConversationDetailID"),
        _uuid("SourceAIAgentRunID"),
        sa.Column("SuccessScore", sa.Numeric(5, 2), info={"check": sa.column("SuccessScore").between(0, 100)}),
        _text("Comments"),
        # No MJ migration text declaring a Status CHECK on AIAgentExample was found (searched the index for
        # CK_AIAgentExample*, the table's CREATE TABLE and its value list). The CHECK here is inferred: MJ's
        # CodeGen builds value lists from CHECK constraints, and entity_subclasses.ts (MJAIAgentExampleSchema,
        # commit 002a732f, a post-v3.3 version with LastAccessedAt) lists ('Active','Pending','Revoked') with
        # default 'Active' even though v3.3 inserted 'Archived' as metadata (v3.3 dropped only the note's
        # check). Unnamed, because no name is known. Unverified against MJ's DDL.
        _choice("Status", 20, ("Active", "Pending", "Revoked"), "Active"),
        _text("EmbeddingVector"),
        _uuid("EmbeddingModelID"),
        _uuid("PrimaryScopeEntityID"),
        sa.Column("PrimaryScopeRecordID", sa.Unicode(100)),
        _text("SecondaryScopes"),
        _when("LastAccessedAt"),
        _int("AccessCount", 0),
        _when("ExpiresAt"),
        sa.Column("EmbeddingVectorBinary", sa.LargeBinary()),
        _fk("AgentID", "AIAgent", schema),
        _fk("UserID", "User", schema),
        _fk("CompanyID", "Company", schema),
        _fk("SourceConversationID", "Conversation", schema),
        _fk("SourceAIAgentRunID", "AIAgentRun", schema),
        fk_columns=(
            "AgentID", "UserID", "CompanyID", "SourceConversationID", "SourceConversationDetailID", "SourceAIAgentRunID",
            "EmbeddingModelID", "PrimaryScopeEntityID",
        ),
    )
    for name, columns in indexed.items():
        for column in columns:
            sa.Index(index_name(name, column, version, "postgresql"), md.tables[f"{schema}.{name}"].c[column])
    for name in ("AIAgentNote", "AIAgentExample"):
        t = md.tables[f"{schema}.{name}"]
        active = t.c.Status == sa.literal_column("'Active'")
        lifecycle = sa.and_(active, t.c.IsAutoGenerated == sa.true())
        expiring = sa.and_(t.c.ExpiresAt.is_not(None), active)
        sa.Index(f"IX_{name}_Lifecycle", t.c.Status, t.c.LastAccessedAt, t.c.IsAutoGenerated, postgresql_where=lifecycle, mssql_where=lifecycle)
        sa.Index(f"IX_{name}_ExpiresAt", t.c.ExpiresAt, postgresql_where=expiring, mssql_where=expiring)
    return md, indexed


def index_name(table: str, column: str, version: str, dialect: str) -> str:
    """Return the name MJ's CodeGen gives the index on a foreign-key column."""
    if dialect == "postgresql" and version == "newest":
        return f"idx_auto_mj_fkey_{snake(table)}_{snake(column)}"
    return f"IDX_AUTO_MJ_FKEY_{table}_{column}"


def trigger_sql(dialect: str, schema: str, table: str) -> list[str]:
    """Return MJ's CodeGen trigger that stamps __mj_UpdatedAt on every UPDATE of `table`."""
    if dialect == "mssql":
        return [
            f"""CREATE TRIGGER [{schema}].trgUpdate{table}
ON [{schema}].[{table}]
AFTER UPDATE
AS
BEGIN
    SET NOCOUNT ON;
    UPDATE
        [{schema}].[{table}]
    SET
        __mj_UpdatedAt = GETUTCDATE()
    FROM
        [{schema}].[{table}] AS _organicTable
    INNER JOIN
        INSERTED AS I ON
        _organicTable.[ID] = I.[ID];
END;"""
        ]
    name = snake(table)
    return [
        f"""CREATE OR REPLACE FUNCTION "{schema}"."fn_trg_update_{name}"()
RETURNS TRIGGER AS $$
BEGIN
    NEW."__mj_UpdatedAt" := NOW() AT TIME ZONE 'UTC';
    RETURN NEW;
END;
$$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER "trg_update_{name}"
BEFORE UPDATE ON "{schema}"."{table}"
FOR EACH ROW
EXECUTE FUNCTION "{schema}"."fn_trg_update_{name}"()""",
    ]


def _dialect(name: str) -> sa.engine.Dialect:
    if name == "mssql":
        return mssql.dialect(deprecate_large_types=True)
    if name == "postgresql":
        return postgresql.dialect()
    raise ValueError(f"dialect must be mssql or postgresql, got {name!r}")


def mj_ddl(dialect: str, schema: str, version: str = "newest") -> list[str]:
    """Return the statements that build MJ's agent-memory tables in `schema`, rendered for `dialect`."""
    md, indexed = build_metadata(schema, version, dialect)
    target = _dialect(dialect)
    statements = [f"IF SCHEMA_ID(N'{schema}') IS NULL EXEC(N'CREATE SCHEMA [{schema}]')" if dialect == "mssql" else f'CREATE SCHEMA IF NOT EXISTS "{schema}"']
    for table in md.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=target)).strip())
    for table in md.sorted_tables:
        for index in sorted(table.indexes, key=lambda i: i.name or ""):
            if dialect != "postgresql" and not index.name.startswith("IX_"):
                index.name = index_name(table.name, index.columns[0].name, version, dialect)
            statements.append(str(CreateIndex(index).compile(dialect=target)).strip())
    for name in MJ_TABLES:
        statements.extend(trigger_sql(dialect, schema, name))
    return statements


def mj_database(engine: Engine, schema: str, version: str = "newest") -> None:
    """Create MJ's agent-memory tables (with CHECKs, FKs, FK indexes, defaults, triggers) in `schema`."""
    if engine.dialect.name != "postgresql":
        raise ValueError("the MJ fixture runs on PostgreSQL; render the SQL Server DDL with mj_ddl('mssql', ...)")
    with engine.begin() as conn:
        for statement in mj_ddl("postgresql", schema, version):
            conn.exec_driver_sql(statement)


def catalog(engine: Engine, schema: str, tables: tuple[str, ...] = MJ_TABLES) -> dict[str, dict[str, object]]:
    """Return what PostgreSQL holds for `tables`: columns, constraints (with definitions), indexes, triggers."""
    out: dict[str, dict[str, object]] = {}
    with engine.connect() as conn:
        for name in tables:
            columns = conn.execute(
                sa.text(
                    "SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns "
                    "WHERE table_schema = :s AND table_name = :t ORDER BY column_name"
                ),
                {"s": schema, "t": name},
            ).all()
            constraints = conn.execute(
                sa.text(
                    "SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
                    "JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
                    "WHERE n.nspname = :s AND t.relname = :t ORDER BY 1"
                ),
                {"s": schema, "t": name},
            ).all()
            indexes = conn.execute(
                sa.text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = :s AND tablename = :t ORDER BY 1"),
                {"s": schema, "t": name},
            ).all()
            triggers = conn.execute(
                sa.text(
                    "SELECT tg.tgname, pg_get_triggerdef(tg.oid) FROM pg_trigger tg JOIN pg_class t ON t.oid = tg.tgrelid "
                    "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = :s AND t.relname = :t AND NOT tg.tgisinternal ORDER BY 1"
                ),
                {"s": schema, "t": name},
            ).all()
            out[name] = {
                "columns": {r[0]: tuple(r[1:]) for r in columns},
                "constraints": {r[0]: r[1] for r in constraints},
                "indexes": {r[0]: r[1] for r in indexes},
                "triggers": {r[0]: r[1] for r in triggers},
            }
    return out
