"""Issue 17: previews people can read, a report for cron mail, a newcomer's first hour.

- Every preview shows the texts: a merge's new text and each source's, a contradiction's loser and
  winner with the rule that decided, each pruned or archived record with its reason. On a narrow
  terminal a long text ends in an ellipsis; piped, nothing is cut. --json and a saved plan carry
  the full texts, and the plan still applies.
- `--format markdown` reports a dream, a dry-run and a finished run (`runs show`).
- `make demo` prints commands that run as printed; the README's import example imports; `review
  resolve --keep A|B` works; run IDs are accepted by unique prefix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from conftest import Db
from factory import NOW, Store, days
from memctl import demo
from memctl.cli import app
from memctl.store import models as m

ROOT = Path(__file__).resolve().parents[1]
LONG = (
    "Promo code AUTUMN applies to every Acme renewal signed before the end of the quarter, "
    "provided the account manager approves it in writing and the customer has no unpaid invoice; "
    "it cannot be combined with the partner discount nor with the multi-year rebate."
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def cli(db: Db, *args: str, env: dict[str, str] | None = None) -> Any:
    base = ["--db-url", db.settings.db_url, *(["--db-schema", db.settings.db_schema] if db.settings.db_schema else []), "--now", NOW.isoformat()]
    return CliRunner().invoke(app, [*base, *args], env=env)


def seeded(db: Db) -> Store:
    """The demo's planted problems (merges, absorption, contradictions, flags, orphans, expiry), plus one long text."""
    demo.seed(db.engine, NOW)
    store = Store(db.engine)
    store.note(LONG, age_days=20, ExpiresAt=NOW - days(1), AgentID=demo.did(demo.SALES), Type="Context")
    return store


def long_note_id(db: Db) -> str:
    with db.engine.connect() as conn:
        return str(conn.execute(sa.select(m.note.c.ID).where(m.note.c.Note == LONG)).scalar_one()).lower()


def changes(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {p["phase"]: p["changes"] for p in report["phases"]}


def test_us17_dry_run_shows_every_text_and_piped_output_is_never_cut(db: Db) -> None:
    seeded(db)
    as_json = cli(db, "dream", "--dry-run", "--json")
    assert as_json.exit_code == 0, as_json.output
    planned = changes(json.loads(as_json.stdout))
    [merge, *_] = [c for c in planned["consolidate"] if c["kind"] == "merge"]
    new_text = next(r["text"] for r in merge["records"] if r["role"] == "new")
    sources = [r["text"] for r in merge["records"] if r["role"] == "source"]
    assert len(sources) >= 3 and all(sources)
    [recency] = [c for c in planned["contradictions"] if c["kind"] == "contradiction" and "newer" in c["rule"]]
    assert {r["role"]: r["text"] for r in recency["records"]} == {"revoked (loser)": "Alice uses metric units.", "kept (winner)": "Alice uses imperial units."}
    archived = {r["text"]: r["reason"] for c in planned["prune"] + planned["archive"] for r in c["records"]}
    assert "stale references" in archived["Dave asked for invoices in PDF."]
    assert "Expired" in archived[LONG]

    piped = cli(db, "dream", "--dry-run")
    assert piped.exit_code == 0, piped.output
    lines = piped.stdout.splitlines()
    for text in (new_text, *sources, "Alice uses metric units.", "Alice uses imperial units.", "Dave asked for invoices in PDF.", LONG):
        assert f'"{text}"' in [line.strip() for line in lines], text  # whole, on one line
    assert "rule: kept the newer note (created 14 days later)" in piped.stdout
    assert "reason: Archived: stale references: user" in piped.stdout
    assert "…" not in piped.stdout and max(len(line) for line in lines) > 120
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(m.run)).scalar_one() == 0


