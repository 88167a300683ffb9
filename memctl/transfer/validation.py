"""Import, step one: every line parsed and checked against its columns' rules (memctl's models
and the target's unmodelled columns) without writing anything; the first bad line is an error."""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TextIO

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import False_, True_
from sqlalchemy.sql.functions import FunctionElement

from memctl.errors import InputError
from memctl.store import models
from memctl.store.engine import read
from memctl.store.live import extra_columns, live_table
from memctl.store.live import self_references as reflected_self_references
from memctl.transfer.kinds import KINDS, SELF_REFERENCES

_INT32 = (-(2**31), 2**31 - 1)

# Value lists per (table, column); statuses differ between tables.
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("AIAgent", "Status"): models.AGENT_STATUSES,
    ("AIAgentNote", "Status"): models.NOTE_STATUSES,
    ("AIAgentNote", "Type"): models.NOTE_TYPES,
    ("AIAgentNote", "ProtectionTier"): models.PROTECTION_TIERS,
    ("AIAgentExample", "Status"): models.EXAMPLE_STATUSES,
    # MJ's own agents' runs and steps use more values than memctl writes (MJ's CHECKs allow them)
    ("AIAgentRun", "Status"): (*models.RUN_STATUSES, "Paused"),
    ("AIAgentRunStep", "Status"): models.RUN_STATUSES,
    ("AIAgentRunStep", "StepType"): (*models.STEP_TYPES, "Actions", "Chat", "ForEach", "Sub-Agent", "While"),
}
_DECIMAL_BOUNDS: dict[tuple[str, str], tuple[Decimal, Decimal]] = {
    ("AIAgentExample", "SuccessScore"): (Decimal(0), Decimal(100)),
}
# AccessCount may be negative (another application wrote it): an export must import again as it was.
_NON_NEGATIVE = frozenset({"ConsolidationCount"})

# Characters no backend stores in text: PostgreSQL rejects NUL, and UTF-8 has no lone surrogates.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class _Invalid(Exception):
    """A value breaks its column's rule; the message says how."""


_REQUIRED = object()  # no value, no default: the line must give one
_NOW = object()  # the import's `now`
_NEW_ID = object()  # a fresh uuid4


@dataclass(frozen=True)
class _ColumnRule:
    name: str
    check: Callable[[Any], Any]
    nullable: bool
    default: Any


