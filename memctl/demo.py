"""`memctl demo`: a fresh SQLite store with planted problems, dreamt offline.

The corpus is small enough to read and covers every rule: near-duplicates per user and per company,
contradictions for each authority rule (recency, access count, a tie for review, a Protected loser),
notes of a disabled agent and of a deleted user and conversation, expired and stale notes and
examples, per-agent retention, and manual, Protected and Immutable notes that must survive.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

from rich.console import Console

from memctl import api
from memctl.pipeline import RunReport
from memctl.render import print_preview
from memctl.settings import resolve
from memctl.store import models as m
from memctl.store.engine import write
from memctl.verify import verify

NS = uuid.UUID("9f1c7a52-7d2e-4f60-9a51-6d656d63746c")


def did(name: str) -> str:
    """Return the stable demo ID for `name`."""
    return str(uuid.uuid5(NS, name))


@dataclass(frozen=True)
class DemoNote:
    key: str
    text: str
    agent: str
    days_old: float
    user: Optional[str] = None
    company: Optional[str] = None
    type: str = "Preference"
    access: int = 1
    accessed_days_ago: Optional[float] = 0.5
    auto: bool = True
    tier: str = "Standard"
    expires_in_days: Optional[float] = None
    conversation: Optional[str] = None


SUPPORT, SALES, LEGACY, RESEARCH = "agent:support", "agent:sales", "agent:legacy", "agent:research"
ACME, GLOBEX = "company:acme", "company:globex"
ALICE, BOB, CAROL, DAVE, ERIN = "user:alice", "user:bob", "user:carol", "user:dave", "user:erin"

NOTES = [
    # near-duplicates: five of alice's, two with a detail, two exact copies (joined whatever the cluster minimum)
    DemoNote("alice-email-1", "Alice prefers a short email summary after each support call.", SUPPORT, 30, ALICE, ACME, access=3),
    DemoNote("alice-email-2", "Alice prefers a short email summary after each support call.", SUPPORT, 21, ALICE, ACME, access=2),
    DemoNote("alice-email-3", "Alice prefers a short email summary after each support call. Summaries should be sent the same day.", SUPPORT, 14, ALICE, ACME, access=4),
    DemoNote("alice-email-4", "Alice prefers short email summaries after each support call.", SUPPORT, 6, ALICE, ACME, access=1),
    DemoNote("alice-email-5", "Alice prefers a short email summary after each support call. Summaries should include the ticket numbers.", SUPPORT, 2, ALICE, ACME, access=5),
    # near-duplicates at company level (Acme's billing): the newest states the others, so it stays
    DemoNote("acme-billing-1", "Acme Corp is billed monthly on the first business day.", SUPPORT, 40, None, ACME, type="Context", access=6),
    DemoNote("acme-billing-2", "Acme Corp is billed monthly, on the first business day.", SUPPORT, 25, None, ACME, type="Context", access=2),
    DemoNote("acme-billing-3", "Acme Corp is billed monthly on the first business day. Invoices go to the finance team.", SUPPORT, 9, None, ACME, type="Context", access=3),
    # almost the same text for another user of the same agent and company: must never merge with alice's
    DemoNote("bob-email-1", "Bob prefers a short email summary after each support call.", SUPPORT, 12, BOB, ACME, access=2),
    # a user-level note that a broader (company-level, Protected) note already states: absorbed into it
    DemoNote("bob-pricing", "Do not discuss pricing with Acme's engineers.", SUPPORT, 5, BOB, ACME, type="Constraint", access=1),
    # contradictions: recency (14 days apart: the newer wins, whatever the access counts)
    DemoNote("alice-units-old", "Alice uses metric units.", SUPPORT, 20, ALICE, ACME, access=30),
    DemoNote("alice-units-new", "Alice uses imperial units.", SUPPORT, 6, ALICE, ACME, access=1),
    # same day: the higher access count wins
    DemoNote("bob-tone-a", "Bob prefers a formal tone.", SUPPORT, 10, BOB, ACME, access=25),
    DemoNote("bob-tone-b", "Bob prefers a casual tone.", SUPPORT, 10.1, BOB, ACME, access=2),
    # same day, same access count: kept and flagged for review
    DemoNote("carol-tz-a", "Carol's timezone is CET.", SALES, 4, CAROL, GLOBEX, access=3),
    DemoNote("carol-tz-b", "Carol's timezone is PST.", SALES, 4.1, CAROL, GLOBEX, access=3),
    # a Protected note that would lose: flagged, never revoked
    DemoNote("carol-lang-old", "Carol's preferred language is German.", SALES, 25, CAROL, GLOBEX, access=2, tier="Protected"),
    DemoNote("carol-lang-new", "Carol's preferred language is English.", SALES, 3, CAROL, GLOBEX, access=2),
    # complementary, not contradictory
    DemoNote("bob-coffee", "Bob likes coffee in meetings.", SUPPORT, 8, BOB, ACME, access=2),
    DemoNote("bob-tea", "Bob likes tea in the afternoon.", SUPPORT, 8, BOB, ACME, access=2),
    # stale references
    DemoNote("legacy-1", "Customer wants order numbers quoted in every reply.", LEGACY, 15, ALICE, ACME, access=2),
    DemoNote("dave-1", "Dave asked for invoices in PDF.", SUPPORT, 12, DAVE, ACME, type="Context", access=1),
    DemoNote("conv-gone", "Globex is migrating to the new API.", SALES, 11, None, GLOBEX, type="Context", access=1, conversation="conversation:deleted"),
    DemoNote("erin-1", "Erin wants weekly status calls.", SUPPORT, 10, ERIN, ACME, access=1),
    # expiry and retention
    DemoNote("expired-1", "Promo code SPRING applies to Acme renewals.", SALES, 20, None, ACME, type="Context", expires_in_days=-2),
    DemoNote("stale-1", "Alice was evaluating the reporting add-on.", SUPPORT, 150, ALICE, ACME, type="Context", accessed_days_ago=120),
    DemoNote("stale-never", "Acme asked about SSO pricing.", SUPPORT, 100, None, ACME, type="Context", access=0, accessed_days_ago=None),
    DemoNote("sales-45", "Globex's buyer is on leave.", SALES, 60, None, GLOBEX, type="Context", accessed_days_ago=45),
    DemoNote("research-old", "Prefers citations in APA style.", RESEARCH, 300, None, None, accessed_days_ago=250),
    # survivors by rule
    DemoNote("manual-old", "Acme's account manager is Priya.", SUPPORT, 400, None, ACME, type="Context", accessed_days_ago=200, auto=False),
    DemoNote("protected-old", "Never discuss pricing with Acme's engineers.", SUPPORT, 300, None, ACME, type="Constraint", accessed_days_ago=200, tier="Protected"),
    DemoNote("immutable-1", "Globex requires data to stay in the EU.", SALES, 200, None, GLOBEX, type="Constraint", accessed_days_ago=150, tier="Immutable"),
]


def _rows(now: datetime) -> dict[str, list[dict[str, Any]]]:
    def ago(days: float) -> datetime:
        return now - timedelta(days=days)

    audit = {"__mj_CreatedAt": ago(500), "__mj_UpdatedAt": ago(500)}
    rows: dict[str, list[dict[str, Any]]] = {
        "Company": [{"ID": did(ACME), "Name": "Acme Corp", **audit}, {"ID": did(GLOBEX), "Name": "Globex", **audit}],
        "User": [
            {"ID": did(ALICE), "Name": "Alice", "Email": "alice@acme.example", "IsActive": True, **audit},
            {"ID": did(BOB), "Name": "Bob", "Email": "bob@acme.example", "IsActive": True, **audit},
            {"ID": did(CAROL), "Name": "Carol", "Email": "carol@globex.example", "IsActive": True, **audit},
            {"ID": did(ERIN), "Name": "Erin", "Email": "erin@acme.example", "IsActive": False, **audit},
        ],
        "AIAgent": [
            {"ID": did(SUPPORT), "Name": "Support Assistant", "Status": "Active", "AutoArchiveEnabled": True, **audit},
            {"ID": did(SALES), "Name": "Sales Copilot", "Status": "Active", "NoteRetentionDays": 30, "AutoArchiveEnabled": True, **audit},
            {"ID": did(LEGACY), "Name": "Legacy Bot", "Status": "Disabled", "AutoArchiveEnabled": True, **audit},
            {"ID": did(RESEARCH), "Name": "Research Agent", "Status": "Active", "AutoArchiveEnabled": False, **audit},
        ],
        "Conversation": [{"ID": did("conversation:kickoff"), "UserID": did(ALICE), "Name": "Kickoff", "IsArchived": False, **audit}],
        "AIAgentNote": [],
        "AIAgentExample": [],
    }
    for n in NOTES:
        created = ago(n.days_old)
        rows["AIAgentNote"].append({
            "ID": did("note:" + n.key), "AgentID": did(n.agent), "UserID": did(n.user) if n.user else None,
            "CompanyID": did(n.company) if n.company else None, "Note": n.text, "Type": n.type, "IsAutoGenerated": n.auto,
            "Status": "Active", "ProtectionTier": n.tier, "AccessCount": n.access,
            "LastAccessedAt": ago(n.accessed_days_ago) if n.accessed_days_ago is not None else None,
            "ExpiresAt": now + timedelta(days=n.expires_in_days) if n.expires_in_days is not None else None,
            "SourceConversationID": did(n.conversation) if n.conversation else did("conversation:kickoff") if n.user == ALICE else None,
            "__mj_CreatedAt": created, "__mj_UpdatedAt": created,
        })
    examples = [
        ("low-score-stale", 40, 220, 190, None),
        ("high-score-stale", 80, 220, 190, None),
        ("expired", 90, 30, 1, -1),
        ("fresh-low", 30, 20, 2, None),
    ]
    for key, score, days_old, accessed, expires in examples:
        rows["AIAgentExample"].append({
            "ID": did("example:" + key), "AgentID": did(SUPPORT), "CompanyID": did(ACME), "Type": "Example",
            "ExampleInput": f"Customer question ({key})", "ExampleOutput": "Answer with the ticket number first.",
            "IsAutoGenerated": True, "SuccessScore": score, "Status": "Active", "AccessCount": 1,
            "LastAccessedAt": ago(accessed), "ExpiresAt": now + timedelta(days=expires) if expires is not None else None,
            "__mj_CreatedAt": ago(days_old), "__mj_UpdatedAt": ago(days_old),
        })
    return rows


def seed(engine: Any, now: datetime) -> int:
    """Insert the demo corpus; return the number of notes."""
    tables = {t.name: t for t in m.metadata.sorted_tables}
    rows = _rows(now)
    with write(engine) as conn:
        for name, batch in rows.items():
            # executemany takes its columns from the first row: give every row the same keys
            keys = {k for row in batch for k in row}
            conn.execute(tables[name].insert(), [{k: row.get(k) for k in keys} for row in batch])
    return len(rows["AIAgentNote"])


def command_prefix(argv0: Optional[str] = None) -> str:
    """Return a shell command that runs this memctl again from the current directory.

    `make demo` runs `.venv/bin/memctl`, which is not on the PATH, so the printed commands name it as
    run: by its name when it is the PATH's `memctl`, else (python -m memctl, a test runner) `-m memctl`.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    name = os.path.basename(argv0)
    if name == "memctl" and os.path.exists(argv0):
        found = shutil.which(name)
        if found and os.path.samefile(found, argv0):
            return name
        return shlex.quote(argv0)
    return f"{shlex.quote(sys.executable)} -m memctl"


