"""Measure the configured judge, embedder and prompts on labelled data (`memctl eval`).

Each evaluation works in a temporary SQLite store, never the operator's. The harness drives the
product through memctl.api and grades the output with its own labels (`corpus`) and matching
(`grader`, which imports nothing from memctl); it never asks the product whether it was right.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Optional

from memctl.context import NullReporter, Reporter
from memctl.errors import UsageError
from memctl.evaluation.consolidation import evaluate_consolidation
from memctl.evaluation.contradictions import evaluate_contradictions
from memctl.evaluation.corpus import SECTIONS, Fact, load_consolidation_corpus, load_contradiction_pairs, pair_note_ids
from memctl.evaluation.grader import retained, sentences_of, statement, states
from memctl.evaluation.report import EvalReport
from memctl.llm.factory import make_compute_embedder, make_judge
from memctl.settings import Settings

__all__ = [
    "SECTIONS", "EvalReport", "Fact", "evaluate", "evaluate_consolidation", "evaluate_contradictions", "load_consolidation_corpus",
    "load_contradiction_pairs", "pair_note_ids", "retained", "sentences_of", "statement", "states",
]


def evaluate(settings: Settings, only: Optional[str] = None, limit: Optional[int] = None, reporter: Optional[Reporter] = None) -> EvalReport:
    """Measure the configured judge and embedder on the shipped labelled corpora."""
    if only is not None and only not in SECTIONS:
        raise UsageError(f"--only must be one of {', '.join(SECTIONS)} (got {only!r})")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {limit})")
    reporter = reporter or NullReporter()
    started = time.monotonic()
    # Build both providers first: a configuration error is exit 2, before any work is done.
    judge = make_judge(settings)
    embedder = make_compute_embedder(settings)
    prompts = {kind: judge.template_hash(kind)[:12] for kind in ("consolidate", "contradiction")}
    report = EvalReport(judge.model, "offline" if judge.rules else "llm", prompts, limit)
    with tempfile.TemporaryDirectory(prefix="memctl-eval-") as directory:
        if only in (None, "consolidation"):
            reporter.log(f"eval: consolidation with {judge.model} and {embedder.name}")
            report.consolidation = evaluate_consolidation(settings, Path(directory) / "consolidation.db", limit, reporter)
        if only in (None, "contradictions"):
            reporter.log(f"eval: contradictions with {judge.model}")
            report.contradictions = evaluate_contradictions(settings, judge, embedder, Path(directory) / "contradictions.db", limit, reporter)
    report.seconds = time.monotonic() - started
    return report
