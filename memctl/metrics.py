"""Prometheus text exposition of a run, for node_exporter's textfile collector (`--metrics-file`).

The file is written atomically (a temporary file in the same directory, then a rename), so the
collector never reads half a file.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Optional

from memctl.pipeline import RunReport

# (metric, type, help)
METRICS = {
    "memctl_run_success": ("gauge", "1 if the last run of this command succeeded (a gate or lock skip counts as success), else 0."),
    "memctl_run_skipped": ("gauge", "1 if the last run was skipped (gate closed or store locked), else 0."),
    "memctl_run_stopped": ("gauge", "1 if the last run was stopped from outside (reason: deadline, SIGINT or SIGTERM), else 0."),
    "memctl_lock_overdue_seconds": ("gauge", "How far past its run deadline the run holding the lock was when this run was refused (0 when not)."),
    "memctl_run_timestamp_seconds": ("gauge", "Unix time the last run finished."),
    "memctl_run_duration_seconds": ("gauge", "Wall time of the last run."),
    "memctl_phase_success": ("gauge", "1 if the phase succeeded in the last run, else 0."),
    "memctl_phase_duration_seconds": ("gauge", "Wall time of the phase in the last run."),
    "memctl_items_changed": ("gauge", "Records changed by the phase in the last run, by action."),
    "memctl_items_skipped": ("gauge", "Planned changes skipped because the record changed since planning."),
    "memctl_llm_calls": ("gauge", "LLM requests made by the phase in the last run (retries included)."),
    "memctl_llm_tokens": ("gauge", "LLM tokens used by the phase in the last run (prompt and completion)."),
    "memctl_llm_prompt_tokens": ("gauge", "LLM prompt tokens used by the phase in the last run."),
    "memctl_llm_completion_tokens": ("gauge", "LLM completion tokens used by the phase in the last run."),
    "memctl_cache_hits": ("gauge", "Judge verdicts answered from the verdict cache in the last run."),
}


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _line(name: str, labels: dict[str, str], value: float) -> str:
    rendered = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
    return f"{name}{{{rendered}}} {float(value):g}"


def render(report: RunReport, finished_at: Optional[float] = None) -> str:
    base = {"command": report.command.replace("memctl ", "", 1)}
    samples: list[tuple[str, dict[str, str], float]] = [
        ("memctl_run_success", base, 1 if report.exit_code == 0 else 0),
        ("memctl_run_skipped", base, 1 if report.status in ("skipped", "locked") else 0),
        ("memctl_run_stopped", {**base, "reason": report.stopped or ""}, 1 if report.stopped else 0),
        ("memctl_lock_overdue_seconds", base, (report.stuck_lease or {}).get("overdueSeconds", 0)),
        ("memctl_run_timestamp_seconds", base, finished_at if finished_at is not None else time.time()),
        ("memctl_run_duration_seconds", base, report.seconds),
    ]
    for phase in report.phases:
        labels = {**base, "phase": phase.phase}
        samples += [
            ("memctl_phase_success", labels, 0 if phase.outcome == "failed" else 1),
            ("memctl_phase_duration_seconds", labels, phase.seconds),
            *(("memctl_items_changed", {**labels, "action": action}, count) for action, count in sorted(phase.applied_by_action.items())),
            ("memctl_items_skipped", labels, len(phase.skipped)),
            ("memctl_llm_calls", labels, _number(phase.output, "llmCalls")),
            ("memctl_llm_tokens", labels, _number(phase.output, "tokens")),
            ("memctl_llm_prompt_tokens", labels, _number(phase.output, "promptTokens")),
            ("memctl_llm_completion_tokens", labels, _number(phase.output, "completionTokens")),
            ("memctl_cache_hits", labels, _number(phase.output, "cacheHits", "cached")),
        ]
    by_name: dict[str, list[str]] = defaultdict(list)
    for name, labels, value in samples:
        by_name[name].append(_line(name, labels, value))
    lines: list[str] = []
    for name, (kind, text) in METRICS.items():
        if by_name[name]:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", *by_name[name]]
    return "\n".join(lines) + "\n"


def _number(output: dict, *keys: str) -> float:
    for key in keys:
        value = output.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return 0.0


def write(path: str | Path, report: RunReport) -> None:
    """Write the exposition of a run to `path` atomically."""
    target = Path(path)
    text = render(report)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
