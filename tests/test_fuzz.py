"""Hostile input: fuzzed import files and config files, unreachable or wrong databases.

Import lines are mutated two ways: structurally (a key deleted, renamed, added, or set to any
JSON value: huge numbers, NaN, NUL and lone surrogates, nested arrays...) and byte by byte, as
atheris would (flips, inserts, deletions, truncations, splices of JSON punctuation). Config files
get random keys, sections and TOML values, and byte mutations. Every outcome must be a clean
one: exit 0 with everything imported, or exit 2 with `memctl: error:` naming the line (import)
or the key (config); never exit 3, never a traceback, and a failed import writes nothing.
A database that is unreachable, refuses the role, or is at a revision this memctl does not
know exits 2 with a clear message.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import PG_URL, Db, make_db, require_postgres
from factory import NOW
from memctl.cli import app
from memctl.demo import seed
from memctl.store import models as m
from memctl.transfer import export_records

runner = CliRunner()
ERROR_LINE = re.compile(r"memctl: error: line (\d+): ")
STORE_TABLES = [m.company, m.user, m.conversation, m.agent, m.note_type, m.note, m.example, m.run, m.run_step]


def valid_lines() -> list[str]:
    """A small import file that is valid: entities, notes (one revoked into another), examples."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = make_db("sqlite", Path(tmp))
        seed(db.engine, NOW)
        buffer = io.StringIO()
        export_records(db.engine, buffer, ["company", "user", "conversation", "agent", "note", "example"])
        db.engine.dispose()
    lines = buffer.getvalue().splitlines()
    keep = [line for line in lines if '"kind":"note"' not in line and '"kind":"example"' not in line]
    notes = [json.loads(line) for line in lines if '"kind":"note"' in line][:4]
    notes[1].update(Status="Revoked", ConsolidatedIntoNoteID=notes[0]["ID"])
    examples = [line for line in lines if '"kind":"example"' in line][:2]
    return keep + [json.dumps(n, separators=(",", ":")) for n in notes] + examples


LINES = valid_lines()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=80)
    | st.sampled_from(["", "\x00", "\ud800", "2026-13-45T99:00:00", "not-a-uuid", "Active", "x" * 5000, "1e400", str(uuid.uuid4())]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=4,
)
PUNCTUATION = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\", b"null", b"NaN", b"-", b"1e999", b"\x00", b"\xff", b"\xc3", b"\n", b"\r", b"\xef\xbb\xbf"]


@st.composite
def structured_mutation(draw: st.DrawFn, line: str) -> bytes:
    record = json.loads(line)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["delete", "set", "add", "rename", "kind"]))
        keys = sorted(record)
        if op == "delete" and keys:
            record.pop(draw(st.sampled_from(keys)))
        elif op == "set" and keys:
            record[draw(st.sampled_from(keys))] = draw(json_values)
        elif op == "add":
            record[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
        elif op == "rename" and keys:
            key = draw(st.sampled_from(keys))
            record[draw(st.sampled_from([key.lower(), key.upper(), key + " ", "_" + key]))] = record.pop(key)
        elif op == "kind":
            record["kind"] = draw(st.sampled_from(["note", "example", "run", "run_step", "agent", "Note", "", "notes"]) | json_values)
    return json.dumps(record, ensure_ascii=draw(st.booleans()), allow_nan=True).encode("utf-8", "surrogatepass")


@st.composite
def byte_mutation(draw: st.DrawFn, line: str) -> bytes:
    data = bytearray(line.encode())
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "splice", "duplicate"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 20))]
        elif op == "truncate":
            del data[at:]
        elif op == "splice":
            data[at : at + draw(st.integers(0, 3))] = draw(st.sampled_from(PUNCTUATION))
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 30))]
    return bytes(data)


@st.composite
def import_files(draw: st.DrawFn) -> tuple[bytes, int]:
    """A valid file with one line mutated; return it and the mutated line's number."""
    index = draw(st.integers(0, len(LINES) - 1))
    mutated = draw(st.one_of(structured_mutation(LINES[index]), byte_mutation(LINES[index])))
    lines = [line.encode() for line in LINES]
    lines[index] = mutated
    return b"\n".join(lines) + b"\n", index + 1


def counts(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() for t in STORE_TABLES}


def empty_store(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for table in reversed(STORE_TABLES):
            if table is m.note:
                conn.execute(m.note.update().values(ConsolidatedIntoNoteID=None))
            conn.execute(table.delete())


def db_args(db: Db) -> list[str]:
    return ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else [])]


def assert_clean_failure(result: Any, code: int = 2) -> str:
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, text
    assert result.exit_code == code, (result.exit_code, text, result.exception)
    assert "memctl: error: " in text, text
    return text


FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
# examples per run (import: per backend); raise them for a longer campaign, e.g. MEMCTL_FUZZ_EXAMPLES=5000
IMPORT_EXAMPLES = int(os.environ.get("MEMCTL_FUZZ_EXAMPLES", "120"))
CONFIG_EXAMPLES = int(os.environ.get("MEMCTL_FUZZ_EXAMPLES", "100"))


def test_the_unmutated_file_imports(db: Db, tmp_path: Path) -> None:
    path = tmp_path / "valid.jsonl"
    path.write_text("\n".join(LINES) + "\n")
    result = runner.invoke(app, [*db_args(db), "import", str(path)])
    assert result.exit_code == 0, result.output
    assert sum(counts(db.engine).values()) == len(LINES)


@settings(FUZZ, max_examples=IMPORT_EXAMPLES)
@given(case=import_files())
def test_fuzzed_import_lines_exit_0_or_2_naming_the_line_and_never_write_in_part(db: Db, tmp_path: Path, case: tuple[bytes, int]) -> None:
    content, mutated_line = case
    path = tmp_path / "fuzzed.jsonl"
    path.write_bytes(content)
    before = counts(db.engine)
    assert sum(before.values()) == 0
    result = runner.invoke(app, [*db_args(db), "import", str(path)])
    if result.exit_code == 0:
        assert "Traceback" not in result.output
        assert sum(counts(db.engine).values()) >= len(LINES) - 1  # a blank mutated line is skipped
        empty_store(db.engine)
        return
    text = assert_clean_failure(result)
    found = ERROR_LINE.search(text)
    assert found, text
    assert 1 <= int(found.group(1)) <= len(LINES)
    assert counts(db.engine) == before  # all or nothing: not one row written


def test_fuzzed_import_through_a_real_process_has_no_traceback_on_stderr(tmp_path: Path) -> None:
    """A few hostile files through the installed entry point: stderr is one error line."""
    store = make_db("sqlite", tmp_path / "store")
    hostile = [
        b'{"kind":"note","ID":"x"}\n',
        b"\xff\xfe\x00\x00garbage\n",
        b'{"kind":"note","Note":"' + b"\\ud800" + b'","AgentID":null}\n',
        b'{"kind":"example","SuccessScore":1e400}\n',
        b"[" * 100_000 + b"\n",
        (LINES[0] + "\n" + LINES[0] + "\n").encode(),
    ]
    for number, content in enumerate(hostile):
        path = tmp_path / f"h{number}.jsonl"
        path.write_bytes(content)
        done = subprocess.run([sys.executable, "-m", "memctl", "--db-url", store.settings.db_url, "import", str(path)], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 2, (content[:80], done.stderr)
        assert "Traceback" not in done.stderr and ERROR_LINE.search(done.stderr), done.stderr
        assert done.stdout == ""
    assert sum(counts(store.engine).values()) == 0


# --- config files --------------------------------------------------------------------------

KNOWN_KEYS = ["gate_hours", "gate_min_new_notes", "lease_seconds", "prune_cap", "max_pairs", "llm_timeout", "llm_model", "embed_provider",
              "confidence_floor", "cluster_min_size", "cluster_max_size", "now", "db_schema", "note_retention_days", "consolidate_threshold"]
SECTIONS = ["llm", "db", "gate", "embed", "prune", "lock", "weird", "consolidate"]
VALID_CONFIG = 'gate_hours = 12\nprune_cap = 100\n[llm]\nmodel = "gpt-4o-mini"\ntimeout = 30\n[gate]\nmin_new_notes = 0\n'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)  # inf, -inf and nan are TOML floats too
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return str(value)


toml_scalars = (st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | st.text(max_size=40)
                | st.sampled_from(["1979-05-27T07:32:00Z", "hashing", "stored", "-1", "1e9", "", "\x00"]))
toml_values = st.recursive(toml_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=2), max_leaves=4)


