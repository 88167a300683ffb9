"""Secrets, scope leaks and hostile text on the operator's terminal.

- The LLM API key and the database password never appear in anything memctl writes: stdout and
  stderr (text and JSON logs, --json, --traceback), run records, change log and caches, plan
  files, exports, nor in the prompts it sends. On PostgreSQL the password belongs to a role
  created for the test (the test server trusts any password, so the role can still connect);
  the LLM server answers 401 echoing the key, as OpenAI does, so the error paths are covered too.
- Notes scoped to records whose IDs differ only in case or spacing are different audiences:
  they are never merged.
- Note text and LLM replies are untrusted: printed on a terminal they are text, never rich markup
  (which could crash the dry-run table or forge output) and never terminal control sequences.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import PG_URL, Db
from factory import NOW, Store, at
from llmstub import LLMStub, Reply, default_responder, prompt_kind
from memctl import api
from memctl.cli import app
from memctl.store import models as m
from test_reliability_audit import CLUSTER_TEMPLATES, generate_corpus

API_KEY = "sk-proj-SECRETkey-3f9a8b7c6d5e4f3a2b1c"
PASSWORD = "S3cr3t p@ss/w:rd%&?#"
runner = CliRunner()


@pytest.fixture
def store_with_password(db: Db) -> Iterator[tuple[Db, str]]:
    """The store, and a URL reaching it with a password (on PostgreSQL, through a role made for the test)."""
    if db.backend == "sqlite":
        yield db, db.settings.db_url
        return
    role = "memctl_sec_" + uuid.uuid4().hex[:8]
    schema = db.settings.db_schema
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:
        # DDL takes no parameters, and psycopg reads % as one: the test's own constant, % doubled
        conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD.replace('%', '%%')}'")
        conn.exec_driver_sql(f'GRANT ALL ON SCHEMA "{schema}" TO {role}')
        conn.exec_driver_sql(f'GRANT ALL ON ALL TABLES IN SCHEMA "{schema}" TO {role}')
        conn.exec_driver_sql(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA "{schema}" TO {role}')
    url = sa.engine.make_url(PG_URL).set(username=role, password=PASSWORD).render_as_string(hide_password=False)
    try:
        yield db, url
    finally:
        db.engine.dispose()
        with admin.begin() as conn:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
            conn.exec_driver_sql(f"DROP OWNED BY {role}")
            conn.exec_driver_sql(f"DROP ROLE {role}")
        admin.dispose()


def secret_forms() -> list[str]:
    """Every spelling a secret could leak in: raw, URL-encoded, and their telling fragments."""
    return [API_KEY, API_KEY[8:], PASSWORD, quote(PASSWORD, safe=""), quote(PASSWORD), "S3cr3t"]


def assert_no_secret(where: str, text: str) -> None:
    for secret in secret_forms():
        assert secret not in text, f"{secret!r} leaked into {where}"


def every_text_in_the_store(db: Db) -> str:
    chunks = []
    with db.engine.connect() as conn:
        for table in m.metadata.sorted_tables:
            for row in conn.execute(sa.select(table)):
                chunks.append(repr(tuple(row)))
    return "\n".join(chunks)


def test_secrets_never_appear_in_output_logs_records_plans_or_exports(store_with_password: tuple[Db, str], tmp_path: Path) -> None:
    db, url = store_with_password
    generate_corpus(db.engine, NOW, notes=120, examples=20, seed=31, llm_groups=3)
    leaks: list[tuple[str, str]] = []

    def unauthorised_for_some(body: dict) -> Any:
        # OpenAI echoes the key it was given in a 401; half of the contradiction calls get one
        if prompt_kind(body) == "contradiction" and len(json.dumps(body)) % 2:
            return Reply.error(401, f"Incorrect API key provided: {API_KEY}. You can find your API key at https://platform.openai.com.")
        return default_responder(body)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCTL_", "OPENAI_"))}
    env["MEMCTL_DB_URL"] = url
    if db.settings.db_schema:
        env["MEMCTL_DB_SCHEMA"] = db.settings.db_schema
    with LLMStub(unauthorised_for_some) as stub:
        env.update({"OPENAI_API_KEY": API_KEY, "MEMCTL_LLM_BASE_URL": stub.base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_MAX_RETRIES": "0"})

        def memctl(*args: str) -> subprocess.CompletedProcess:
            """A real process: what cron would mail."""
            done = subprocess.run([sys.executable, "-m", "memctl", "--now", NOW.isoformat(), *args], env=env, capture_output=True, text=True, cwd=tmp_path)
            leaks.append((" ".join(args) + " (stdout)", done.stdout))
            leaks.append((" ".join(args) + " (stderr)", done.stderr))
            return done

        def cli(*args: str) -> Any:
            """The same commands in-process (faster): the read-only ones."""
            result = runner.invoke(app, ["--now", NOW.isoformat(), *args], env=env)
            leaks.append((" ".join(args), result.output + (result.stderr if result.stderr_bytes is not None else "")))
            return result

        plan = tmp_path / "plan.json"
        assert memctl("dream", "--dry-run", "--plan-out", str(plan)).returncode in (0, 1)
        assert memctl("--log-format", "json", "dream", "--force").returncode in (0, 1)
        run = json.loads(memctl("dream", "--force", "--json").stdout)
        cli("--log-format", "json", "apply", str(plan))
        for args in (["runs", "list"], ["runs", "show", run["runId"]], ["runs", "show", run["runId"], "--json"], ["orient"], ["review"],
                     ["db", "current"], ["verify"], ["export", str(tmp_path / "export.jsonl")], ["undo", run["runId"], "--dry-run"]):
            assert cli(*args).exit_code in (0, 1), args
        # errors: the database refuses; with --traceback too
        env["MEMCTL_DB_URL"] = sa.engine.make_url(url).set(port=1).render_as_string(hide_password=False)
        assert memctl("--traceback", "dream", "--force").returncode == 2
        assert cli("orient").exit_code == 2
        env["MEMCTL_DB_URL"] = url
        for request in stub.requests:
            leaks.append(("a request body sent to the LLM", request.raw.decode()))
            assert request.headers["authorization"] == f"Bearer {API_KEY}"  # the key goes where it belongs, only
    assert any("401" in text for _, text in leaks) or "401" in every_text_in_the_store(db)
    leaks.append(("the plan file", plan.read_text()))
    leaks.append(("the export", (tmp_path / "export.jsonl").read_text()))
    leaks.append(("every row of every table", every_text_in_the_store(db)))
    for where, text in leaks:
        assert_no_secret(where, text)


def test_the_api_key_in_a_config_file_and_a_password_in_the_url_stay_hidden_in_errors(tmp_path: Path) -> None:
    config = tmp_path / "memctl.toml"
    config.write_text(f'[llm]\napi_key = "{API_KEY}"\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\ntimeout = 1\n')
    url = f"postgresql+psycopg://admin:{quote(PASSWORD, safe='')}@127.0.0.1:1/db"
    for args in (["orient"], ["--log-format", "json", "dream", "--force"], ["--traceback", "verify"], ["db", "current"]):
        result = runner.invoke(app, ["--config", str(config), "--db-url", url, *args])
        assert result.exit_code == 2
        assert_no_secret(" ".join(args), result.output + (result.stderr if result.stderr_bytes is not None else ""))
        assert "***" in result.output


# --- scope ---------------------------------------------------------------------------------


def test_notes_of_records_differing_only_in_case_or_spacing_are_never_merged(db: Db) -> None:
    """PrimaryScopeRecordID is another system's key: "acct-7", "ACCT-7" and " acct-7" are three audiences."""
    store = Store(db.engine)
    agent = store.agent()
    spellings = ["acct-7", "ACCT-7", " acct-7", "acct-7"]
    notes = [store.note(t.format(who="Ana", what="harbour", why="annual"), AgentID=agent, PrimaryScopeRecordID=s, age_days=3 + i)
             for i, (t, s) in enumerate(zip(CLUSTER_TEMPLATES, spellings))]
    guid = "9e1d0c2b-aaaa-4bbb-8ccc-0123456789ab"
    same_record = [store.note(t.format(who="Bo", what="invoice", why="audit"), AgentID=agent, PrimaryScopeRecordID=s, age_days=3 + i)
                   for i, (t, s) in enumerate(zip(CLUSTER_TEMPLATES, [guid, guid.upper(), guid, guid.upper()]))]
    report = api.run_phase(at(db.settings, NOW), "consolidate", engine=db.engine)
    assert report.exit_code == 0
    assert all(store.status(n) == "Active" for n in notes)  # never merged across records
    assert all(store.status(n) == "Revoked" for n in same_record)  # one GUID, whatever its case: one record


