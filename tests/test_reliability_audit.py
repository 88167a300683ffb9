"""The reliability tests' yardsticks: a generated corpus, and an audit that no record was lost.

`generate_corpus` builds a store of any size with every kind of planted problem (orphans by each
entity, expired and stale notes and examples, per-agent retention, clusters of paraphrases,
contradictory pairs) plus the records that must survive (manual, Protected, Immutable). `audit` compares a store with a baseline taken before
memctl touched it and lists every discrepancy the change log does not explain: a record gone, a
record changed with no change-log row, a change-log row the record does not reflect, a
consolidation applied in part. The crash, fault and concurrency tests call it after every
injected failure; the tests in this file prove it catches each kind of damage.
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any, Mapping, Optional

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from conftest import Db
from factory import NOW, Store, at
from memctl import api
from memctl.plan import jsonable
from memctl.store import models as m
from memctl.store.engine import write

STATE_COLUMNS = ("Status", "ConsolidatedIntoNoteID", "Comments", "__mj_UpdatedAt")
#: a note that absorbs notes of its fact takes their accesses and counts as consolidated (a "credit",
#: issue 29): only then, and only as its change log says
CREDITED_COLUMNS = ("AccessCount", "LastAccessedAt", "ConsolidationCount")
SYLLABLES = "ka lo mi ne ru sa te vo zu bra cle dri fro glu pla sti tro vex yam qui".split()
# Four phrasings of one fact (the hashing embedder puts them at cosine >= 0.8), and one statement
# with its negation: what the consolidate and contradictions phases, and the stub LLM, act on.
CLUSTER_TEMPLATES = (
    "{who} wants the {what} report as a spreadsheet for the {why} audit.",
    "{who} wants the {what} report as a spreadsheet for each {why} audit.",
    "For the {why} audit {who} wants the {what} report as a spreadsheet.",
    "{who} wants the {what} report in spreadsheet form for the {why} audit.",
)
CONTRADICTION_TEMPLATES = ("{who} uses the {what} integration.", "{who} does not use the {what} integration.")


def pseudo_word(rng: random.Random) -> str:
    """Return a made-up word: generated notes share no vocabulary, so they are not similar by chance."""
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def generate_corpus(engine: Engine, now: datetime = NOW, notes: int = 2000, examples: int = 300, seed: int = 7, llm_groups: int = 0) -> dict[str, Any]:
    """Insert a random but reproducible store with planted problems; return counts and the planted groups.

    The same arguments always give the same rows, IDs included, so two stores generated alike
    are identical (the crash test compares an interrupted store with a twin). `llm_groups`
    plants that many clusters of four paraphrases (one consolidation each) and that many
    statement/negation pairs (one contradiction each: by recency, by access count, or a tie
    flagged for review), each group in partitions of its own (a company and a user made for it,
    a live agent) so no two groups meet and prune leaves them alone.
    """
    rng = random.Random(seed)
    ids = (str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in iter(int, 1))
    audit = {"__mj_CreatedAt": now - timedelta(days=900), "__mj_UpdatedAt": now - timedelta(days=900)}
    companies = [{"ID": next(ids), "Name": f"Company {i}", **audit} for i in range(8)]
    users = [{"ID": next(ids), "Name": f"User {i}", "Email": f"u{i}@example.com", "IsActive": i % 9 != 0, **audit} for i in range(40)]
    agents = [
        {"ID": next(ids), "Name": f"Agent {i}", "Status": "Disabled" if i == 0 else "Active",
         "NoteRetentionDays": 30 if i == 1 else None, "ExampleRetentionDays": 60 if i == 1 else None,
         "AutoArchiveEnabled": i != 2, **audit}
        for i in range(6)
    ]
    conversations = [{"ID": next(ids), "UserID": rng.choice(users)["ID"], "Name": f"chat {i}", "IsArchived": False, **audit} for i in range(50)]
    gone = [next(ids) for _ in range(12)]  # agents, users, companies and conversations that were deleted

    def ago(days: float) -> timedelta:
        # whole days plus 2 to 22 hours: "N days without access" cannot tick over while a test's
        # clock moves a few minutes, so stores dreamt at slightly different times end alike
        whole = math.floor(days)
        return timedelta(days=whole, hours=2 + 20 * (days - whole))

    def pick(pool: list[dict[str, Any]], p_none: float, p_gone: float) -> Optional[str]:
        roll = rng.random()
        if roll < p_none:
            return None
        if roll < p_none + p_gone:
            return rng.choice(gone)
        return rng.choice(pool)["ID"]

    note_rows = []
    for _ in range(notes):
        created_days = rng.uniform(0, 400)
        created = now - ago(created_days)
        accessed = None if rng.random() < 0.3 else now - ago(rng.uniform(0, created_days))
        note_rows.append({
            "ID": next(ids), "AgentID": pick(agents, 0.05, 0.04), "UserID": pick(users, 0.4, 0.03),
            "CompanyID": pick(companies, 0.3, 0.03), "SourceConversationID": pick(conversations, 0.6, 0.05),
            "Note": " ".join(pseudo_word(rng) for _ in range(rng.randint(4, 10))).capitalize() + ".",
            "Type": rng.choice(m.NOTE_TYPES), "IsAutoGenerated": rng.random() < 0.9, "Status": "Active",
            "ProtectionTier": rng.choices(m.PROTECTION_TIERS, weights=(3, 5, 85, 7))[0], "AccessCount": rng.randint(0, 30),
            "LastAccessedAt": accessed, "ExpiresAt": now - ago(rng.uniform(-60, 30)) if rng.random() < 0.1 else None,
            "Comments": "imported" if rng.random() < 0.1 else None,
            "__mj_CreatedAt": created, "__mj_UpdatedAt": created,
        })
    live_agents = [a for a in agents if a["Status"] == "Active" and a["AutoArchiveEnabled"] and not a["NoteRetentionDays"]]
    groups: list[dict[str, list[str]]] = []
    for g in range(llm_groups):
        groups.append({"cluster": [], "pair": []})
        # a company and a user of its own: each group's cluster and pair have their partitions to themselves
        companies.append({"ID": next(ids), "Name": f"Group company {g}", **audit})
        users.append({"ID": next(ids), "Name": f"Group user {g}", "Email": None, "IsActive": True, **audit})
        agent, user, company = rng.choice(live_agents)["ID"], users[-1]["ID"], companies[-1]["ID"]
        words = {"who": pseudo_word(rng).capitalize(), "what": pseudo_word(rng), "why": pseudo_word(rng)}
        for k, template in enumerate(CLUSTER_TEMPLATES):
            created = now - timedelta(days=3 + k, hours=g)
            groups[-1]["cluster"].append(next(ids))
            note_rows.append({
                "ID": groups[-1]["cluster"][-1], "AgentID": agent, "UserID": user, "CompanyID": company, "SourceConversationID": None,
                "Note": template.format(**words), "Type": "Preference", "IsAutoGenerated": True, "Status": "Active",
                "ProtectionTier": "Standard", "AccessCount": rng.randint(0, 12), "LastAccessedAt": now - timedelta(days=1),
                "ExpiresAt": None, "Comments": None, "__mj_CreatedAt": created, "__mj_UpdatedAt": created,
            })
        words = {"who": pseudo_word(rng).capitalize(), "what": pseudo_word(rng)}
        rule = g % 3  # 0: the newer wins, 1: the more accessed wins, 2: a tie, flagged
        for k, template in enumerate(CONTRADICTION_TEMPLATES):
            created = now - timedelta(days=20 - 12 * k if rule == 0 else 5, hours=g)
            groups[-1]["pair"].append(next(ids))
            note_rows.append({
                "ID": groups[-1]["pair"][-1], "AgentID": agent, "UserID": None, "CompanyID": company, "SourceConversationID": None,
                "Note": template.format(**words), "Type": "Context", "IsAutoGenerated": True, "Status": "Active",
                "ProtectionTier": "Standard", "AccessCount": 4 + (k if rule == 1 else 0), "LastAccessedAt": now - timedelta(days=1),
                "ExpiresAt": None, "Comments": None, "__mj_CreatedAt": created, "__mj_UpdatedAt": created,
            })
    example_rows = []
    for i in range(examples):
        created_days = rng.uniform(0, 500)
        created = now - ago(created_days)
        example_rows.append({
            "ID": next(ids), "AgentID": pick(agents, 0.05, 0.05), "UserID": None, "CompanyID": pick(companies, 0.5, 0.0),
            "Type": "Example", "ExampleInput": f"question {i}", "ExampleOutput": f"answer {i}", "IsAutoGenerated": rng.random() < 0.9,
            "SuccessScore": round(rng.uniform(0, 100), 2) if rng.random() < 0.8 else None, "Status": "Active",
            "AccessCount": rng.randint(0, 10), "LastAccessedAt": None if rng.random() < 0.5 else now - ago(rng.uniform(0, created_days)),
            "ExpiresAt": now - ago(rng.uniform(-60, 30)) if rng.random() < 0.1 else None,
            "__mj_CreatedAt": created, "__mj_UpdatedAt": created,
        })
    with write(engine) as conn:
        for table, rows in ((m.company, companies), (m.user, users), (m.agent, agents), (m.conversation, conversations), (m.note, note_rows), (m.example, example_rows)):
            for start in range(0, len(rows), 1000):
                conn.execute(table.insert(), rows[start : start + 1000])
    return {"notes": len(note_rows), "examples": len(example_rows), "groups": groups}


def snapshot(engine: Engine) -> dict[tuple[str, str], dict[str, Any]]:
    """Return every note and example as {(table, id): {column: JSON value}}."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    with engine.connect() as conn:
        for table in (m.note, m.example):
            for row in conn.execute(sa.select(table)).mappings():
                out[(table.name, str(row["ID"]).lower())] = {k: jsonable(v) for k, v in row.items()}
    return out


