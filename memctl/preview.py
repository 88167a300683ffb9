"""What a plan or a run changes, as people read it: every record with its text.

`attach_texts` stores the text of every record a phase's units touch in `Unit.detail["texts"]`
(display only: apply never reads it), so texts travel with `--json` and `--plan-out` and a plan
applied later shows what it previewed. `entries` reads a phase plan; `run_entries` rebuilds the
same entries from a finished run's change log (`memctl runs show`).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Optional, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from memctl.plan import PhasePlan, Unit
from memctl.store import models as m
from memctl.store.ids import chunks, id_in
from memctl.store.engine import read

TEXTS = "texts"
RULE = "rule"

# How each kind of unit names the records it touches, by action.
ROLES: dict[str, dict[str, str]] = {
    "cluster": {"insert": "new", "revoke": "source"},
    "standing": {"credit": "kept (states it)", "revoke": "source"},
    "copies": {"credit": "kept", "annotate": "kept", "check": "kept", "revoke": "copy"},
    "absorb": {"revoke": "absorbed", "check": "kept (broader)"},
    "contradiction": {"revoke": "revoked (loser)", "check": "kept (winner)"},
    "flag": {"check": "note"},
    "review": {"resolve": "revoked", "check": "kept"},
    "undo": {"restore": "restored", "unflag": "unflagged", "flag": "flagged again"},
}
ENTRY_KINDS = {
    "cluster": "merge", "standing": "merge", "copies": "copies", "absorb": "absorb", "contradiction": "contradiction", "flag": "flag",
    "review": "review", "undo": "undo",
}
PER_RECORD_KINDS = ("archive", "prune", "undo")


@dataclass(frozen=True)
class RecordText:
    """One record an entry touches, with its text."""

    role: str
    table: str
    id: str
    action: str
    text: str
    reason: str = ""
    skipped: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"role": self.role, "table": self.table, "id": self.id, "action": self.action, "text": self.text}
        if self.reason:
            out["reason"] = self.reason
        if self.skipped:
            out["skipped"] = self.skipped
        return out


@dataclass(frozen=True)
class Entry:
    """One change as people read it: a merge, a contradiction, a flag, an archival..."""

    kind: str
    summary: str
    records: tuple[RecordText, ...]
    rule: str = ""

    @property
    def skipped(self) -> bool:
        changing = [r for r in self.records if r.action != "check"]
        return bool(changing) and all(r.skipped for r in changing)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "summary": self.summary, "records": [r.to_dict() for r in self.records]}
        if self.rule:
            out["rule"] = self.rule
        if self.skipped:
            out["skipped"] = True
        return out


# --- texts of planned records ------------------------------------------------------------------


def example_text(row: Mapping[str, Any]) -> str:
    """Return an example's text as people read it: its input, then its output."""
    return f"{row.get('ExampleInput') or ''} => {row.get('ExampleOutput') or ''}"


def attach_texts(engine: Engine, plan: PhasePlan, known: Optional[Mapping[str, str]] = None) -> None:
    """Store in each unit's detail the text of every record it touches.

    `known`: texts of notes not in the database yet (a dry-run's earlier phases would create them).
    Units that already carry texts (a saved plan being applied) keep them.
    """
    wanted: dict[str, set[str]] = defaultdict(set)
    inserted: dict[str, str] = {}
    for unit in plan.units:
        if TEXTS in unit.detail:
            continue
        for mutation in unit.mutations:
            if mutation.action == "insert":
                inserted[mutation.record_id.lower()] = str(mutation.values.get("Note") or "")
            else:
                table, ids = _shown(mutation.table, mutation.record_id, mutation.values)
                wanted[table].update(ids)
    if not any(wanted.values()) and not inserted:
        return
    texts = {**(known or {}), **inserted}
    with read(engine) as conn:
        texts.update(_read_texts(conn, {t: ids - texts.keys() for t, ids in wanted.items()}))
    plan.units = [_with_texts(unit, texts) for unit in plan.units]


def _shown(table: str, record_id: str, values: Mapping[str, Any]) -> tuple[str, list[str]]:
    """Return the table and IDs of the records whose text shows a change of a row: a review row shows its pair."""
    if table == "memctl_review":
        return "AIAgentNote", [str(values[k]).lower() for k in ("NoteAID", "NoteBID") if values.get(k)]
    return table, [record_id.lower()]


