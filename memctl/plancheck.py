"""Validate what a saved plan asks before `memctl apply` writes anything.

A plan file is operator input and may have been edited. Guards prove only that the rows are as
the plan says; this checks that memctl itself could have planned it: each phase's own actions on
their tables, with full guards; an insert in exactly its sources' scope; revocations only into a
note the unit guards, of the same or a broader scope (DESIGN 3); a standing note absorbing only
its own scope's notes, credited with exactly their access figures; no revoke or archive of a
Protected, Immutable or manual note; values of the right type and length; no NUL byte. The checks
read the guards, which apply compares with the rows, so a plan passes only if the rows allow it.
A failing plan is refused whole (exit 2): nothing is written, not even a run record.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Iterator, Mapping, Optional

from memctl.embed.stored import decode_vector
from memctl.errors import InputError
from memctl.protection import ACTION_TABLES, PHASE_ACTIONS, REVIEW_SETTABLE, SETTABLE, refusal
from memctl.plan import GUARD_COLUMNS, SCOPE_COLUMNS, Mutation, Plan, Unit
from memctl.records import TIERS, broader_keys, note_record
from memctl.settings import Settings, parse_time
from memctl.similarity import partition_key
from memctl.store import models as m
from memctl.store.values import GUID, value_problem

ACTION_VALUES = {**SETTABLE, "flag": REVIEW_SETTABLE["flag"]}  # what each planned action sets, exactly
TEXT_CAP = 8_000  # a Comments line, a flag's reason, a unit's reason


class PlanRefused(InputError):
    """The plan asks for something memctl never plans; nothing was applied."""


def check_plan(plan: Plan, settings: Settings, source: str = "plan", archive_statuses: Optional[Mapping[str, frozenset[str]]] = None) -> None:
    """Raise PlanRefused naming the first action of `plan` that memctl could not have planned.

    `archive_statuses` says, per table, the Status an archive may set on the target database:
    'Archived', or the nearest value its check allows instead (memctl/store/capabilities.py).
    """
    statuses = archive_statuses or {}
    try:
        planned_at: Optional[datetime] = parse_time(plan.created_at)
    except (TypeError, ValueError, OverflowError):
        planned_at = None
    for phase in plan.phases:
        where = f"phase {phase.phase!r}"
        if _has_nul(phase.phase, phase.step_name, phase.message, phase.input, phase.output):
            raise PlanRefused(f"plan refused, nothing applied: {where} holds a NUL byte")
        allowed = PHASE_ACTIONS.get(phase.phase)
        if allowed is None:
            raise PlanRefused(f"{source}: plan refused, nothing applied: {where} is not a phase `memctl apply` runs ({', '.join(PHASE_ACTIONS)})")
        for unit in phase.units:
            why = _unit_shape_problem(unit)
            if why is not None:
                raise PlanRefused(f"{source}: plan refused, nothing applied: {where}, unit {unit.key[:80]!r}: {why}")
            # each action on its own first (table, values, guard, protection), then against its unit (scopes)
            for check in (lambda mu: _mutation_problem(phase.phase, allowed, unit, mu, settings, statuses),
                          lambda mu: _unit_problem(unit, mu, phase.phase, planned_at)):
                for mutation in unit.mutations:
                    why = check(mutation)
                    if why is not None:
                        record = mutation.record_id if len(mutation.record_id) <= 64 else mutation.record_id[:64] + "..."
                        raise PlanRefused(
                            f"{source}: plan refused, nothing applied: {where}, unit {unit.key[:80]!r}: "
                            f"action {mutation.action[:32]!r} on {mutation.table} {record!r}: {why}"
                        )


# Units memctl applies one by one, each action on its own: batches of archivals and annotations.
# Every other unit (a merge, a contradiction) is all-or-nothing: its revocations rest on its
# insert or its checks, so none may commit without the others.
NON_ATOMIC_ACTIONS = {"archive", "annotate"}


def _unit_shape_problem(unit: Unit) -> Optional[str]:
    """Return why a unit's shape is not one memctl plans: atomicity, one action per record."""
    if not unit.atomic and any(mu.action not in NON_ATOMIC_ACTIONS for mu in unit.mutations):
        return "a unit that inserts, revokes, checks or flags is applied all-or-nothing (atomic), not action by action"
    seen: set[tuple[str, str]] = set()
    for mu in unit.mutations:
        key = (mu.table, mu.record_id.lower())
        if key in seen:
            return f"two actions on {mu.table} {mu.record_id[:64]!r} (memctl plans one action per record in a unit)"
        seen.add(key)
    return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _has_nul(*values: Any) -> bool:
    return any("\x00" in s for s in _strings(values))