def review_ids(engine: Engine) -> set[str]:
    """Return the IDs of the contradiction pairs flagged for review."""
    with engine.connect() as conn:
        return {str(r).lower() for r in conn.execute(sa.select(m.review.c.ID)).scalars()}


def change_log(engine: Engine) -> list[dict[str, Any]]:
    """Return every change-log row, oldest first."""
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(m.change).order_by(m.change.c.ID)).mappings()]


def audit(engine: Engine, baseline: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[str]:
    """List every way the store differs from `baseline` that its change log does not account for.

    - No record of the baseline is missing, and no record appeared without an insert change.
    - A record whose state columns differ from the baseline has change-log rows, and the last
      one's After is exactly its current state; a record without change-log rows is unchanged in
      every column.
    - A consolidated note (an insert) and the revocation of all its sources were applied together.
    """
    problems: list[str] = []
    now_state = snapshot(engine)
    changes: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for change in change_log(engine):
        changes[(change["TableName"], str(change["RecordID"]).lower())].append(change)

    for key in baseline:
        if key not in now_state:
            problems.append(f"{key[0]} {key[1]} was lost")
    for key, row in now_state.items():
        logged = changes.get(key, [])
        if key not in baseline:
            if not logged or logged[0]["Action"] != "insert":
                problems.append(f"{key[0]} {key[1]} appeared without an insert in the change log")
            before = None
        else:
            before = baseline[key]
        if not logged:
            if dict(row) != dict(before or {}):
                diff = sorted(c for c in row if row[c] != (before or {}).get(c))
                problems.append(f"{key[0]} {key[1]} changed without a change-log row ({', '.join(diff)})")
            continue
        credited = {c for change in logged if change["Action"] in ("credit", "restore") for c in json.loads(change["After"] or "{}") if c in CREDITED_COLUMNS}
        changing = (*STATE_COLUMNS, *sorted(credited))
        last = {c: v for change in logged for c, v in json.loads(change["After"] or "{}").items()}  # each column as last logged
        for column in changing:
            if column in last and _same(last[column], row[column]) is False:
                problems.append(f"{key[0]} {key[1]}: {column} is {row[column]!r} but the change log says {last[column]!r}")
        if before is not None:
            for column, value in row.items():
                if column not in changing and value != before.get(column):
                    problems.append(f"{key[0]} {key[1]}: {column} changed ({before.get(column)!r} -> {value!r}); memctl may only change {changing}")

    reviews = review_ids(engine)
    for review in reviews:
        logged = changes.get(("memctl_review", review), [])
        if not logged or logged[-1]["Action"] == "unflag":
            problems.append(f"review {review} exists but the change log does not say it was raised")
    for (table, record_id), logged in changes.items():
        if table == "memctl_review":
            if logged[-1]["Action"] == "flag" and record_id not in reviews:
                problems.append(f"the change log raised review {record_id}, which does not exist")
            if logged[-1]["Action"] == "unflag" and record_id in reviews:
                problems.append(f"the change log removed review {record_id}, which still exists")
            continue
        if (table, record_id) not in now_state:
            problems.append(f"change-log rows for {table} {record_id}, which does not exist")
        for change in logged:
            if change["Action"] != "insert":
                continue
            created = now_state.get((table, record_id), {})
            sources = json.loads(created.get("DerivedFromNoteIDs") or "[]")
            for source in sources:
                source_logs = [c for c in changes.get(("AIAgentNote", str(source).lower()), []) if c["RunID"] == change["RunID"]]
                into = [json.loads(c["After"] or "{}").get("ConsolidatedIntoNoteID") for c in source_logs]
                if not any(str(t).lower() == record_id for t in into if t):
                    problems.append(f"note {record_id} was created from {source} but that source was not revoked into it in the same run")
    return problems


def _same(logged: Any, current: Any) -> bool:
    if logged == current:
        return True
    if isinstance(logged, str) and isinstance(current, str):
        try:
            return datetime.fromisoformat(logged) == datetime.fromisoformat(current)
        except ValueError:
            return logged.lower() == current.lower()
    return False


# --- the audit catches each kind of damage ---------------------------------------------------


def test_the_audit_accepts_a_real_run_and_its_undo(db: Db) -> None:
    generate_corpus(db.engine, notes=150, examples=30)
    baseline = snapshot(db.engine)
    report = api.dream(at(db.settings, NOW), engine=db.engine)
    assert report.status == "completed" and sum(p.applied for p in report.phases) > 20
    assert audit(db.engine, baseline) == []
    api.undo(at(db.settings, NOW), report.run_id, engine=db.engine)
    assert audit(db.engine, baseline) == []


def test_the_audit_catches_a_lost_an_unlogged_and_a_misrecorded_change(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent(status="Disabled")
    notes = [store.note(f"fact {i}", AgentID=agent) for i in range(4)]
    baseline = snapshot(db.engine)
    api.run_phase(at(db.settings, NOW), "prune", engine=db.engine)
    assert audit(db.engine, baseline) == []
    with db.engine.begin() as conn:
        conn.execute(m.note.delete().where(m.note.c.ID == notes[0]))
        conn.execute(m.note.update().where(m.note.c.ID == notes[1]).values(Status="Active"))  # log says Archived
        conn.execute(m.note.update().where(m.note.c.ID == notes[2]).values(Note="rewritten"))  # memctl never edits text
    found = "\n".join(audit(db.engine, baseline))
    assert f"{notes[0]} was lost" in found
    assert f"{notes[1]}: Status is 'Active' but the change log says 'Archived'" in found
    assert f"{notes[2]}: Note changed" in found
    untouched = store.note("not in the baseline")
    assert f"{untouched} appeared without an insert" in "\n".join(audit(db.engine, baseline))


def test_the_audit_catches_an_unlogged_change_and_a_half_applied_consolidation(db: Db) -> None:
    store = Store(db.engine)
    a, b = store.note("a"), store.note("b")
    baseline = snapshot(db.engine)
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == a).values(Status="Archived"))
    assert any("changed without a change-log row (Status)" in p for p in audit(db.engine, baseline))
    with db.engine.begin() as conn:
        conn.execute(m.note.update().where(m.note.c.ID == a).values(Status="Active"))
    merged = str(uuid.uuid4())
    with db.engine.begin() as conn:  # a consolidated note whose sources were never revoked
        conn.execute(m.note.insert().values(ID=merged, Note="a and b", DerivedFromNoteIDs=json.dumps([a, b]), __mj_CreatedAt=NOW, __mj_UpdatedAt=NOW))
        conn.execute(m.change.insert().values(RunID=str(uuid.uuid4()), TableName="AIAgentNote", RecordID=merged, Action="insert", After="{}", ChangedAt=NOW))
    found = "\n".join(audit(db.engine, baseline))
    assert f"note {merged} was created from {a} but that source was not revoked" in found