def _with_texts(unit: Unit, texts: Mapping[str, str]) -> Unit:
    if TEXTS in unit.detail:
        return unit
    ids = [i for mutation in unit.mutations for i in _shown(mutation.table, mutation.record_id, mutation.values)[1]]
    return replace(unit, detail={**unit.detail, TEXTS: {i: texts[i] for i in ids if i in texts}})


def _read_texts(conn: Connection, wanted: Mapping[str, set[str]]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for table_name, ids in wanted.items():
        if table_name == "AIAgentNote":
            table, columns = m.note, ("ID", "Note")
        elif table_name == "AIAgentExample":
            table, columns = m.example, ("ID", "ExampleInput", "ExampleOutput")
        else:
            continue
        for chunk in chunks(sorted(ids)):
            query = sa.select(*[table.c[c] for c in columns]).where(id_in(table, chunk, conn))
            for row in conn.execute(query).mappings():
                key = str(row["ID"]).lower()
                texts[key] = (row["Note"] or "") if table_name == "AIAgentNote" else example_text(row)
    return texts


# --- entries of a plan ---------------------------------------------------------------------------


def entries(plan: PhasePlan, skipped: Sequence[tuple[str, str]] = ()) -> list[Entry]:
    """Return the changes of a phase plan as entries; `skipped` (record, why) marks skipped ones."""
    why = {record.lower(): reason for record, reason in skipped}
    out: list[Entry] = []
    for unit in plan.units:
        texts = unit.detail.get(TEXTS) or {}
        if unit.kind in PER_RECORD_KINDS or unit.kind not in ENTRY_KINDS:
            for mutation in unit.mutations:
                if mutation.action == "check":
                    continue
                record = _record(unit, mutation.table, mutation.record_id, mutation.action, texts, why, mutation.comment or "")
                if mutation.table == "memctl_review" and not record.text:
                    record = replace(record, text=_review_text(mutation.values))
                kind = unit.kind if unit.kind in PER_RECORD_KINDS else mutation.action
                out.append(Entry(kind=kind, summary=mutation.comment or unit.reason, records=(record,)))
            continue
        records = _flag_records(unit, texts, why) if unit.kind == "flag" else [
            _record(unit, mu.table, mu.record_id, mu.action, texts, why)
            for mu in unit.mutations
            if mu.table != "memctl_review"  # an operator's settlement of a pair: the unit's summary says it
        ]
        rule = str(unit.detail.get(RULE) or _rule_of(unit.reason)) if unit.kind == "contradiction" else ""
        out.append(Entry(kind=ENTRY_KINDS[unit.kind], summary=unit.reason, records=tuple(records), rule=rule))
    return out


def _flag_records(unit: Unit, texts: Mapping[str, str], why: Mapping[str, str]) -> list[RecordText]:
    """Return a flagged pair's notes as A and B, in the order `memctl review` lists them."""
    notes = [str(n).lower() for n in unit.detail.get("notes") or [mu.record_id for mu in unit.mutations if mu.action == "check"]]
    flag_skip = next((why.get(mu.record_id.lower(), "") for mu in unit.mutations if mu.table == "memctl_review"), "")
    return [
        RecordText(label, "AIAgentNote", note_id, "check", str(texts.get(note_id, "")), skipped=why.get(note_id, "") or flag_skip)
        for label, note_id in zip(("A", "B"), notes)
    ]


def _record(unit: Unit, table: str, record_id: str, action: str, texts: Mapping[str, str], why: Mapping[str, str], reason: str = "") -> RecordText:
    role = ROLES.get(unit.kind, {}).get(action) or {"archive": "archived", "annotate": "annotated"}.get(action, action)
    key = record_id.lower()
    return RecordText(role, table, key, action, str(texts.get(key, "")), reason, why.get(key, ""))


def _rule_of(reason: str) -> str:
    found = re.search(r"kept (.+)$", reason)
    return found.group(1) if found else ""


# --- entries of a finished run, from its change log -------------------------------------------------


def run_entries(engine: Engine, run_id: str) -> dict[Optional[str], list[Entry]]:
    """Return the entries of a finished run per step ID, from the change log and current texts."""
    c = m.change
    with read(engine) as conn:
        rows = list(conn.execute(sa.select(c).where(c.c.RunID == run_id).order_by(c.c.ID)).mappings())
        wanted: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            after = _loads(row["After"]) or _loads(row["Before"]) or {}
            table, ids = _shown(row["TableName"], str(row["RecordID"]), after)
            wanted[table].update(ids)
            if after.get("ConsolidatedIntoNoteID"):
                wanted["AIAgentNote"].add(str(after["ConsolidatedIntoNoteID"]).lower())
        texts = _read_texts(conn, wanted)
    by_step: dict[Optional[str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_step[str(row["StepID"]).lower() if row["StepID"] else None].append(row)
    return {step: _change_entries(changes, texts) for step, changes in by_step.items()}


def _loads(text: Optional[str]) -> Optional[dict[str, Any]]:
    return json.loads(text) if text else None


def _review_text(row: Mapping[str, Any]) -> str:
    pair = f"pair of notes {row['NoteAID']} and {row['NoteBID']}" if row.get("NoteAID") and row.get("NoteBID") else "flagged pair"
    return f"{pair}: {row['Status']}" if row.get("Status") else pair


def _change_entries(rows: Iterable[Mapping[str, Any]], texts: Mapping[str, str]) -> list[Entry]:
    rows = list(rows)
    # the notes the run merged into: new ones (insert) and standing ones (credit, or a Protected
    # one's annotation, logged just before the revocations into it)
    targets = {str((_loads(r["After"]) or {}).get("ConsolidatedIntoNoteID") or "").lower() for r in rows if r["Action"] == "revoke"}
    into_notes = {str(r["RecordID"]).lower() for r in rows if r["Action"] in ("insert", "credit")}
    into_notes |= {str(r["RecordID"]).lower() for r in rows if r["Action"] == "annotate" and str(r["RecordID"]).lower() in targets}
    sources: dict[str, list[RecordText]] = defaultdict(list)
    out: list[Entry] = []
    merges: dict[str, int] = {}
    for row in rows:
        record_id, action, table = str(row["RecordID"]).lower(), row["Action"], row["TableName"]
        after = _loads(row["After"]) or {}
        reason = row["Reason"] or ""
        into = str(after.get("ConsolidatedIntoNoteID") or "").lower()
        if action == "insert":
            merges[record_id] = len(out)
            out.append(Entry("merge", reason, (RecordText("new", table, record_id, action, texts.get(record_id, "")),)))
        elif record_id in into_notes and record_id not in merges:
            merges[record_id] = len(out)
            kind = "copies" if " exact cop" in reason else "merge"
            role = ROLES["copies" if kind == "copies" else "standing"]["credit"]
            out.append(Entry(kind, reason, (RecordText(role, table, record_id, action, texts.get(record_id, "")),)))
        elif action in ("revoke", "resolve") and into in into_notes:
            role = "copy" if into in merges and out[merges[into]].kind == "copies" else "source"
            sources[into].append(RecordText(role, table, record_id, action, texts.get(record_id, "")))
        elif action in ("revoke", "resolve"):
            kind = (
                "contradiction" if reason.startswith("Contradicted") and action == "revoke"
                else "absorb" if reason.startswith("Absorbed")
                else "merge" if reason.startswith("Consolidated into")  # into an Immutable standing note
                else "review"
            )
            roles = {
                "contradiction": ("revoked (loser)", "kept (winner)"), "absorb": ("absorbed", "kept (broader)"),
                "merge": ("source", "kept"), "review": ("revoked", "kept"),
            }[kind]
            records = (RecordText(roles[0], table, record_id, action, texts.get(record_id, "")), RecordText(roles[1], table, into, "check", texts.get(into, "")))
            rule = re.search(r"Kept (.+?)\.?$", reason)
            out.append(Entry(kind, reason, records, rule=rule.group(1) if kind == "contradiction" and rule else ""))
        elif action == "flag" and table == "memctl_review":
            notes = [str(after.get(k) or "").lower() for k in ("NoteAID", "NoteBID")]
            records = tuple(RecordText(label, "AIAgentNote", n, "check", texts.get(n, "")) for label, n in zip(("A", "B"), notes))
            out.append(Entry("flag", str(after.get("Reason") or reason), records))
        else:
            role = {"archive": "archived", "annotate": "annotated", "restore": "restored", "unflag": "unflagged"}.get(action, action)
            text = _review_text(after or _loads(row["Before"]) or {}) if table == "memctl_review" else texts.get(record_id, "")
            out.append(Entry(action if action in ("archive", "annotate") else "change", reason, (RecordText(role, table, record_id, action, text, reason),)))
    for new_id, index in merges.items():
        merge = out[index]
        out[index] = replace(merge, records=merge.records + tuple(sources.get(new_id, ())))
    return out