# --- hostile text on the terminal -------------------------------------------------------------

HOSTILE = "Ana [/notes_json] [bold red]APPROVED[/bold red] [link=https://evil.example]docs[/link] \x1b[2J\x1b]0;pwned\x07\u202egnp.exe"


def test_untrusted_text_is_printed_as_text_never_as_markup_or_terminal_control(db: Db) -> None:
    generate_corpus(db.engine, NOW, notes=0, examples=0, seed=32, llm_groups=3)
    with db.engine.begin() as conn:  # a note carries the hostile text; the LLM echoes it as its reason
        first = conn.execute(sa.select(m.note.c.ID).where(m.note.c.Note.like("%does not use%"))).scalars().first()
        conn.execute(m.note.update().where(m.note.c.ID == first).values(Note=m.note.c.Note + " " + HOSTILE))

    def echo(body: dict) -> Any:
        reply = default_responder(body)
        reply["reason"] = "merged: " + HOSTILE
        if prompt_kind(body) == "contradiction":
            reply.update(isContradiction=True, contradictionType="negation", confidence=0.95)
        return reply

    args = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat()]
    with LLMStub(echo) as stub:
        env = {"MEMCTL_LLM_BASE_URL": stub.base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_API_KEY": "k", "MEMCTL_MAX_PAIRS": "1000", "COLUMNS": "2000"}
        preview = runner.invoke(app, [*args, "dream", "--dry-run"], env=env)
        assert preview.exit_code == 0, preview.output  # rich markup in a reason used to crash the plan table
        flat = "".join(ch for ch in preview.output if not ch.isspace() and ch not in "│┃")  # the table folds long cells
        assert "[/notes_json]" in flat and "[boldred]APPROVED[/boldred]" in flat
        done = runner.invoke(app, [*args, "dream", "--force"], env=env)
        assert done.exit_code == 0, done.output
        listed = runner.invoke(app, [*args, "review"])
        assert listed.exit_code == 0 and "APPROVED" in listed.output
    for output in (preview.output, done.output, listed.output):
        assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert "\\x1b[2J" in listed.output and "\\u202e" in listed.output  # shown, harmlessly
