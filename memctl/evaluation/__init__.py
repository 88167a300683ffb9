"""Measure the configured judge, embedder and prompts on labelled data (`memctl eval`).

An operator runs this before trusting a model or a prompt change: the same corpora, the same
settings (flag > env > config file), figures that can be compared run to run. Nothing touches the
operator's store: each evaluation works in a temporary SQLite store that is deleted afterwards.
With no LLM configured, the offline provider is what is measured.

The harness sits above memctl.api: it drives the product through its public face and grades
what comes out with its own labels (memctl.evaluation.corpus) and its own matching
(memctl.evaluation.grader); it never asks the product whether the product was right.
- corpus: the shipped labelled corpora and the IDs their rows get in a scratch store
- grader: fact retention, written apart from the product (imports nothing from memctl)
- consolidation, contradictions: the two measurements
- report: the figures, as JSON and as tables
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Optional

from memctl.context import NullReporter, Reporter
from memctl.errors import UsageError
from memctl.evaluation.consolidation import evaluate_consolidation, import_lines
from memctl.evaluation.contradictions import evaluate_contradictions
from memctl.evaluation.corpus import (
    SECTIONS,
    CorpusNote,
    Fact,
    LabelledPair,
    Persona,
    load_consolidation_corpus,
    load_contradiction_pairs,
    pair_note_ids,
    stable_id,
)
from memctl.evaluation.grader import retained, sentences_of, statement, states
from memctl.evaluation.report import ConsolidationResult, ContradictionResult, EvalReport, Verdict
from memctl.llm.factory import make_compute_embedder, make_judge
from memctl.llm.offline import OfflineJudge
from memctl.settings import Settings

__all__ = [
    "SECTIONS", "ConsolidationResult", "ContradictionResult", "CorpusNote", "EvalReport", "Fact", "LabelledPair", "Persona",
    "Verdict", "evaluate", "evaluate_consolidation", "evaluate_contradictions", "import_lines", "load_consolidation_corpus",
    "load_contradiction_pairs", "pair_note_ids", "retained", "sentences_of", "stable_id", "statement", "states",
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
    report = EvalReport(judge.model, "offline" if isinstance(judge, OfflineJudge) else "llm", prompts, limit)
    with tempfile.TemporaryDirectory(prefix="memctl-eval-") as directory:
        if only in (None, "consolidation"):
            reporter.log(f"eval: consolidation with {judge.model} and {embedder.name}")
            report.consolidation = evaluate_consolidation(settings, Path(directory) / "consolidation.db", limit, reporter)
        if only in (None, "contradictions"):
            reporter.log(f"eval: contradictions with {judge.model}")
            report.contradictions = evaluate_contradictions(settings, judge, embedder, Path(directory) / "contradictions.db", limit, reporter)
    report.seconds = time.monotonic() - started
    return report