def follow_up_commands(memctl: str, run_id: str) -> list[str]:
    """Return the commands the demo suggests, each runnable as printed."""
    return [
        f"{memctl} runs show {run_id}",
        f"{memctl} runs show {run_id[:8]} --format markdown   # a report for mail or a ticket",
        f"{memctl} orient",
        f"{memctl} review        # contradictions flagged for a human",
        f"{memctl} undo {run_id[:8]} --dry-run",
    ]


def run_demo(directory: Path, console: Optional[Console]) -> RunReport:
    """Create `directory/memctl.db`, seed it, show it, dream it, show what changed."""
    directory.mkdir(parents=True, exist_ok=True)
    db_path = directory / "memctl.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    settings = resolve(flags={"db_url": f"sqlite:///{db_path.resolve().as_posix()}"}, environ={}, cwd=directory)
    engine = api.open_store(settings)
    now = datetime.now(timezone.utc)
    count = seed(engine, now)
    say = console.print if console is not None else (lambda *a, **k: None)
    say(f"Seeded {db_path} with {count} notes and 4 examples (agents, users, companies, conversations, planted problems).", markup=False)
    say("\n--- dry-run: what the dream would do ---", markup=False)
    preview = api.dream(settings, api.RunOptions(dry_run=True), engine=engine)
    if console is not None:
        for phase in preview.phases:
            print_preview(console, phase)
    say("\n--- dream ---", markup=False)
    report = api.dream(settings, engine=engine)
    for phase in report.phases:
        say(f"{phase.step_name}: {phase.outcome}; {phase.applied} changed" + (f"; {phase.error}" if phase.error else "") + (f" ({phase.message})" if phase.message else ""), markup=False)
    say(f"\nrun {report.run_id}: {report.status}. See it with (from this directory):", markup=False)
    memctl = f"{command_prefix()} --db-url {shlex.quote(f'sqlite:///{db_path.as_posix()}')}"
    for command in follow_up_commands(memctl, str(report.run_id)):
        say(f"  {command}", markup=False)
    breaches = verify(engine)
    say("verify: " + ("ok, every invariant holds" if not breaches else f"{len(breaches)} breach(es)"), markup=False)
    engine.dispose()
    return report