def test_us17_narrow_terminal_fits_texts_with_a_visible_ellipsis(db: Db) -> None:
    seeded(db)
    result = cli(db, "archive", "--dry-run", env={"COLUMNS": "60", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = [ANSI.sub("", line) for line in result.stdout.splitlines()]
    assert all(len(line) <= 60 for line in lines), [line for line in lines if len(line) > 60]
    start = next(i for i, line in enumerate(lines) if line.strip().startswith('"Promo code AUTUMN'))
    shown = lines[start : start + 3]
    assert shown[-1].endswith("…") and not lines[start + 3].startswith("       ")
    assert LONG not in " ".join(s.strip() for s in shown)  # cut, visibly
    assert '"Promo code SPRING applies to Acme renewals."' in [line.strip() for line in lines]  # a short text is whole


def test_us17_json_and_saved_plan_carry_full_texts_and_the_plan_still_applies(db: Db, tmp_path: Path) -> None:
    seeded(db)
    plan = tmp_path / "plan.json"
    preview = cli(db, "archive", "--dry-run", "--plan-out", str(plan))
    assert preview.exit_code == 0, preview.output
    saved = json.loads(plan.read_text())
    texts = {k: v for p in saved["phases"] for u in p["units"] for k, v in u["detail"]["texts"].items()}
    assert texts[long_note_id(db)] == LONG
    applied = cli(db, "apply", str(plan), "--json")
    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert report["phases"][0]["applied"] >= 5
    assert LONG in [r["text"] for c in report["phases"][0]["changes"] for r in c["records"]]
    assert Store(db.engine).status(long_note_id(db)) == "Archived"
    with db.engine.connect() as conn:
        result = json.loads(conn.execute(sa.select(m.run.c.Result)).scalar_one())
    assert "changes" not in result["phases"][0]  # texts are shown, not stored in the run record


def test_us17_markdown_report_of_a_dream_and_of_the_run_it_recorded(db: Db) -> None:
    seeded(db)
    dry = cli(db, "dream", "--dry-run", "--format", "markdown")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("# memctl dream --dry-run: preview, nothing was written\n")
    assert "| Consolidate Related Notes (consolidate) | planned |" in dry.stdout

    ran = cli(db, "dream", "--format", "markdown")
    assert ran.exit_code == 0, ran.output
    md = ran.stdout
    assert md.startswith("# memctl dream: completed\n") and "| phase | outcome | changed | skipped |" in md
    run_id = re.search(r"- run: `([0-9a-f-]{36})`", md).group(1)
    shown = cli(db, "runs", "show", run_id[:8], "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    for report in (md, shown.stdout):
        assert "  - revoked (loser) note `" in report and "`: Alice uses metric units." in report
        assert "  - kept (winner) note `" in report and "`: Alice uses imperial units." in report
        assert "  - rule: kept the newer note (created 14 days later)" in report
        assert "- **merge**: Consolidated from 4 notes" in report and "  - source note `" in report
        assert "- **copies**: Absorbed 1 exact copy of this note" in report and "  - copy note `" in report  # issue 29
        assert "- **merge**: Absorbed 2 notes of the same fact" in report and "  - kept (states it) note `" in report
        assert "\n## Flagged for review (2)\n" in report and "  - A note `" in report and "`: Carol's timezone is CET." in report
        assert f"  - text: {LONG}\n" in report  # whole, never cut
        assert "Counts: " in report and "notesCreated 1" in report and "copiesAbsorbed 1" in report
    assert re.search(r"\| Archive Expired Items \| done \| 7 \|", shown.stdout)


def test_us17_long_lists_end_with_a_visible_count(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent()
    for i in range(203):
        store.note(f"Expired fact number {i}.", AgentID=agent, ExpiresAt=NOW.replace(year=NOW.year - 1))
    md = cli(db, "archive", "--dry-run", "--format", "markdown")
    assert md.exit_code == 0, md.output
    assert md.stdout.count("- **archive** note `") == 200
    assert "- … and 3 more (every change with its text: `--json`, or `--plan-out FILE`)" in md.stdout
    text = cli(db, "archive", "--dry-run")
    assert "  … and 3 more (use --plan-out or --json for all of them)" in text.stdout


def test_us17_runs_show_piped_is_never_cut_at_80_columns(db: Db) -> None:
    seeded(db)
    assert cli(db, "archive").exit_code == 0
    run = json.loads(cli(db, "runs", "list", "--json").stdout)[0]
    shown = cli(db, "runs", "show", run["id"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(cli(db, "runs", "show", run["id"], "--json").stdout)
    output_line = "output: " + json.dumps(data["steps"][0]["output"])
    assert output_line in [line.strip() for line in shown.stdout.splitlines()] and len(output_line) > 80


def test_runs_show_a_step_whose_data_another_agent_wrote_as_text(db: Db) -> None:
    """`runs show --all` lists MJ's own runs: a step's InputData need not be JSON."""
    seeded(db)
    assert cli(db, "archive").exit_code == 0
    run = json.loads(cli(db, "runs", "list", "--json").stdout)[0]
    with db.engine.begin() as conn:
        conn.execute(m.run_step.update().values(InputData="plain text written by another agent", OutputData="{not json"))
    shown = cli(db, "runs", "show", run["id"])
    assert shown.exit_code == 0, shown.output
    assert "plain text written by another agent" in shown.stdout and "{not json" in shown.stdout


def test_us17_run_ids_by_unique_prefix_and_ambiguous_prefixes_list_the_runs(db: Db) -> None:
    seeded(db)
    assert cli(db, "archive").exit_code == 0
    run_id = json.loads(cli(db, "runs", "list", "--json").stdout)[0]["id"]
    undo = cli(db, "undo", run_id[:6], "--dry-run")
    assert undo.exit_code == 0, undo.output
    dashed = cli(db, "runs", "show", run_id[:13])  # as `runs list` prints it, dash included
    assert dashed.exit_code == 0 and run_id in dashed.output, dashed.output
    with db.engine.begin() as conn:
        for suffix in ("1", "2"):
            conn.execute(m.run.insert().values(ID=f"abcdef0{suffix}-0000-4000-8000-000000000000", AgentID=run_id, RunName=f"fake {suffix}", Status="Completed", StartedAt=NOW))
    for args in (["undo", "abcdef0", "--dry-run"], ["runs", "show", "abcdef"]):
        ambiguous = cli(db, *args)
        assert ambiguous.exit_code == 2, ambiguous.output
        assert "ambiguous" in ambiguous.output and "abcdef01-0000-4000-8000-000000000000" in ambiguous.output and "abcdef02-" in ambiguous.output
    assert cli(db, "runs", "show", "abcdef02").exit_code == 0
    assert cli(db, "undo", "abc").exit_code == 2 and "too short" in cli(db, "undo", "abc").output
    assert Store(db.engine).status(long_note_id(db)) == "Archived"  # the dry-run undid nothing


@pytest.mark.parametrize("keep", ["A", "b"])
def test_us17_review_resolve_keep_a_or_b_as_review_suggests(db: Db, keep: str) -> None:
    store = Store(db.engine)
    agent, user = store.agent(), store.user()
    cet = store.note("Carol's timezone is CET.", age_days=4, AccessCount=3, AgentID=agent, UserID=user)
    pst = store.note("Carol's timezone is PST.", age_days=4.1, AccessCount=3, AgentID=agent, UserID=user)
    assert cli(db, "contradictions").exit_code == 0
    listed = cli(db, "review")
    assert "--keep A   |   --keep B" in listed.output
    pair = re.search(r"pair ([0-9a-f-]{36})", listed.output).group(1)
    a_line = next(line for line in listed.output.splitlines() if line.startswith("  A "))
    note_a = a_line.split()[1]
    resolved = cli(db, "review", "resolve", pair[:8], "--keep", keep)
    assert resolved.exit_code == 0, resolved.output
    kept = note_a if keep.upper() == "A" else ({cet.lower(), pst.lower()} - {note_a}).pop()
    other = ({cet.lower(), pst.lower()} - {kept}).pop()
    assert store.status(kept) == "Active" and store.status(other) == "Revoked"


def test_us17_readme_import_example_imports_with_the_documented_defaults(db: Db, tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```jsonl\n(.*?)```", readme, re.S)
    path = tmp_path / "notes.jsonl"
    path.write_text(block, encoding="utf-8")
    result = cli(db, "import", str(path))
    assert result.exit_code == 0, result.output
    assert "imported 1 company, 1 user, 1 agent, 2 note, 1 example" in result.output
    with db.engine.connect() as conn:
        notes = {r["Note"]: r for r in conn.execute(sa.select(m.note)).mappings()}
    auto, manual = notes["Alice prefers a short email summary after each support call."], notes["Acme's account manager is Priya."]
    assert auto["IsAutoGenerated"] is True and auto["AccessCount"] == 3 and auto["__mj_CreatedAt"].isoformat().startswith("2026-10-01T09:30")
    assert manual["IsAutoGenerated"] is False and manual["Status"] == "Active" and manual["ProtectionTier"] == "Standard" and manual["AccessCount"] == 0
    assert "## Import format" in readme and "Missing means `false`: a manual note" in readme
    assert "Import format" in CliRunner().invoke(app, ["import", "--help"]).output


def test_us17_make_demo_prints_commands_that_run_as_printed(tmp_path: Path) -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    venv = Path(sys.prefix)
    if not (venv / "bin" / "memctl").exists():
        pytest.skip("the test interpreter is not a venv with memctl installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
    stamp = venv / ".memctl-installed"
    shown = subprocess.run(
        [make, "-s", "-o", str(stamp), "demo", f"VENV={venv}", f"DEMO_DIR={tmp_path / 'demo'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    after = shown.stdout.split("See it with (from this directory):\n", 1)[1]
    commands = [line.split("   #")[0].split("  #")[0].strip() for line in after.splitlines() if line.startswith("  ")]
    program = commands[0].split(" --db-url ")[0]
    assert len(commands) == 5 and all(c.startswith(f"{program} --db-url ") for c in commands)
    assert program in ("memctl", f"{venv}/bin/memctl")
    for command in commands:
        ran = subprocess.run(command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, f"{command}\n{ran.stdout}{ran.stderr}"
        assert ran.stdout.strip()


def test_us17_markdown_shows_untrusted_text_inert(db: Db) -> None:
    store = Store(db.engine)
    agent = store.agent()
    hostile = "Ana <script>x</script> [click](https://evil.example) **bold** `code` \x1b[2J\u202egnp.exe"
    store.note(hostile, AgentID=agent, ExpiresAt=NOW - days(1))
    md = cli(db, "archive", "--dry-run", "--format", "markdown")
    assert md.exit_code == 0, md.output
    assert "\x1b" not in md.stdout and "\u202e" not in md.stdout
    # rendered, it reads as the text itself: \x1b and \u202e shown as escapes, no tag, link or emphasis
    expected = r"  - text: Ana \<script>x\</script> \[click\](https://evil.example) \*\*bold\*\* \`code\` \\x1b\[2J\\u202egnp.exe"
    assert expected + "\n" in md.stdout
