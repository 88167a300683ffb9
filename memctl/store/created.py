"""What apply adds to a note memctl creates, so MemberJunction can use it like one of its own.

memctl writes what MJ's entity layer would fill: SourceAIAgentRunID (the applying run, not the
plan's) and, where the table has the columns, 'MemoryManager' as author and EmbeddingVectorBinary.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from memctl.store import models as m
from memctl.store.live import live_table

AUTHOR_TYPE = "MemoryManager"
#: MJ's author column: its PostgreSQL conversion's name, then its SQL Server migration's
AUTHOR_COLUMNS = ("AuthorType", "AuthoredBy")
#: columns apply sets on a created note (a plan never decides them)
FILLED_AT_APPLY = ("SourceAIAgentRunID", *AUTHOR_COLUMNS, "EmbeddingVectorBinary")


def binary_vector(vector_text: str) -> bytes:
    """Return an EmbeddingVector (JSON text) as MJ's EmbeddingVectorBinary bytes (little-endian float32, no header)."""
    return np.asarray(json.loads(vector_text), dtype="<f4").tobytes()


def vector_from_binary(blob: bytes) -> list[float]:
    return np.frombuffer(blob, dtype="<f4").astype(float).tolist()


def created_note(conn: Connection, values: Mapping[str, Any], run_id: str) -> tuple[sa.Table, dict[str, Any]]:
    """Return the table to insert a created note into and the full row: `values` plus what apply fills."""
    table = live_table(conn, m.note)
    row = {k: v for k, v in values.items() if k not in FILLED_AT_APPLY}
    row["SourceAIAgentRunID"] = run_id
    for column in AUTHOR_COLUMNS:
        if column in table.c:
            row[column] = AUTHOR_TYPE
    if "EmbeddingVectorBinary" in table.c and row.get("EmbeddingVector"):
        row["EmbeddingVectorBinary"] = binary_vector(row["EmbeddingVector"])
    return table, row


def loggable(row: Mapping[str, Any]) -> dict[str, Any]:
    """Return `row` without its binary values (the change log is JSON; the binary vector is derived)."""
    return {k: v for k, v in row.items() if not isinstance(v, (bytes, bytearray, memoryview))}
