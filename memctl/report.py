"""A Markdown report of a run or a dry-run, fit for cron mail or a ticket (`--format markdown`).

Each phase's changes with the records' texts, its counts, and the pairs flagged for review; it
reads as well raw as rendered. Nothing is cut silently: a long list ends with a line saying how
many entries are not shown. Built from a live `RunReport` or a stored run (`memctl runs show RUN`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from sqlalchemy.engine import Engine

from memctl.phases.asking import ask_again_text
from memctl.pipeline import RunReport
from memctl.preview import Entry, run_entries

MAX_ENTRIES = 200  # per phase; the rest is counted on a visible line

# Control characters, C1 codes and bidi overrides: what could drive or disguise a terminal.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MARKDOWN = re.compile(r"([\\`*_\[\]<])")
LABELS = {"AIAgentNote": "note", "AIAgentExample": "example", "memctl_review": "review"}


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """Return `text` with every terminal control character shown as an escape (\\x1b...)."""
    return _UNPRINTABLE.sub(_escaped, text)


def md(text: str, indent: str = "") -> str:
    """Return untrusted `text` as inert Markdown: controls escaped, markup characters backslashed."""
    escaped = _MARKDOWN.sub(r"\\\1", printable(text.replace("\r\n", "\n")))
    return escaped.replace("\n", "\n" + indent)


@dataclass
class PhaseView:
    """One phase (one step) of a report."""

    title: str
    outcome: str
    message: str = ""
    changed: Optional[int] = None
    counts: dict[str, Any] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    error: Optional[str] = None
    entries: list[Entry] = field(default_factory=list)
    #: when the questions paused after unusable replies are asked again (the step's "askAgainAt")
    ask_again: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReportView:
    """What a report shows: a run (or a dry-run) and its phases."""

    command: str
    status: str
    message: str
    run_id: Optional[str] = None
    started_at: Optional[str] = None
    dry_run: bool = False
    phases: list[PhaseView] = field(default_factory=list)


def _ask_again(data: Any) -> dict[str, Any]:
    again = data.get("askAgainAt") if isinstance(data, Mapping) else None
    return dict(again) if isinstance(again, Mapping) else {}


def _counts(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, (int, float, str, bool)) and k not in ("outcome", "applied", "seconds")}


def from_run_report(report: RunReport) -> ReportView:
    dry = report.status == "dry-run"
    view = ReportView(report.command, report.status, report.message, None if dry else report.run_id, dry_run=dry)
    for p in report.phases:
        changed = len(p.rows) if dry else p.applied
        view.phases.append(PhaseView(
            title=f"{p.step_name} ({p.phase})", outcome=p.outcome, message=p.message, changed=changed,
            counts=_counts(p.output), skipped=list(p.skipped), error=p.error, entries=list(p.entries), ask_again=_ask_again(p.output),
        ))
    return view


def from_stored_run(engine: Engine, run: Mapping[str, Any], steps: Sequence[Any]) -> ReportView:
    """Return the view of a finished run (`memctl.orient.show_run`'s run and steps)."""
    by_step = run_entries(engine, run["id"])
    view = ReportView(run["name"], run["status"], run["message"] or run["error"] or "", run["id"], run["startedAt"])
    for step in steps:
        output = step.output if isinstance(step.output, Mapping) else {}
        applied = output.get("applied")
        view.phases.append(PhaseView(
            title=step.name, outcome=str(output.get("outcome") or step.status), changed=applied if isinstance(applied, int) else None,
            counts=_counts(output), skipped=[(s["record"], s["reason"]) for s in output.get("skippedRecords") or []],
            error=step.error, entries=by_step.get(step.id, []), ask_again=_ask_again(output),
        ))
    return view


def markdown(view: ReportView) -> str:
    heading = f"{view.command} --dry-run: preview, nothing was written" if view.dry_run else f"{view.command}: {view.status}"
    lines = [f"# {md(heading)}", ""]
    if view.run_id:
        lines.append(f"- run: `{view.run_id}`" + (f", started {view.started_at}" if view.started_at else ""))
    if view.message:
        lines.append(f"- summary: {md(view.message)}")
    if view.phases:
        lines += ["", "| phase | outcome | " + ("planned" if view.dry_run else "changed") + " | skipped |", "|---|---|---:|---:|"]
        for p in view.phases:
            changed = "" if p.changed is None else str(p.changed)
            lines.append(f"| {_cell(p.title)} | {_cell(p.outcome)} | {changed} | {len(p.skipped) or ''} |")
    flagged: list[Entry] = []
    for p in view.phases:
        lines += ["", f"## {md(p.title)}: {md(p.outcome)}", ""]
        if p.message:
            lines += [md(p.message), ""]
        if p.error:
            lines += [f"**Failed:** {md(p.error)}", ""]
        if p.counts:
            lines += ["Counts: " + ", ".join(f"{md(str(k))} {md(_number(v))}" for k, v in p.counts.items()), ""]
        if p.ask_again:
            lines += [f"Paused after unusable replies, asked again: {md(ask_again_text(p.ask_again))}", ""]
        shown = [e for e in p.entries if e.kind != "flag"]
        flags = [e for e in p.entries if e.kind == "flag"]
        flagged += flags
        for entry in shown[:MAX_ENTRIES]:
            lines += _entry(entry)
        if len(shown) > MAX_ENTRIES:
            lines.append(f"- … and {len(shown) - MAX_ENTRIES} more (every change with its text: `--json`" + (", or `--plan-out FILE`)" if view.dry_run else ")"))
        if flags:
            lines.append(f"- {len(flags)} pair(s) flagged for review (below)")
        if p.skipped:
            lines += ["", f"Skipped ({len(p.skipped)}):"]
            lines += [f"- `{record}`: {md(why)}" for record, why in p.skipped[:MAX_ENTRIES]]
            if len(p.skipped) > MAX_ENTRIES:
                lines.append(f"- … and {len(p.skipped) - MAX_ENTRIES} more")
    if flagged:
        lines += ["", f"## Flagged for review ({len(flagged)})", ""]
        for entry in flagged[:MAX_ENTRIES]:
            lines += _entry(entry)
        if len(flagged) > MAX_ENTRIES:
            lines.append(f"- … and {len(flagged) - MAX_ENTRIES} more (`memctl review` lists them all)")
        if not view.dry_run:
            lines += ["", "Settle each with `memctl review resolve PAIR --keep A|B` or `--dismiss` (`memctl review` lists the pairs)."]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _cell(text: str) -> str:
    return md(text).replace("|", "\\|").replace("\n", " ")


def _entry(entry: Entry) -> list[str]:
    skipped = " (skipped)" if entry.skipped else ""
    lines = [f"- **{md(entry.kind)}**{skipped}: {md(entry.summary, '  ')}"]
    if entry.rule:
        lines.append(f"  - rule: kept {md(entry.rule, '    ')}")
    for record in entry.records:
        label = LABELS.get(record.table, record.table)
        if len(entry.records) == 1 and record.reason == entry.summary:
            lines[0] = f"- **{md(entry.kind)}**{skipped} {label} `{record.id}`: {md(entry.summary, '  ')}"
            lines.append(f"  - text: {md(record.text, '    ') or '(empty)'}")
            if record.skipped:
                lines.append(f"  - skipped: {md(record.skipped, '    ')}")
            continue
        extra = f" (skipped: {md(record.skipped)})" if record.skipped else ""
        lines.append(f"  - {md(record.role)} {label} `{record.id}`{extra}: {md(record.text, '    ') or '(empty)'}")
    return lines