def _mutation_problem(
    phase: str, allowed: frozenset[str], unit: Unit, mutation: Mutation, settings: Settings, archive_statuses: Mapping[str, frozenset[str]]
) -> Optional[str]:
    action, table = mutation.action, mutation.table
    if _has_nul(mutation.record_id, mutation.values, mutation.comment, mutation.guard, unit.key, unit.reason, unit.kind, unit.detail):
        return "holds a NUL byte"
    if action not in allowed:
        return f"phase {phase} never plans {action!r} (it plans {', '.join(sorted(allowed))})"
    if table not in ACTION_TABLES[action]:
        return f"{action!r} never touches {table}"
    if not GUID.fullmatch(mutation.record_id):
        return "record_id is not a GUID"
    if mutation.comment is not None and len(mutation.comment) > TEXT_CAP:
        return f"its comment is {len(mutation.comment)} characters (at most {TEXT_CAP})"
    if len(unit.reason) > TEXT_CAP:
        return f"the unit's reason is {len(unit.reason)} characters (at most {TEXT_CAP})"
    if action == "insert":
        return _insert_problem(mutation, settings)
    if set(mutation.values) != ACTION_VALUES[action]:
        return f"{action!r} sets exactly {sorted(ACTION_VALUES[action]) or 'nothing'}, not {sorted(mutation.values)}"
    if action == "flag":
        return _flag_problem(mutation)
    return _guarded_problem(mutation, archive_statuses.get(mutation.table, frozenset({"Archived"})))


def _guarded_problem(mutation: Mutation, archive_statuses: frozenset[str] = frozenset({"Archived"})) -> Optional[str]:
    action, table, guard, values = mutation.action, mutation.table, mutation.guard, mutation.values
    if guard is None:
        return "it has no guard"
    if set(guard) != set(GUARD_COLUMNS[table]):
        return "its guard does not watch exactly the columns " + ", ".join(GUARD_COLUMNS[table]) + " (a plan of another memctl version?)"
    if action == "revoke" and (values["Status"] != "Revoked" or not isinstance(values["ConsolidatedIntoNoteID"], str) or not GUID.fullmatch(values["ConsolidatedIntoNoteID"])):
        return "a revoke sets Status 'Revoked' and a ConsolidatedIntoNoteID"
    if action == "archive" and values["Status"] not in archive_statuses:
        return f"an archive sets Status {' or '.join(repr(v) for v in sorted(archive_statuses)) or '(none: this database refuses it)'}, not {str(values['Status'])[:32]!r}"
    if action in ("annotate", "credit") and not mutation.comment:
        return f"{'an annotation' if action == 'annotate' else 'a credit'} without a comment"
    if action == "check":
        return None
    why = refusal(action, guard.get("ProtectionTier"), guard["IsAutoGenerated"] is True)
    if why is not None:
        return why
    if guard["Status"] != "Active":
        return f"the record is {guard['Status']}, not Active"
    if action == "credit":
        for name in ("AccessCount", "LastAccessedAt", "ConsolidationCount"):
            why = value_problem(m.note.c[name], values[name], None)
            if why:
                return f"{name}: {why}"
        if not isinstance(values["ConsolidationCount"], int) or values["ConsolidationCount"] < 1:
            return "a credited note's ConsolidationCount is a count of at least 1"
    return None


def _flag_problem(mutation: Mutation) -> Optional[str]:
    a, b, reason = (mutation.values[k] for k in ("NoteAID", "NoteBID", "Reason"))
    if not all(isinstance(v, str) and GUID.fullmatch(v) for v in (a, b)) or a.lower() >= b.lower():
        return "a flag names two notes by GUID, NoteAID < NoteBID"
    if reason is not None and (not isinstance(reason, str) or len(reason) > TEXT_CAP):
        return f"a flag's reason is text of at most {TEXT_CAP} characters"
    return None


