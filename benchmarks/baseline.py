"""A baseline with MemberJunction's cost structure, run on the same corpus and LLM stub as memctl.

The seed spec describes MJ's memory manager doing its work one note at a time; this module does
the same four jobs that way, against the same store schema, the same prompts and the same stub,
so the benchmark can put the two side by side:

- Neighbours, per note: take the note's vector, scan every vector of the store, keep the top 10
  at the threshold. By default the note's stored EmbeddingVector is decoded, which is generous:
  MJ embeds the note's text again. With `embed_sample` = K the baseline also pays that round trip:
  the first K notes of each per-note loop call /v1/embeddings on the same stub (the answer is
  discarded, so the decisions stay those of the stored vectors), and every further note is
  charged the mean measured call time (reported as extrapolated). The store's vectors are decoded once into one matrix (MJ's
  in-memory vector service), which is generous too.
- Consolidate: walk the notes oldest first; a note with at least two free neighbours in its own
  partition (scope-safe, as memctl) forms a cluster with them; one LLM call per cluster,
  sequentially; apply entity by entity (one transaction per saved row, each with a change row).
- Contradictions: the same per-note scan at the contradiction threshold; each unordered pair
  once, one LLM call per pair, sequentially, at most `max_pairs`; the same authority rule as
  memctl (FR-022); the loser saved as one row.
- Prune: per candidate note (oldest first), one query per reference (agent, user, company,
  conversation), no cache; archive each orphan as one row, up to `prune_cap`.
- Archive: per note and per example, one query for its agent's retention settings; archive
  each expired or stale row as one row.

Decisions reuse memctl's own rules (thresholds, authority, expiry and staleness verdicts), so the
two do the same work and only the cost structure differs. With `sample`, the per-note loops stop
after that many notes and every count and time of the loop is scaled to the full size
(reported as extrapolated); use it when a full run would take hours.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.embed import thresholds_for
from memctl.embed.hashing import HashingEmbedder
from memctl.embed.stored import decode_vector, encode_vector
from memctl.llm.factory import make_judge
from memctl.phases.archive import Retention, example_verdict, note_verdict
from memctl.phases.contradictions import authority
from memctl.protection import revocable
from memctl.phases.notes import consolidatable
from memctl.records import NOTE_COLUMNS, NoteRecord, note_record
from memctl.settings import Settings
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.store.changes import append_comment
from memctl.store.engine import read, write

TOP_K = 10


@dataclass
class PhaseResult:
    seconds: float = 0.0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    items: int = 0  # clusters / pairs asked / rows checked
    changed: int = 0
    processed: int = 0  # notes walked by the per-note loop
    total: int = 0  # notes the loop would walk in a full run
    charged_seconds: float = 0.0  # per-note embedding calls not made, at their measured mean
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def scale(self) -> float:
        return self.total / self.processed if self.processed and self.total > self.processed else 1.0

    def as_dict(self) -> dict[str, Any]:
        s = self.scale
        return {
            "seconds": round(self.seconds * s + self.charged_seconds, 3),
            "measuredSeconds": round(self.seconds, 3),
            "chargedSeconds": round(self.charged_seconds, 3),
            "llmCalls": round(self.llm_calls * s),
            "promptTokens": round(self.prompt_tokens * s),
            "completionTokens": round(self.completion_tokens * s),
            "items": round(self.items * s),
            "changed": round(self.changed * s),
            "notesWalked": self.processed,
            "notesTotal": self.total,
            "extrapolated": s > 1.0 or self.charged_seconds > 0,
            **self.extra,
        }


class Baseline:
    """The four maintenance jobs, one note and one LLM call at a time."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        phase: Callable[[str], None] = lambda name: None,
        sample: Optional[int] = None,
        embed_sample: Optional[int] = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.now = settings.current_time()
        self.mark_phase = phase
        self.sample = sample
        self.trusted = settings.stored_model_id
        self.hashing = HashingEmbedder()
        self.judge = make_judge(settings)
        self.run_id = str(uuid.uuid4())
        self.text_embedder = None
        self.embed_sample = embed_sample or 0
        if self.embed_sample:
            from memctl.llm.factory import make_compute_embedder

            self.text_embedder = make_compute_embedder(settings)
        self.embedded: list[float] = []  # seconds of each /v1/embeddings call made this phase
        self.charged = 0  # calls charged at the mean instead of made

    # -- shared pieces --------------------------------------------------------------------
    def _load_notes(self) -> list[dict[str, Any]]:
        t = m.note
        with read(self.engine) as conn:
            return [dict(r) for r in conn.execute(sa.select(*[t.c[c] for _, c in NOTE_COLUMNS]).where(t.c.Status == "Active")).mappings()]

    def _query(self, row: dict[str, Any]) -> np.ndarray:
        """Return the vector a per-note search starts from (paying the text's embedding when asked to)."""
        if self.text_embedder is not None:
            if len(self.embedded) < self.embed_sample:
                started = time.monotonic()
                self.text_embedder.embed([row["Note"] or ""])
                self.embedded.append(time.monotonic() - started)
            else:
                self.charged += 1
        return self._vector(row)

    def _vector(self, row: dict[str, Any]) -> np.ndarray:
        """Return one note's vector: its stored one when the model matches, else its text embedded now."""
        if self.trusted and str(row["EmbeddingModelID"] or "").lower() == self.trusted.lower():
            vector = decode_vector(row["EmbeddingVector"])
            if vector is not None:
                return vector / (np.linalg.norm(vector) or 1.0)
        return self.hashing.embed([row["Note"] or ""])[0]

    def _index(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """Decode every vector once into one matrix (the in-memory vector service)."""
        vectors = [self._vector(r) for r in rows]
        dims = {len(v) for v in vectors}
        if len(dims) > 1:  # a store mixing models: compare everything by text
            vectors = list(self.hashing.embed([r["Note"] or "" for r in rows]))
        return np.vstack(vectors).astype(np.float32) if vectors else np.zeros((0, 1), np.float32)

    def _thresholds(self) -> tuple[float, float]:
        default = thresholds_for("stored") if self.trusted else thresholds_for(self.hashing.name)
        s = self.settings
        return (
            s.consolidate_threshold if s.consolidate_threshold is not None else default[0],
            s.contradiction_threshold if s.contradiction_threshold is not None else default[1],
        )

    def _neighbours(
        self, matrix: np.ndarray, partitions: np.ndarray, i: int, query: np.ndarray, threshold: float, allowed: np.ndarray
    ) -> list[int]:
        """Scan every vector for row i's top 10 at the threshold (same partition, allowed rows only)."""
        sims = matrix @ query.astype(np.float32)
        sims[i] = -np.inf
        sims[(partitions != partitions[i]) | ~allowed] = -np.inf
        top = np.argpartition(-sims, min(TOP_K, len(sims) - 1))[:TOP_K] if len(sims) > TOP_K else np.arange(len(sims))
        top = top[sims[top] >= np.float32(threshold)]
        return top[np.argsort(-sims[top], kind="stable")].tolist()

    def _save(self, table: sa.Table, record_id: str, values: dict[str, Any], comment: str, action: str) -> None:
        """Save one row as an entity layer does: read it, update it, log the change; one transaction."""
        with write(self.engine) as conn:
            row = conn.execute(sa.select(table).where(table.c.ID == record_id)).mappings().first()
            if row is None:
                return
            tag = f"[baseline {self.now.date().isoformat()}]"
            new = {**values, "Comments": append_comment(row["Comments"], f"{tag} {comment}"), "__mj_UpdatedAt": self.now}
            conn.execute(sa.update(table).where(table.c.ID == record_id).values(**new))
            conn.execute(
                m.change.insert().values(
                    RunID=self.run_id,
                    StepID=None,
                    TableName=table.name,
                    RecordID=record_id,
                    Action=action,
                    Reason=comment[:4000],
                    Before=json.dumps({"Status": row["Status"]}),
                    After=json.dumps({"Status": values.get("Status")}),
                    ChangedAt=self.now,
                )
            )

    def _notes_index(self) -> tuple[list[dict[str, Any]], list[NoteRecord], np.ndarray, np.ndarray]:
        """Load the Active notes oldest first, their records, vector matrix and partition of each row."""
        rows = sorted(self._load_notes(), key=lambda r: (r["__mj_CreatedAt"], str(r["ID"])))
        records = [note_record(r) for r in rows]
        return rows, records, self._index(rows), np.array([hash(partition_key(n)) for n in records])

    def _walk(self, count: int) -> int:
        return min(count, self.sample) if self.sample else count

    # -- the four jobs --------------------------------------------------------------------
    def consolidate(self) -> PhaseResult:
        result = PhaseResult()
        started = time.monotonic()
        rows, records, matrix, partitions = self._notes_index()
        free = np.array([consolidatable(n) for n in records])
        threshold = self._thresholds()[0]
        reference = self.now.date().isoformat()
        walk = [i for i in range(len(rows)) if free[i]]
        result.total = len(walk)
        walk = walk[: self._walk(len(walk))]
        result.processed = len(walk)
        for i in walk:
            if not free[i]:
                continue
            found = self._neighbours(matrix, partitions, i, self._query(rows[i]), threshold, free)
            if 1 + len(found) < self.settings.cluster_min_size:
                continue
            members = [i, *found]
            free[members] = False
            cluster = sorted((records[j] for j in members), key=lambda n: (n.created_at, n.id))
            answer = self.judge.consolidate(cluster, reference)
            result.items += 1
            result.llm_calls += answer.calls
            result.prompt_tokens += answer.usage.prompt_tokens
            result.completion_tokens += answer.usage.completion_tokens
            reply = answer.reply
            if reply is None or not reply.shouldConsolidate or reply.consolidatedNote is None:
                continue
            if reply.consolidatedNote.confidence < self.settings.confidence_floor:
                continue
            self._merge(cluster, [rows[j] for j in members], reply, matrix[members])
            result.changed += 1
        result.seconds = time.monotonic() - started
        return result

    def _merge(self, cluster: list[Any], rows: list[dict[str, Any]], reply: Any, vectors: np.ndarray) -> None:
        new_id = str(uuid.uuid4())
        seed = rows[0]
        accessed = [n.last_accessed_at for n in cluster if n.last_accessed_at is not None]
        mean = vectors.mean(axis=0)
        values = {
            "ID": new_id,
            "AgentID": seed["AgentID"],
            "CompanyID": seed["CompanyID"],
            "UserID": seed["UserID"],
            "PrimaryScopeEntityID": seed["PrimaryScopeEntityID"],
            "PrimaryScopeRecordID": seed["PrimaryScopeRecordID"],
            "SecondaryScopes": seed["SecondaryScopes"],
            "Type": reply.consolidatedNote.type if reply.consolidatedNote.type in m.NOTE_TYPES else "Context",
            "Note": reply.consolidatedNote.content[: self.settings.max_note_chars],
            "IsAutoGenerated": True,
            "Status": "Active",
            "ProtectionTier": "Standard",
            "AccessCount": sum(n.access_count for n in cluster),
            "LastAccessedAt": max(accessed) if accessed else None,
            "ConsolidationCount": max(n.consolidation_count for n in cluster) + 1,
            "DerivedFromNoteIDs": json.dumps([n.id for n in cluster]),
            # the entity layer embeds a saved note with the store's model: its sources' mean stands in for that
            "EmbeddingVector": encode_vector(mean / (np.linalg.norm(mean) or 1.0)) if self.trusted else None,
            "EmbeddingModelID": self.trusted,
            "__mj_CreatedAt": self.now,
            "__mj_UpdatedAt": self.now,
        }
        with write(self.engine) as conn:
            conn.execute(m.note.insert().values(**values))
        for note in cluster:
            self._save(
                m.note, note.id, {"Status": "Revoked", "ConsolidatedIntoNoteID": new_id}, f"Consolidated into note {new_id}", "revoke"
            )

    def contradictions(self) -> PhaseResult:
        result = PhaseResult()
        started = time.monotonic()
        rows, records, matrix, partitions = self._notes_index()
        everyone = np.ones(len(rows), dtype=bool)
        threshold = self._thresholds()[1]
        asked: set[frozenset[int]] = set()
        revoked: set[int] = set()
        result.total = len(rows)
        walk = range(self._walk(len(rows)))
        result.processed = len(walk)
        for i in walk:
            if len(asked) >= self.settings.max_pairs:
                break
            for j in self._neighbours(matrix, partitions, i, self._query(rows[i]), threshold, everyone):
                pair = frozenset((i, j))
                if pair in asked or revoked & pair or len(asked) >= self.settings.max_pairs:
                    continue
                asked.add(pair)
                a, b = sorted((records[i], records[j]), key=lambda n: (n.created_at, n.id))
                answer = self.judge.contradiction(a, b)
                result.items += 1
                result.llm_calls += answer.calls
                result.prompt_tokens += answer.usage.prompt_tokens
                result.completion_tokens += answer.usage.completion_tokens
                reply = answer.reply
                if reply is None or not reply.isContradiction or reply.confidence < self.settings.confidence_floor:
                    continue
                decided = authority(a, b)
                if decided is None or not revocable(decided.loser.protection_tier, decided.loser.is_auto_generated):
                    result.extra["flagged"] = result.extra.get("flagged", 0) + 1
                    continue
                self._save(
                    m.note,
                    decided.loser.id,
                    {"Status": "Revoked", "ConsolidatedIntoNoteID": decided.winner.id},
                    f"Contradicted by note {decided.winner.id}",
                    "revoke",
                )
                revoked.add(i if decided.loser.id == records[i].id else j)
                result.changed += 1
        result.seconds = time.monotonic() - started
        return result

    def prune(self) -> PhaseResult:
        result = PhaseResult()
        started = time.monotonic()
        t = m.note
        refs = ("AgentID", "UserID", "CompanyID", "SourceConversationID")
        with read(self.engine) as conn:
            rows = list(
                conn.execute(
                    sa.select(t.c.ID, *[t.c[c] for c in refs])
                    .where(
                        t.c.Status == "Active",
                        t.c.IsAutoGenerated == sa.true(),
                        t.c.ProtectionTier.not_in(("Immutable", "Protected")),
                        sa.or_(*[t.c[c].is_not(None) for c in refs]),
                    )
                    .order_by(t.c["__mj_CreatedAt"], t.c.ID)
                ).mappings()
            )
        result.total = len(rows)
        rows = rows[: self._walk(len(rows))]
        result.processed = len(rows)
        for row in rows:
            if result.changed >= self.settings.prune_cap:
                break
            problems = []
            with read(self.engine) as conn:
                if row["AgentID"] is not None:
                    agent = conn.execute(sa.select(m.agent.c.Status).where(m.agent.c.ID == row["AgentID"])).first()
                    if agent is None or agent[0] == "Disabled":
                        problems.append("agent")
                if row["UserID"] is not None:
                    user = conn.execute(sa.select(m.user.c.IsActive).where(m.user.c.ID == row["UserID"])).first()
                    if user is None or not user[0]:
                        problems.append("user")
                if (
                    row["CompanyID"] is not None
                    and conn.execute(sa.select(m.company.c.ID).where(m.company.c.ID == row["CompanyID"])).first() is None
                ):
                    problems.append("company")
                if (
                    row["SourceConversationID"] is not None
                    and conn.execute(sa.select(m.conversation.c.ID).where(m.conversation.c.ID == row["SourceConversationID"])).first()
                    is None
                ):
                    problems.append("conversation")
            result.items += 1
            if problems:
                self._save(t, str(row["ID"]), {"Status": "Archived"}, "Archived: stale references: " + ", ".join(problems), "archive")
                result.changed += 1
        result.seconds = time.monotonic() - started
        return result

    def archive(self) -> PhaseResult:
        result = PhaseResult()
        started = time.monotonic()
        with read(self.engine) as conn:
            notes = list(
                conn.execute(
                    sa.select(m.note.c.ID, m.note.c.AgentID, m.note.c.ExpiresAt, m.note.c.LastAccessedAt, m.note.c["__mj_CreatedAt"]).where(
                        m.note.c.Status == "Active",
                        m.note.c.IsAutoGenerated == sa.true(),
                        m.note.c.ProtectionTier.not_in(("Immutable", "Protected")),
                    )
                ).mappings()
            )
            examples = list(
                conn.execute(
                    sa.select(
                        m.example.c.ID,
                        m.example.c.AgentID,
                        m.example.c.ExpiresAt,
                        m.example.c.LastAccessedAt,
                        m.example.c.SuccessScore,
                        m.example.c["__mj_CreatedAt"],
                    ).where(
                        m.example.c.Status == "Active",
                        m.example.c.IsAutoGenerated == sa.true(),
                    )
                ).mappings()
            )
        result.total = len(notes) + len(examples)
        walk = self._walk(result.total)
        result.processed = walk
        low = self.settings.low_score_threshold
        for k, row in enumerate(notes + examples):
            if k >= walk:
                break
            is_note = k < len(notes)
            with read(self.engine) as conn:
                agent = (
                    conn.execute(
                        sa.select(
                            m.agent.c.ID, m.agent.c.NoteRetentionDays, m.agent.c.ExampleRetentionDays, m.agent.c.AutoArchiveEnabled
                        ).where(m.agent.c.ID == row["AgentID"])
                    )
                    .mappings()
                    .first()
                    if row["AgentID"] is not None
                    else None
                )
            retention = Retention({str(agent["ID"]).lower(): agent} if agent else {}, self.settings)
            verdict = note_verdict(row, retention, self.now) if is_note else example_verdict(row, retention, self.now, low)
            result.items += 1
            if verdict:
                self._save(m.note if is_note else m.example, str(row["ID"]), {"Status": "Archived"}, verdict[1], "archive")
                result.changed += 1
        result.seconds = time.monotonic() - started
        return result

    def run(self) -> dict[str, Any]:
        """Run the four jobs in the pipeline's order; return per-phase figures."""
        out: dict[str, Any] = {}
        for name in ("consolidate", "contradictions", "prune", "archive"):
            self.mark_phase(name)
            self.embedded, self.charged = [], 0
            result = getattr(self, name)()
            if self.embedded:
                mean = sum(self.embedded) / len(self.embedded)
                result.charged_seconds = mean * self.charged
                result.extra.update(
                    embeddingCallsMade=len(self.embedded), embeddingCallsCharged=self.charged, embeddingCallSeconds=round(mean, 4)
                )
            out[name] = result.as_dict()
        return out