@st.composite
def config_files(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        lines = []
        for _ in range(draw(st.integers(1, 5))):
            key = draw(st.sampled_from(KNOWN_KEYS) | st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,15}", fullmatch=True))
            value = draw(toml_values)
            if isinstance(value, dict):
                value = [value]
            lines.append(f"{key} = {toml_value(value)}")
        if draw(st.booleans()):
            lines.append(f"[{draw(st.sampled_from(SECTIONS))}]")
            lines.append(f"{draw(st.sampled_from(['model', 'timeout', 'url', 'schema', 'hours', 'x']))} = {toml_value(draw(toml_scalars))}")
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    return draw(byte_mutation(VALID_CONFIG))


@settings(FUZZ, max_examples=CONFIG_EXAMPLES)
@given(content=config_files())
def test_fuzzed_config_files_exit_0_or_2_naming_the_key(sqlite_db: Db, tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "memctl.toml"
    path.write_bytes(content)
    result = runner.invoke(app, ["--config", str(path), "--db-url", sqlite_db.settings.db_url, "orient"])
    if result.exit_code == 0:
        return
    text = assert_clean_failure(result)
    message = text.split("memctl: error: ", 1)[1]
    assert str(path) in message or "setting '" in message or "db_schema" in message or "SQLite has no schemas" in message, message


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("gate_hourz = 3\n", "gate_hourz"),
        ("gate_hours = 'soon'\n", "gate_hours"),
        ("[llm]\ntimeout = -1\n", "llm_timeout"),
        ("[llm]\ntimeout = nan\n", "llm_timeout"),
        ("lease_seconds = 1\n", "lease_seconds"),
        ("prune_cap = 2.5\n", "prune_cap"),
        ("[nonsense]\nx = 1\n", "[nonsense]"),
        ("[llm.deep]\nx = 1\n", "[llm.deep]"),
        ("now = 1979-05-27T07:32:00Z\n", "now"),
        ("gate_hours = = 3\n", "invalid TOML"),
        ("db_schema = 'x; DROP TABLE y'\n", "db_schema"),
    ],
)
def test_bad_config_keys_and_values_exit_2_naming_them(sqlite_db: Db, tmp_path: Path, config: str, named: str) -> None:
    path = tmp_path / "memctl.toml"
    path.write_text(config)
    result = runner.invoke(app, ["--config", str(path), "--db-url", sqlite_db.settings.db_url, "orient"])
    assert named in assert_clean_failure(result)


def test_a_config_file_that_is_not_utf8_or_missing_exits_2(sqlite_db: Db, tmp_path: Path) -> None:
    path = tmp_path / "memctl.toml"
    path.write_bytes(b"gate_hours = 3\n\xff\xfe\n")
    assert "not UTF-8" in assert_clean_failure(runner.invoke(app, ["--config", str(path), "--db-url", sqlite_db.settings.db_url, "orient"]))
    missing = runner.invoke(app, ["--config", str(tmp_path / "nope.toml"), "--db-url", sqlite_db.settings.db_url, "orient"])
    assert "cannot read config file" in assert_clean_failure(missing)


# --- databases that are not there, not ours, or not at our revision -----------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://memctl:pw@127.0.0.1:1/test", "cannot connect"),
        ("sqlite:////nonexistent-dir/sub/memctl.db", "cannot connect"),
        ("mysql://u:pw@127.0.0.1/db", "no driver"),
        ("not a url", "not a database URL"),
    ],
)
def test_unreachable_or_unusable_databases_exit_2(url: str, expected: str) -> None:
    for command in (["orient"], ["dream", "--force"], ["import", "/dev/null"], ["export"], ["verify"]):
        result = runner.invoke(app, ["--db-url", url, *command])
        text = assert_clean_failure(result)
        assert expected in text and "pw@" not in text


def test_a_file_that_is_not_a_database_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an SQLite database, just text " * 100)
    text = assert_clean_failure(runner.invoke(app, ["--db-url", f"sqlite:///{path}", "dream", "--force"]))
    assert "not a database" in text


def test_wrong_postgres_credentials_exit_2() -> None:
    """A role that does not exist, a database that does not exist (the server trusts any password)."""
    require_postgres()
    base = sa.engine.make_url(PG_URL)
    for url, expected in (
        (base.set(username="no_such_role_memctl", password="Wrong-Pass-1"), 'role "no_such_role_memctl" does not exist'),
        (base.set(database="no_such_db_memctl", password="Wrong-Pass-1"), 'database "no_such_db_memctl" does not exist'),
    ):
        text = assert_clean_failure(runner.invoke(app, ["--db-url", url.render_as_string(hide_password=False), "dream", "--force"]))
        assert expected in text and "Wrong-Pass-1" not in text and "***" in text


def test_a_database_not_at_head_exits_2(db: Db) -> None:
    """PostgreSQL without memctl's schema, and any store at a revision this memctl does not ship."""
    if db.backend == "postgresql":
        empty = "t_" + uuid.uuid4().hex[:12]
        engine = sa.create_engine(PG_URL)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{empty}"')
        try:
            text = assert_clean_failure(runner.invoke(app, ["--db-url", PG_URL, "--db-schema", empty, "dream", "--force"]))
            assert "has no memctl schema" in text and "memctl db upgrade" in text
        finally:
            with engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA "{empty}" CASCADE')
            engine.dispose()
    with db.engine.begin() as conn:  # a newer memctl upgraded this store
        conn.execute(sa.text(f"UPDATE {'%s.' % db.settings.db_schema if db.settings.db_schema else ''}memctl_alembic_version SET version_num = '9999'"))
    for command in (["dream", "--force"], ["db", "upgrade"], ["orient"]):
        text = assert_clean_failure(runner.invoke(app, [*db_args(db), *command]))
        assert "revision 9999" in text and "does not know" in text
    current = runner.invoke(app, [*db_args(db), "db", "current"])
    assert current.exit_code == 0 and "unknown to this memctl" in current.output