def _insert_problem(mutation: Mutation, settings: Settings) -> Optional[str]:
    values = mutation.values
    if str(values.get("ID", "")).lower() != mutation.record_id.lower():
        return f"record_id {mutation.record_id} is not the inserted note's values.ID {str(values.get('ID'))[:64]!r}"
    unknown = sorted(set(values) - set(m.note.c.keys()))
    if unknown:
        return f"unknown columns {unknown}"
    for name, value in values.items():
        why = value_problem(m.note.c[name], value, settings)
        if why:
            return f"{name}: {why}"
    if not (values.get("Note") or "").strip():
        return "an inserted note has text"
    vector = values.get("EmbeddingVector")
    if vector is not None and decode_vector(vector) is None:
        return "EmbeddingVector is not a JSON list of finite numbers"
    fixed = {"Status": "Active", "IsAutoGenerated": True, "ConsolidatedIntoNoteID": None}
    for name, expected in fixed.items():
        if values.get(name, expected) != expected:
            return f"a consolidated note has {name} = {expected!r}, not {values.get(name)!r}"
    return None


def scope_key(state: Mapping[str, Any], prefix: str = "") -> tuple:
    """Return the partition key of the scope columns in `state` (named with `prefix`)."""
    return partition_key(note_record({"ID": "", **{c: state.get(prefix + c) for c in SCOPE_COLUMNS}}, with_vector=False))


def _moment(value: Any) -> Optional[datetime]:
    return None if value is None else value if isinstance(value, datetime) else parse_time(str(value))


def _inherited_problem(values: Mapping[str, Any], guards: list[Mapping[str, Any]], planned_at: Optional[datetime]) -> Optional[str]:
    """Check what a consolidated note inherits from its sources' guards, as consolidate sets it:
    the strongest protection; no more access, no later last access; the sources' latest expiry (none
    if one never expires); a fact date no later than the planning."""
    strongest = max((g.get("ProtectionTier") if g.get("ProtectionTier") in TIERS else "Standard" for g in guards), key=TIERS.index)
    if values.get("ProtectionTier", "Standard") != strongest:
        return f"a consolidated note has its sources' strongest ProtectionTier {strongest!r}, not {values.get('ProtectionTier')!r}"
    total = sum(max(0, g.get("AccessCount") or 0) for g in guards if isinstance(g.get("AccessCount") or 0, int))
    if (values.get("AccessCount") or 0) > total:
        return f"AccessCount {values.get('AccessCount')} is more than its sources' {total}"
    accessed = [_moment(g.get("LastAccessedAt")) for g in guards if g.get("LastAccessedAt") is not None]
    last = _moment(values.get("LastAccessedAt"))
    if last is not None and (not accessed or last > max(a for a in accessed if a is not None)):
        return "LastAccessedAt is later than every source's"
    expiries = [_moment(g.get("ExpiresAt")) for g in guards]
    expiry = _moment(values.get("ExpiresAt"))
    if any(e is None for e in expiries):
        if expiry is not None:
            return "ExpiresAt is set though a source never expires"
    elif expiry is None or expiry != max(e for e in expiries if e is not None):
        return "ExpiresAt is not its sources' latest expiry"
    created = _moment(values.get("__mj_CreatedAt"))
    # the sources' creation dates are not guarded: bound the fact date by the plan's clock (a day's
    # slack for the clocks of the applications that wrote the sources)
    if created is not None and planned_at is not None and created > planned_at + timedelta(days=1):
        return "__mj_CreatedAt (its fact date) is later than the plan was made"
    return None


def _credit_problem(values: Mapping[str, Any], own: Mapping[str, Any], guards: list[Mapping[str, Any]]) -> Optional[str]:
    """Check a standing note's credit, as consolidate sets it: its own AccessCount plus its absorbed
    notes' (a negative one counts as 0), and the latest LastAccessedAt of them all (per the guards)."""
    counts = [own.get("AccessCount") or 0, *(g.get("AccessCount") or 0 for g in guards)]
    total = sum(max(0, c) for c in counts if isinstance(c, int))
    if values["AccessCount"] != total:
        return f"AccessCount {values['AccessCount']} is not the standing note's and its absorbed notes' {total}"
    accessed = [_moment(g.get("LastAccessedAt")) for g in (own, *guards) if g.get("LastAccessedAt") is not None]
    latest = max((a for a in accessed if a is not None), default=None)
    if _moment(values["LastAccessedAt"]) != latest:
        return "LastAccessedAt is not the latest of the standing note's and its absorbed notes'"
    return None