@dataclass(frozen=True)
class KindRule:
    columns: tuple[_ColumnRule, ...]
    names: tuple[str, ...]
    index: dict[str, int]
    folded: dict[str, str]  # lowercased name -> name, to hint at a miscased key


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float, Decimal)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _show(value: str, limit: int = 60) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _string(value: Any, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise _Invalid(f"must be {what}, got {_json_type(value)}")
    return value


def _check_uuid(value: Any) -> str:
    text = _string(value, "a UUID string")
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise _Invalid(f"{_show(text)} is not a valid UUID") from None


def _iso_rule(kind: type, name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        text = _string(value, f"an ISO 8601 {name} string")
        try:
            return kind.fromisoformat(text)  # type: ignore[attr-defined]
        except ValueError:
            raise _Invalid(f"{_show(text)} is not an ISO 8601 {name}") from None

    return check


_parse_timestamp = _iso_rule(datetime, "timestamp")


def _check_timestamp(value: Any) -> datetime:
    moment = _parse_timestamp(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise _Invalid(f"{_show(value)} is out of range in UTC") from None


def _check_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise _Invalid(f"must be true or false, got {_json_type(value)}")
    return value


def _int_rule(minimum: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if type(value) is not int:
            raise _Invalid(f"must be an integer, got {_json_type(value) if not isinstance(value, Decimal) else value}")
        if not minimum <= value <= _INT32[1]:
            raise _Invalid(f"{value} is out of range ({minimum}..{_INT32[1]})")
        return value

    return check


def _decimal_rule(precision: int, scale: int, bounds: tuple[Decimal, Decimal] | None) -> Callable[[Any], Decimal]:
    step = Decimal(1).scaleb(-scale)
    largest = Decimal(10) ** (precision - scale) - step
    low, high = bounds or (-largest, largest)

    def check(value: Any) -> Decimal:
        if type(value) is bool or not isinstance(value, (int, Decimal)):
            raise _Invalid(f"must be a number, got {_json_type(value)}")
        number = Decimal(value)
        if not low - step <= number <= high + step:
            raise _Invalid(f"{value} is out of range ({low}..{high})")
        # Rounded as the database would (half up), so a stored, exported and reimported number is the same.
        number = number.quantize(step, rounding=ROUND_HALF_UP)
        if not low <= number <= high:
            raise _Invalid(f"{value} is out of range ({low}..{high})")
        return number.copy_abs() if number.is_zero() else number

    return check


def _text_rule(length: int | None, json_check: Callable[[str], None] | None = None) -> Callable[[Any], str]:
    """Return the check of a text column; `json_check` also checks text that must be JSON (kept as given)."""

    def check(value: Any) -> str:
        text = _string(value)
        if length is not None and len(text) > length:
            raise _Invalid(f"is {len(text)} characters long, at most {length} allowed")
        bad = _UNSTORABLE.search(text)
        if bad:
            what = "a NUL character" if bad.group() == "\x00" else "an unpaired surrogate"
            raise _Invalid(f"contains {what}, which cannot be stored")
        if json_check:
            json_check(text)
        return text

    return check


def _choice_rule(values: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = _string(value)
        if text not in values:
            raise _Invalid(f"{_show(text)} is not one of {', '.join(values)}")
        return text

    return check


def _reject_constant(name: str) -> Any:
    raise _Invalid(f"{name} is not a number JSON allows")


def _json_text(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise _Invalid(f"is not valid JSON text ({message})") from None
    except RecursionError:
        raise _Invalid("is not valid JSON text (nested too deeply)") from None


def _check_vector(text: str) -> None:
    vector = _json_text(text)
    if not isinstance(vector, list) or not vector:
        raise _Invalid("must be the text of a non-empty JSON array of numbers")
    if not {type(item) for item in vector} <= {int, float}:
        raise _Invalid("must be the text of a JSON array of numbers only")
    if not all(map(math.isfinite, vector)):
        raise _Invalid("must hold finite numbers only")


def _check_object(text: str) -> None:
    if not isinstance(_json_text(text), dict):
        raise _Invalid("must be the text of a JSON object")


def _check_uuid_array(text: str) -> None:
    items = _json_text(text)
    if not isinstance(items, list):
        raise _Invalid("must be the text of a JSON array of UUIDs")
    for item in items:
        try:
            _check_uuid(item)
        except _Invalid:
            shown = _show(item) if isinstance(item, str) else _json_type(item)
            raise _Invalid(f"holds {shown}, which is not a UUID") from None


_JSON_TEXT_CHECKS = {
    "EmbeddingVector": _check_vector,
    "SecondaryScopes": _check_object,
    "DerivedFromNoteIDs": _check_uuid_array,
}


def _value_rule(table: sa.Table, column: sa.Column[Any]) -> Callable[[Any], Any]:
    column_type = column.type
    key = (table.name, column.name)
    if isinstance(column_type, models.UTCDateTime):
        return _check_timestamp
    if isinstance(column_type, sa.Uuid):
        return _check_uuid
    if isinstance(column_type, sa.Boolean):
        return _check_bool
    if isinstance(column_type, sa.Integer):
        return _int_rule(0 if column.name in _NON_NEGATIVE else _INT32[0])
    if isinstance(column_type, sa.Numeric):
        assert column_type.precision is not None and column_type.scale is not None
        return _decimal_rule(column_type.precision, column_type.scale, _DECIMAL_BOUNDS.get(key))
    if isinstance(column_type, sa.String):
        if key in _CHOICES:
            return _choice_rule(_CHOICES[key])
        return _text_rule(column_type.length, _JSON_TEXT_CHECKS.get(column.name))
    raise TypeError(f"no import rule for {table.name}.{column.name} ({column_type!r})")


def _default(column: sa.Column[Any]) -> Any:
    """Return the value a missing column takes: the model's server default, or _REQUIRED."""
    if column.primary_key:
        return _NEW_ID
    if column.server_default is None:
        return None if column.nullable else _REQUIRED
    arg = getattr(column.server_default, "arg", None)
    if isinstance(arg, True_):
        return True
    if isinstance(arg, False_):
        return False
    if isinstance(arg, FunctionElement):
        return _NOW
    if isinstance(arg, str):
        return int(arg) if isinstance(column.type, sa.Integer) else arg
    raise TypeError(f"no import default for {column.table.name}.{column.name} ({arg!r})")


def _kind_rule(table: sa.Table) -> KindRule:
    columns = tuple(_ColumnRule(c.name, _value_rule(table, c), bool(c.nullable), _default(c)) for c in table.columns)
    names = tuple(rule.name for rule in columns)
    assert names[0] == "ID"
    return KindRule(columns, names, {n: i for i, n in enumerate(names)}, {n.lower(): n for n in names})


RULES: dict[str, KindRule] = {kind: _kind_rule(table) for kind, table in KINDS.items()}


_OMIT = object()  # an unmodelled column left out of a line: the database's default applies


def _check_binary(value: Any) -> bytes:
    text = _string(value, "a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _Invalid(f"{_show(text)} is not base64") from None


def _check_naive_timestamp(value: Any) -> datetime:
    """Parse a timestamp for a column without a time zone: kept as given (an offset is turned into UTC)."""
    moment = _parse_timestamp(value)
    return moment if moment.tzinfo is None else moment.astimezone(timezone.utc).replace(tzinfo=None)


def _check_number(value: Any) -> Decimal:
    if type(value) is bool or not isinstance(value, (int, Decimal, str)):
        raise _Invalid(f"must be a number, got {_json_type(value)}")
    try:
        number = Decimal(value)
    except ArithmeticError:
        raise _Invalid(f"{_show(value)} is not a number") from None
    if not number.is_finite():
        raise _Invalid(f"{value} is not a finite number")
    return number


def _check_integer(value: Any) -> int:
    if type(value) is not int:
        raise _Invalid(f"must be an integer, got {_json_type(value)}")
    return value


def _extra_rule(column: sa.Column[Any]) -> _ColumnRule:
    """Return the rule of a column the target has and memctl does not model (by its reflected type)."""
    column_type = column.type
    check: Callable[[Any], Any]
    if isinstance(column_type, sa.LargeBinary):
        check = _check_binary
    elif isinstance(column_type, sa.Uuid):
        check = _check_uuid
    elif isinstance(column_type, sa.DateTime):
        check = _check_timestamp if getattr(column_type, "timezone", False) else _check_naive_timestamp
    elif isinstance(column_type, sa.Date):
        check = _iso_rule(date, "date")
    elif isinstance(column_type, sa.Time):
        check = _iso_rule(time, "time")
    elif isinstance(column_type, sa.Boolean):
        check = _check_bool
    elif isinstance(column_type, sa.Integer):
        check = _check_integer
    elif isinstance(column_type, sa.Numeric):
        check = (lambda v: float(_check_number(v))) if isinstance(column_type, sa.Float) else _check_number
    elif isinstance(column_type, sa.String):
        check = _text_rule(column_type.length)
    else:
        check = lambda v: v  # noqa: E731 - a type reflection could not name: the database decides
    required = not column.nullable and column.server_default is None
    return _ColumnRule(column.name, check, bool(column.nullable), _REQUIRED if required else _OMIT)


@dataclass(frozen=True)
class Target:
    """What the target database has beyond memctl's models: per kind, its unmodelled columns' rules."""

    extras: dict[str, dict[str, _ColumnRule]]
    self_references: dict[str, list[str]]  # kind -> its unmodelled self-referencing columns
    drop_unknown: bool = False


def read_target(engine: Engine, drop_unknown: bool) -> Target:
    extras: dict[str, dict[str, _ColumnRule]] = {}
    self_references: dict[str, list[str]] = {}
    with read(engine) as conn:
        for kind, model in KINDS.items():
            extras[kind] = {c.name: _extra_rule(c) for c in extra_columns(live_table(conn, model), model)}
            self_references[kind] = [column for column in reflected_self_references(conn, model) if column in extras[kind]]
    return Target(extras, self_references, drop_unknown)


class _FieldError(Exception):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")


@dataclass
class Rows:
    """The validated rows of one kind, in file order, with the line each came from."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    extras: list[dict[str, Any]] = field(default_factory=list)  # unmodelled columns, per row
    lines: list[int] = field(default_factory=list)
    line_of: dict[str, int] = field(default_factory=dict)  # ID -> line


def _lines(source: TextIO | str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) from a text stream or a UTF-8 file (an initial BOM is ignored)."""
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as handle:
                # Decoded line by line, so a bad byte is reported with its exact line number.
                for number, raw in enumerate(handle, 1):
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise InputError(f"line {number}: not valid UTF-8 (byte {exc.start + 1} of the line)") from None
                    yield number, text.lstrip("\ufeff") if number == 1 else text
        except OSError as exc:
            raise InputError(f"cannot read {os.fspath(source)}: {exc.strerror}") from None
        return
    for number, text in enumerate(source, 1):
        yield number, text.lstrip("\ufeff") if number == 1 else text


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _FieldError(key, "appears twice in the object")
            seen.add(key)
    return record


def _parse(text: str) -> dict[str, Any]:
    try:
        record = json.loads(text, parse_float=Decimal, parse_constant=_reject_constant, object_pairs_hook=_object_without_duplicates)
    except json.JSONDecodeError as exc:
        raise _FieldError("invalid JSON", f"{exc.msg} (column {exc.colno})") from None
    except _Invalid as exc:
        raise _FieldError("invalid JSON", str(exc)) from None
    except RecursionError:
        raise _FieldError("invalid JSON", "nested too deeply") from None
    if not isinstance(record, dict):
        raise _FieldError("invalid record", f"expected a JSON object, got {_json_type(record)}")
    return record


def _checked(rule: _ColumnRule, value: Any) -> Any:
    if value is None:
        if not rule.nullable:
            raise _FieldError(rule.name, "must not be null")
        return None
    try:
        return rule.check(value)
    except _Invalid as exc:
        raise _FieldError(rule.name, str(exc)) from None


def _validate(record: dict[str, Any], now: datetime, target: Target) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """Return (kind, row in column order, unmodelled columns) for one parsed line, or raise _FieldError."""
    if "kind" not in record:
        raise _FieldError("kind", "missing")
    kind = record.pop("kind")
    if not isinstance(kind, str) or kind not in RULES:
        shown = _show(kind) if isinstance(kind, str) else _json_type(kind)
        raise _FieldError("kind", f"unknown kind {shown}, expected one of {', '.join(KINDS)}")
    rule = RULES[kind]
    unmodelled = target.extras[kind]
    extras: dict[str, Any] = {}
    for key in record:
        if key in rule.index:
            continue
        if key not in unmodelled:
            hint = rule.folded.get(key.lower()) or next((n for n in unmodelled if n.lower() == key.lower()), None)
            if hint:
                raise _FieldError(key, f"unknown column for kind {kind} (did you mean {hint}?)")
            if target.drop_unknown:
                continue
            raise _FieldError(key, f"the target's {KINDS[kind].name} table has no such column (--drop-unknown-columns imports the file without it)")
        extras[key] = _checked(unmodelled[key], record[key])
    for extra in unmodelled.values():
        if extra.name not in record and extra.default is _REQUIRED:
            raise _FieldError(extra.name, f"missing (the target's {KINDS[kind].name} table requires it)")
    row: list[Any] = []
    for column in rule.columns:
        if column.name in record:
            row.append(_checked(column, record[column.name]))
        elif column.default is _REQUIRED:
            raise _FieldError(column.name, f"missing (required for kind {kind})")
        elif column.default is _NOW:
            row.append(now)
        elif column.default is _NEW_ID:
            row.append(str(uuid.uuid4()))
        else:
            row.append(column.default)
    reference = SELF_REFERENCES.get(kind)
    if reference and row[rule.index[reference]] == row[0]:
        raise _FieldError(reference, "a row cannot point at itself")
    return kind, tuple(row), extras


def read_records(source: TextIO | str | os.PathLike[str], now: datetime, target: Target) -> dict[str, Rows]:
    """Parse and validate every line; raise InputError at the first bad one."""
    batch = {kind: Rows() for kind in KINDS}
    for number, text in _lines(source):
        if not text.strip():
            continue
        try:
            kind, row, extras = _validate(_parse(text), now, target)
        except _FieldError as exc:
            raise InputError(f"line {number}: {exc}") from None
        rows = batch[kind]
        first = rows.line_of.get(row[0])
        if first is not None:
            raise InputError(f"line {number}: ID: duplicate of line {first} ({kind} {row[0]})")
        rows.line_of[row[0]] = number
        rows.rows.append(row)
        rows.extras.append(extras)
        rows.lines.append(number)
    return batch
