"""Messages (issue 14): a read-only store, a one-character API key, and driver errors.

- A store memctl may not write to (a SQLite file opened read-only; a PostgreSQL connection whose
  transactions are read-only) is exit 2 with one sentence naming the store, no SQL; the commands
  that only read still work.
- A secret is masked where it stands as a secret: an API key "x" does not turn "unexpected"
  into "une***pected", while a long key is masked wherever it appears.
- A write the database refuses (a trigger on SQLite, a CHECK constraint whose PostgreSQL error
  carries a "Failing row contains (...)" detail) fails the phase with the driver's own message:
  the note text in the statement's parameters or in the row is printed and recorded nowhere.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from urllib.parse import quote

import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import Store
from llmstub import LLMStub, Reply
from memctl.cli import app
from memctl.llm.client import LLMClient
from memctl.llm.replies import ContradictionReply
from memctl.settings import mask_secrets, resolve
from memctl.store import models as m
from memctl.store.engine import scrub

PRIVATE = "zebra4711"


def cli(url: str, db: Db, *args: str) -> list[str]:
    return ["--db-url", url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), *args]


def read_only_url(db: Db) -> str:
    if db.backend == "sqlite":
        return f"sqlite:///file:{db.path / 'memctl.db'}?mode=ro&uri=true"
    return db.url + "?options=" + quote("-c default_transaction_read_only=on")


def test_read_only_store_is_exit_2_with_one_sentence(db: Db) -> None:
    Store(db.engine).note("The user prefers email.")
    url = read_only_url(db)
    runner = CliRunner()
    for command in (["dream", "--force"], ["archive"]):
        result = runner.invoke(app, cli(url, db, *command))
        assert result.exit_code == 2, result.output
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("memctl: error: cannot write to ") and "read-only" in line
        assert "INSERT" not in line and "[SQL" not in line and "unexpected" not in line
    # reading still works
    assert runner.invoke(app, cli(url, db, "orient")).exit_code == 0
    assert runner.invoke(app, cli(url, db, "verify")).exit_code == 0


def test_one_character_api_key_does_not_mangle_messages(tmp_path) -> None:
    missing = tmp_path / "no-such-dir" / "box.db"
    result = CliRunner().invoke(app, ["--db-url", f"sqlite:///{missing}", "dream"], env={"MEMCTL_LLM_API_KEY": "x"})
    assert result.exit_code == 2
    assert "box.db" in result.stderr and "***" not in result.stderr

    settings = resolve(flags={"llm_api_key": "x", "db_url": "sqlite:///memctl.db"}, environ={})
    assert scrub("unexpected box: the key x was refused (key=x)", settings) == "unexpected box: the key *** was refused (key=***)"


def test_long_secret_is_masked_wherever_it_appears() -> None:
    key = "sk-live-0123456789abcdef"
    assert mask_secrets(f"Authorization: Bearer {key}; url?key={key}&x=1; joined:{key}tail", [key]) == (
        "Authorization: Bearer ***; url?key=***&x=1; joined:***tail"
    )
    assert mask_secrets("password pw in pwd, pw.txt and pw.", ["pw"]) == "password *** in pwd, pw.txt and ***."


def test_llm_error_with_a_one_character_key_keeps_its_words() -> None:
    with LLMStub() as stub:
        stub.script(Reply.error(401, "Incorrect API key provided: x. Expected an sk- key; unexpected."))
        client = LLMClient(stub.base_url, "x", "stub-model", max_retries=0)
        result = client.complete_json("system", "user", ContradictionReply, "contradiction_reply")
        client.close()
    assert result.reply is None
    assert "provided: ***." in result.error and "Expected" in result.error and "unexpected" in result.error


def seed_cluster(db: Db) -> list[str]:
    """Three near-identical notes of one partition: the consolidate phase merges them into one new note."""
    store = Store(db.engine, datetime.now(timezone.utc))
    agent = store.agent()
    texts = [
        f"Alice keeps her gym locker code {PRIVATE} in her wallet.",
        f"Alice keeps her gym locker code {PRIVATE} in her wallet, she said.",
        f"Alice said she keeps her gym locker code {PRIVATE} in her wallet.",
    ]
    return [store.note(t, AgentID=agent, age_days=3 + i) for i, t in enumerate(texts)]


def refuse_new_notes(db: Db) -> None:
    """Make the database refuse the consolidated note: a trigger (SQLite), a CHECK constraint (PostgreSQL)."""
    with db.engine.begin() as conn:
        if db.backend == "sqlite":
            conn.exec_driver_sql(
                'CREATE TRIGGER test_refuse BEFORE INSERT ON "AIAgentNote" BEGIN SELECT RAISE(ABORT, \'refused by a test trigger\'); END'
            )
        else:
            conn.exec_driver_sql(f'ALTER TABLE "{db.settings.db_schema}"."AIAgentNote" ADD CONSTRAINT test_refuse CHECK ("ConsolidationCount" < 1)')


def test_driver_error_never_prints_note_text(db: Db) -> None:
    notes = seed_cluster(db)
    refuse_new_notes(db)
    with LLMStub() as stub:
        env = {"MEMCTL_LLM_BASE_URL": stub.base_url, "MEMCTL_LLM_MODEL": "stub-model", "MEMCTL_LLM_API_KEY": "sk-messages-test-key"}
        result = CliRunner().invoke(app, cli(db.url, db, "consolidate", "--json"), env=env)
        assert stub.chat_requests, "the phase never asked to merge the cluster"

    assert result.exit_code == 1, result.output
    printed = result.stdout + result.stderr
    assert PRIVATE not in printed
    report = json.loads(result.stdout)
    [phase] = report["phases"]
    assert phase["outcome"] == "failed"
    assert ("refused by a test trigger" if db.backend == "sqlite" else 'violates check constraint "test_refuse"') in phase["error"]
    with db.engine.connect() as conn:
        errors = [r for r in conn.execute(sa.select(m.run.c.ErrorMessage, m.run.c.Message)).all()]
        errors += [r for r in conn.execute(sa.select(m.run_step.c.ErrorMessage, m.run_step.c.OutputData)).all()]
        statuses = {r.Status for r in conn.execute(sa.select(m.note.c.Status).where(m.note.c.ID.in_(notes)))}
    assert all(PRIVATE not in (value or "") for row in errors for value in row)
    assert statuses == {"Active"}
