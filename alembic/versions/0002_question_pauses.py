"""Pause a question whose reply was unusable: memctl_pause (issue 28).

A judge that answers, but not usably (not the schema, cut off, a copy of the prompt's example or
of its input), gets the same question again on a later night with a growing pause, not every
night. One row per question (the verdict-cache key): how many unusable replies in a row, when
the last came, when the question may be asked again, and why the reply was not used.

Only memctl's own table is created; on a MemberJunction database nothing of MJ's is touched.
With an inspector of the target (`config.attributes["inspector"]`, `db upgrade --sql` against a
live database) or online, a table that already exists is left as it is.

This file is a frozen snapshot: it does not import memctl's table definitions.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04
"""

from __future__ import annotations

from typing import Optional

import sqlalchemy as sa
from alembic import context, op

from memctl.store.models import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLE = "memctl_pause"


def _schema() -> Optional[str]:
    return op.get_context().version_table_schema


def upgrade() -> None:
    schema = _schema()
    inspector = context.config.attributes.get("inspector")
    if inspector is None and not context.is_offline_mode():
        inspector = sa.inspect(op.get_bind())
    if inspector is not None and TABLE in inspector.get_table_names(schema=schema):
        return
    op.create_table(
        TABLE,
        sa.Column("CacheKey", sa.Unicode(64), primary_key=True),
        sa.Column("Kind", sa.Unicode(32), nullable=False),
        sa.Column("Model", sa.Unicode(255), nullable=False),
        sa.Column("Unusable", sa.Integer(), nullable=False),
        sa.Column("LastAt", UTCDateTime(), nullable=False),
        sa.Column("AskAgainAt", UTCDateTime(), nullable=False),
        sa.Column("Reason", sa.UnicodeText(), nullable=True),
        schema=schema,
    )


def downgrade() -> None:
    op.drop_table(TABLE, schema=_schema())
