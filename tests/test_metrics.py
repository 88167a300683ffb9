"""--metrics-file: Prometheus text exposition, parsed by prometheus_client's own parser."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store
from memctl.cli import app


def samples(path: Path) -> dict[tuple[str, frozenset], float]:
    found = {}
    for family in text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def test_dream_writes_parseable_metrics(sqlite_db: Db, tmp_path: Path) -> None:
    store = Store(sqlite_db.engine)
    store.note("orphan", AgentID=store.agent(status="Disabled"))
    store.note("stale", age_days=200, accessed_days_ago=150)
    target = tmp_path / "textfile" / "memctl.prom"
    result = CliRunner().invoke(app, ["--db-url", sqlite_db.url, "--now", NOW.isoformat(), "dream", "--quiet", "--metrics-file", str(target)])
    assert result.exit_code == 0, result.output
    found = samples(target)
    run = frozenset({("command", "dream")})
    assert found[("memctl_run_success", run)] == 1.0
    assert found[("memctl_run_skipped", run)] == 0.0
    assert found[("memctl_run_duration_seconds", run)] > 0
    for phase in ("consolidate", "contradictions", "prune", "archive"):
        labels = frozenset({("command", "dream"), ("phase", phase)})
        assert found[("memctl_phase_success", labels)] == 1.0
        assert ("memctl_phase_duration_seconds", labels) in found and ("memctl_llm_calls", labels) in found
    assert found[("memctl_items_changed", frozenset({("command", "dream"), ("phase", "prune"), ("action", "archive")}))] == 1.0
    assert found[("memctl_items_changed", frozenset({("command", "dream"), ("phase", "archive"), ("action", "archive")}))] == 1.0
    assert not list(target.parent.glob(".memctl.prom.*"))  # the temporary file was renamed away

    again = CliRunner().invoke(app, ["--db-url", sqlite_db.url, "--now", NOW.isoformat(), "dream", "--metrics-file", str(target)])
    assert again.exit_code == 0
    skipped = samples(target)
    assert skipped[("memctl_run_skipped", run)] == 1.0 and skipped[("memctl_run_success", run)] == 1.0


def test_a_single_phase_writes_its_own_metrics(sqlite_db: Db, tmp_path: Path) -> None:
    target = tmp_path / "prune.prom"
    result = CliRunner().invoke(app, ["--db-url", sqlite_db.url, "prune", "--metrics-file", str(target)])
    assert result.exit_code == 0
    found = samples(target)
    assert found[("memctl_phase_success", frozenset({("command", "prune"), ("phase", "prune")}))] == 1.0


def test_log_format_json_prints_one_object_per_event(sqlite_db: Db) -> None:
    import json

    store = Store(sqlite_db.engine)
    store.note("orphan", AgentID=store.agent(status="Disabled"))
    result = CliRunner().invoke(app, ["--db-url", sqlite_db.url, "--now", NOW.isoformat(), "--log-format", "json", "prune", "--quiet"])
    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    assert events and events[-1]["event"] == "run" and events[-1]["phases"][0]["applied"] == 1
    bad = CliRunner().invoke(app, ["--db-url", "not a url", "--log-format", "json", "orient"])
    assert bad.exit_code == 2
    error = json.loads(bad.stderr.strip().splitlines()[-1])
    assert error["event"] == "error" and error["exitCode"] == 2
