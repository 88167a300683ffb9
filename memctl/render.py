"""Terminal rendering of previews and runs (rich): texts fitted to a terminal, never cut when piped.

On a terminal a record's text gets up to `TEXT_LINES` lines, the last ending in an ellipsis when
cut (`--json` and `--plan-out` carry the full texts). Piped, every line is printed whole.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from rich.console import Console, ConsoleDimensions
from rich.text import Text

from memctl.phases.asking import ask_again_text
from memctl.pipeline import PhaseReport
from memctl.preview import Entry, RecordText
from memctl.report import LABELS, printable

MAX_ENTRIES = 200  # per phase on a terminal; --json and --plan-out have them all
TEXT_LINES = 3  # lines of a record's text on a terminal
PIPE_WIDTH = 10_000  # the width of a console that is not a terminal: wide enough not to fold
ELLIPSIS = "…"


class SafeConsole(Console):
    """Print untrusted text (note contents, LLM replies, file contents) as text: no markup, no escapes.

    Not on a terminal, it reports a very wide width: rich would otherwise fold or crop what it
    lays out (tables, trees) at 80 columns in cron mail and logs.
    """

    def render_str(self, text: str, **kwargs: Any) -> Any:
        return super().render_str(printable(text), **kwargs)

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def fitted(console: Console, text: str, indent: str, max_lines: int = 1) -> list[Text]:
    """Return `text` as lines starting with `indent`: on a terminal at most `max_lines` (an ellipsis
    ending a cut text); piped, the whole text unwrapped."""
    clean = printable(text.replace("\r\n", "\n"))
    if not console.is_terminal:
        return [Text(indent + line) for line in clean.split("\n")]
    width = max(console.width - len(indent), 10)
    lines = Text(clean).wrap(console, width, overflow="fold")
    shown = list(lines)[:max_lines]
    if len(lines) > max_lines:
        last = shown[-1]
        last.truncate(width - 1)
        last.rstrip()
        last.append(ELLIPSIS)
    for line in shown:
        line.rstrip()
    return [Text(indent) + line for line in shown]


def _emit(console: Console, lines: Sequence[Text]) -> None:
    for line in lines:
        console.print(line, soft_wrap=True, highlight=False)


def print_preview(console: Console, phase: PhaseReport) -> None:
    """Print what a phase would change (a dry-run), every record with its text."""
    if not (phase.entries or phase.outcome == "failed" or phase.rows):
        return
    _emit(console, fitted(console, f"{phase.step_name} ({phase.phase}): {phase.message or phase.outcome}", ""))
    for entry in phase.entries[:MAX_ENTRIES]:
        print_entry(console, entry)
    if len(phase.entries) > MAX_ENTRIES:
        _emit(console, [Text(f"  {ELLIPSIS} and {len(phase.entries) - MAX_ENTRIES} more (use --plan-out or --json for all of them)")])
    if phase.error:
        _emit(console, fitted(console, f"failed: {phase.error}", "  ", TEXT_LINES))
    console.print()


def print_entry(console: Console, entry: Entry) -> None:
    """Print one change: its summary, the rule that decided, and each record with its text."""
    skipped = " (skipped)" if entry.skipped else ""
    if len(entry.records) == 1 and entry.records[0].reason == entry.summary:
        record = entry.records[0]
        _emit(console, fitted(console, f"{entry.kind}{skipped} {LABELS.get(record.table, record.table)} {record.id}", "  "))
        _emit(console, fitted(console, f"reason: {entry.summary}", "    ", TEXT_LINES))
        _record_lines(console, record, with_header=False)
        return
    _emit(console, fitted(console, f"{entry.kind}{skipped}: {entry.summary}", "  ", TEXT_LINES))
    if entry.rule:
        _emit(console, fitted(console, f"rule: kept {entry.rule}", "    ", TEXT_LINES))
    for record in entry.records:
        _record_lines(console, record)


def _record_lines(console: Console, record: RecordText, with_header: bool = True) -> None:
    if with_header:
        _emit(console, fitted(console, f"{record.role} {LABELS.get(record.table, record.table)} {record.id}", "    "))
    _emit(console, fitted(console, f'"{record.text}"', "      ", TEXT_LINES))
    if record.skipped:
        _emit(console, fitted(console, f"skipped: {record.skipped}", "      ", TEXT_LINES))


def print_run(console: Console, run: Mapping[str, Any], steps: Sequence[Any]) -> None:
    """Print a run and its steps with their input and output data, indented; long lines are never cut."""
    _emit(console, [Text(printable(f"{run['name']}  {run['status']}  {run['startedAt']}  ({run['id']})"))])

    def add(step: Any, depth: int) -> None:
        pad = "  " * depth
        error = f" - {step.error}" if step.error else ""
        _emit(console, [Text(printable(f"{pad}{step.number}. {step.name} [{step.step_type}] {step.status}{error}"))])
        if step.input:
            _emit(console, [Text(printable(f"{pad}   input: " + json.dumps(step.input, default=str)))])
        if step.output:
            _emit(console, [Text(printable(f"{pad}   output: " + json.dumps(step.output, default=str)))])
        again = step.output.get("askAgainAt") if isinstance(step.output, Mapping) else None
        if again and isinstance(again, Mapping):
            _emit(console, [Text(printable(f"{pad}   paused after unusable replies, asked again: {ask_again_text(again)}"))])
        for child in step.children:
            add(child, depth + 1)

    for step in steps:
        add(step, 1)
    if run["message"]:
        _emit(console, [Text(printable(run["message"]))])