def _unit_problem(unit: Unit, mutation: Mutation, phase: str = "", planned_at: Optional[datetime] = None) -> Optional[str]:
    """Check a mutation against the rest of its unit: scopes, sources, the notes a flag names."""
    if mutation.action == "insert":
        return _insert_unit_problem(unit, mutation, planned_at)
    if mutation.action == "revoke":
        return _revoke_unit_problem(unit, mutation, phase)
    if mutation.action in ("credit", "annotate") and phase == "consolidate":
        return _standing_unit_problem(unit, mutation)
    if mutation.action == "flag":
        by_id = {mu.record_id.lower(): mu for mu in unit.mutations}
        named = {str(mutation.values[k]).lower() for k in ("NoteAID", "NoteBID")}
        if any(by_id.get(n) is None or by_id[n].action != "check" for n in named):
            return "the notes it flags are not guarded by the same unit"
    return None


def _insert_unit_problem(unit: Unit, mutation: Mutation, planned_at: Optional[datetime]) -> Optional[str]:
    """Check an insert against its sources: their scope, what it inherits, its DerivedFromNoteIDs."""
    sources = _revoked_into(unit, mutation)
    if not sources:
        return "no note of the unit is consolidated into the inserted note"
    scope = scope_key(mutation.values)
    for source in sources:
        if (theirs := scope_key(source.guard or {})) != scope:
            return f"the inserted note's scope {_render(scope)} is not its source {source.record_id}'s {_render(theirs)}"
    try:
        why = _inherited_problem(mutation.values, [source.guard or {} for source in sources], planned_at)
    except (TypeError, ValueError, OverflowError):
        why = "a date or count in it or its sources' guards is not of its type"
    if why is not None:
        return why
    derived = mutation.values.get("DerivedFromNoteIDs")
    if derived is not None:
        try:
            listed = {str(i).lower() for i in json.loads(derived)}
        except (TypeError, ValueError):
            return "DerivedFromNoteIDs is not a JSON list"
        if listed != {s.record_id.lower() for s in sources}:
            return "DerivedFromNoteIDs does not list exactly the notes consolidated into it"
    return None


def _revoke_unit_problem(unit: Unit, mutation: Mutation, phase: str) -> Optional[str]:
    """Check that a revocation goes into an Active note the unit guards, of a scope it may go to."""
    target_id = str(mutation.values["ConsolidatedIntoNoteID"]).lower()
    target = {mu.record_id.lower(): mu for mu in unit.mutations}.get(target_id)
    if target is None or target.action not in ("insert", "check", "credit", "annotate") or target_id == mutation.record_id.lower():
        return "the note it is revoked into is not guarded by the same unit"
    source_scope = scope_key(mutation.guard or {})
    if target.action == "insert":
        return None  # the insert's own check compares the scopes
    if (target.guard or {}).get("Status") != "Active":
        return f"the note it is revoked into ({target_id}) is not Active"
    target_scope = scope_key(target.guard or {})
    if phase == "contradictions" and target_scope != source_scope:
        return f"a contradiction's loser is revoked only in favour of a note of its own scope, not {_render(target_scope)}"
    if target.action in ("credit", "annotate") and target_scope != source_scope:
        return (
            f"a note is absorbed by a standing note of its own scope only, not {_render(target_scope)} "
            f"(its scope is {_render(source_scope)})"
        )
    if target_scope != source_scope and target_scope not in broader_keys(source_scope):  # type: ignore[arg-type]
        return (
            f"the note it is revoked into ({target_id}, scope {_render(target_scope)}) is neither in its scope "
            f"{_render(source_scope)} nor a broader one its audience can see"
        )
    return None


def _standing_unit_problem(unit: Unit, mutation: Mutation) -> Optional[str]:
    """Check a standing note consolidate credits or annotates: it absorbs a note of the unit, credited right."""
    sources = _revoked_into(unit, mutation)
    if not sources:
        return "no note of the unit is absorbed into the note it " + ("credits" if mutation.action == "credit" else "annotates")
    if mutation.action == "credit":
        try:
            return _credit_problem(mutation.values, mutation.guard or {}, [source.guard or {} for source in sources])
        except (TypeError, ValueError, OverflowError):
            return "a date or count in it or its guards is not of its type"
    return None


def _revoked_into(unit: Unit, mutation: Mutation) -> list[Mutation]:
    own = mutation.record_id.lower()
    return [mu for mu in unit.mutations if mu.action == "revoke" and str(mu.values["ConsolidatedIntoNoteID"]).lower() == own]


def _render(scope: tuple) -> str:
    names = ("agent", "company", "user", "entity", "record", "secondary")
    shown = [f"{n}={v}" for n, v in zip(names, scope, strict=True) if v is not None]
    return "(" + (", ".join(shown) or "everyone") + ")"
