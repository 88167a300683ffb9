"""Shared fixtures: real databases (SQLite always, PostgreSQL when reachable; required in CI)."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memctl.settings import Settings, resolve
from memctl.store import schema as store_schema
from memctl.store.engine import make_engine

PG_URL = os.environ.get("MEMCTL_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
IN_CI = bool(os.environ.get("CI"))


@dataclass
class Db:
    """A migrated, empty memory store and the settings that reach it."""

    backend: str
    settings: Settings
    engine: Engine
    path: Path

    @property
    def url(self) -> str:
        return self.settings.db_url

    def env(self) -> dict[str, str]:
        """Return environment variables that point a memctl subprocess at this store."""
        env = {"MEMCTL_DB_URL": self.settings.db_url}
        if self.settings.db_schema:
            env["MEMCTL_DB_SCHEMA"] = self.settings.db_schema
        return env


_pg_state: dict[str, object] = {}


def postgres_available() -> bool:
    """Return whether the PostgreSQL test server answers (cached per session)."""
    if "ok" not in _pg_state:
        try:
            engine = sa.create_engine(PG_URL)
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            engine.dispose()
            _pg_state["ok"] = True
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            _pg_state["ok"] = False
            _pg_state["why"] = str(exc).splitlines()[0]
    return bool(_pg_state["ok"])


def require_postgres() -> None:
    """Skip the test when PostgreSQL is unreachable, or fail it when running in CI."""
    if postgres_available():
        return
    message = f"PostgreSQL not reachable at {PG_URL}: {_pg_state.get('why')}"
    if IN_CI:
        pytest.fail(message + " (CI requires it)")
    pytest.skip(message)


def require_installed(module: str, what: str) -> None:
    """Skip the test when `module` is not installed, or fail it when running in CI (make venv installs it)."""
    import importlib.util

    if importlib.util.find_spec(module) is not None:
        return
    message = f"{module} is not installed ({what}); `make venv` installs it"
    if IN_CI:
        pytest.fail(message + " (CI requires it)")
    pytest.skip(message)


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """Yield a fresh, empty PostgreSQL schema name, dropped afterwards."""
    require_postgres()
    name = "t_" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(PG_URL)
    yield name
    with engine.begin() as conn:
        conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    engine.dispose()


def make_db(backend: str, tmp_path: Path, schema: str | None = None, migrate: bool = True) -> Db:
    """Build settings and an engine for `backend` (sqlite file in tmp_path, or a PG schema)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    # One question per request unless a test asks for more (tests/test_batching.py): most tests
    # script or inspect the stub's replies question by question.
    one = {"questions_per_call": 1}
    if backend == "sqlite":
        settings = resolve(flags={"db_url": f"sqlite:///{tmp_path / 'memctl.db'}", **one}, environ={}, cwd=tmp_path)
    else:
        settings = resolve(flags={"db_url": PG_URL, "db_schema": schema, **one}, environ={}, cwd=tmp_path)
    engine = make_engine(settings)
    if migrate:
        store_schema.upgrade(engine, settings)
    return Db(backend, settings, engine, tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    """Yield a migrated empty store on each backend."""
    if request.param == "sqlite":
        store = make_db("sqlite", tmp_path)
        yield store
        store.engine.dispose()
        return
    schema = request.getfixturevalue("pg_schema")
    store = make_db("postgresql", tmp_path, schema=schema)
    yield store
    store.engine.dispose()


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Db]:
    """Yield a migrated empty SQLite store."""
    store = make_db("sqlite", tmp_path)
    yield store
    store.engine.dispose()


@dataclass
class MjDb(Db):
    """A MemberJunction database (tests/mj_fixture.py) with memctl upgraded on top of it."""

    mj_version: str = "newest"


def make_mj_db(tmp_path: Path, schema: str, version: str, migrate: bool = True) -> MjDb:
    """Build MJ's tables at `version` in `schema`, then (unless told not to) run memctl's `db upgrade` path on it."""
    from mj_fixture import mj_database

    raw = sa.create_engine(PG_URL)
    mj_database(raw, schema, version)
    raw.dispose()
    store = make_db("postgresql", tmp_path, schema=schema, migrate=migrate)
    return MjDb(store.backend, store.settings, store.engine, store.path, mj_version=version)


@pytest.fixture(params=["newest", "older"])
def mj_db(request: pytest.FixtureRequest, pg_schema: str, tmp_path: Path) -> Iterator[MjDb]:
    """Yield a MemberJunction database (newest and older MJ) on PostgreSQL, upgraded by memctl."""
    store = make_mj_db(tmp_path, pg_schema, request.param)
    yield store
    store.engine.dispose()


@pytest.fixture
def stub() -> Iterator["LLMStub"]:
    """The scripted OpenAI-compatible stub server on 127.0.0.1 (tests/llmstub.py), one per test."""
    from llmstub import LLMStub

    with LLMStub() as server:
        yield server
