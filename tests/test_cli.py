"""The command line: help everywhere, exit codes, masked secrets, a real subprocess for the README."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memctl.cli import app
from memctl.store import schema

runner = CliRunner()

COMMANDS = [
    [], ["dream"], ["consolidate"], ["contradictions"], ["prune"], ["archive"], ["apply"], ["undo"], ["verify"], ["orient"],
    ["db"], ["db", "upgrade"], ["db", "current"], ["runs"], ["runs", "list"], ["runs", "show"], ["import"], ["export"], ["demo"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "memctl")
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output and len(result.output) > 100


def test_wrong_database_url_exits_2_with_the_password_masked(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--db-url", "postgresql+psycopg://admin:s3cret-pw@127.0.0.1:1/nowhere", "orient"])
    assert result.exit_code == 2
    assert "s3cret-pw" not in result.output and "admin:***@" in result.output
    assert "cannot connect" in result.output


def test_malformed_database_url_exits_2() -> None:
    result = runner.invoke(app, ["--db-url", "not a url", "orient"])
    assert result.exit_code == 2 and "not a database URL" in result.output


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("gate_hourz = 3\n")
    result = runner.invoke(app, ["--config", str(config), "orient"])
    assert result.exit_code == 2 and "gate_hourz" in result.output


def test_bad_shard_and_agent_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert runner.invoke(app, ["--db-url", url, "prune", "--shard", "3/2"]).exit_code == 2
    assert runner.invoke(app, ["--db-url", url, "prune", "--agent", "bob"]).exit_code == 2


def test_db_upgrade_sql_with_a_dialect_needs_no_database() -> None:
    result = runner.invoke(app, ["--db-url", "mssql+pyodbc://u:p@nowhere/db", "--db-schema", "__mj", "db", "upgrade", "--sql", "--dialect", "mssql"])
    assert result.exit_code == 0, result.output
    assert "CREATE TABLE __mj.[AIAgentNote]" in result.output


def test_db_upgrade_and_current(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    first = runner.invoke(app, ["--db-url", url, "db", "upgrade"])
    head = schema.head_revision()
    assert first.exit_code == 0 and f"upgraded (empty) -> {head}" in first.output
    again = runner.invoke(app, ["--db-url", url, "db", "upgrade"])
    assert f"already at revision {head}" in again.output
    assert "at head" in runner.invoke(app, ["--db-url", url, "db", "current"]).output


def test_orient_and_runs_on_an_empty_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    result = runner.invoke(app, ["--db-url", url, "orient", "--json"])
    assert result.exit_code == 0
    view = json.loads(result.output)
    assert view["gate"]["open"] is True and view["lastRun"] is None
    assert json.loads(runner.invoke(app, ["--db-url", url, "runs", "list", "--json"]).output) == []
    assert runner.invoke(app, ["--db-url", url, "runs", "show", "0123"]).exit_code == 2


def test_readme_demo_runs_as_a_real_subprocess(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
    result = subprocess.run([sys.executable, "-m", "memctl", "demo", "--dir", str(tmp_path / "demo"), "--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "completed"
    phases = {p["phase"]: p for p in report["phases"]}
    assert list(phases) == ["consolidate", "contradictions", "prune", "archive"]
    assert phases["prune"]["applied"] >= 4 and phases["archive"]["applied"] >= 5
    check = subprocess.run([sys.executable, "-m", "memctl", "--db-url", f"sqlite:///{tmp_path / 'demo' / 'memctl.db'}", "verify"], capture_output=True, text=True, env=env, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_entry_point_sets_the_process_settings_and_the_library_leaves_them_alone() -> None:
    """Only the console script changes the collector's thresholds and OpenBLAS's threads."""
    script = (
        "import gc, os, sys\n"
        "before = gc.get_threshold()\n"
        "import memctl.api, memctl.pipeline\n"
        "assert gc.get_threshold() == before and 'OPENBLAS_NUM_THREADS' not in os.environ\n"
        "from memctl.__main__ import CLI_GC_THRESHOLDS, main\n"
        "sys.argv = ['memctl', '--help']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert done.code in (0, None), done.code\n"
        "assert gc.get_threshold() == CLI_GC_THRESHOLDS, gc.get_threshold()\n"
        "assert os.environ['OPENBLAS_NUM_THREADS'] == '1'\n"
        "print('settings ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "settings ok" in done.stdout and "dream" in done.stdout
