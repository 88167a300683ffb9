"""`memctl eval`: figures computed from the judge's replies on the shipped labelled corpora.

The LLM is the stub server on 127.0.0.1 (scripted responders), or the offline provider; a guard
on socket.connect fails any test that would reach beyond the loopback interface.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from llmstub import LLMStub, Reply, notes_from_request, prompt_kind
from typer.testing import CliRunner

from memctl.cli import app
from memctl.evaluation import (
    Fact,
    evaluate,
    load_consolidation_corpus,
    load_contradiction_pairs,
    pair_note_ids,
    retained,
    sentences_of,
    states,
    statement,
)
from memctl.settings import Settings, resolve
from memctl.temporal import find_relative

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MEMCTL_EVAL_DATA", ROOT.parent / "shared" / "data"))
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
USAGE = {"prompt_tokens": 11, "completion_tokens": 5}


# --- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Fail on any connection beyond 127.0.0.1; yield the addresses connected to."""
    seen: list[Any] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            seen.append(address)
            if address[0] not in LOOPBACK:
                raise AssertionError(f"memctl eval tried to reach {address} (only 127.0.0.1 is allowed in tests)")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    yield seen


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Run the CLI with no memctl / OpenAI settings from the environment and no memctl.toml."""
    for name in list(os.environ):
        if name.startswith("MEMCTL_") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def offline_settings(tmp_path: Path, **flags: Any) -> Settings:
    return resolve(flags={"db_url": f"sqlite:///{tmp_path / 'operator.db'}", **flags}, environ={}, cwd=tmp_path)


def stub_settings(tmp_path: Path, stub: LLMStub, **flags: Any) -> Settings:
    return offline_settings(
        tmp_path, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", llm_max_retries=0, llm_timeout=5.0, **flags
    )


def answer(obj: dict[str, Any]) -> Reply:
    return Reply.json(obj, **USAGE)


def contradiction_reply(flag: bool, kind: str = "negation") -> Reply:
    return answer({
        "isContradiction": flag, "contradictionType": kind if flag else "none",
        "reason": "rule" if flag else "compatible", "confidence": 0.9,
    })


def join_distinct(body: dict[str, Any]) -> Reply:
    """Consolidate by joining the distinct sentences of the notes given (the prompt's dates already absolute)."""
    notes = notes_from_request(body) or []
    parts: list[str] = []
    for note in notes:
        for sentence in re.split(r"(?<=[.!?])\s+", note["content"].strip()):
            if sentence and sentence.lower() not in (p.lower() for p in parts):
                parts.append(sentence if sentence.endswith((".", "!", "?")) else sentence + ".")
    return answer({
        "shouldConsolidate": True, "consolidatedNote": {"type": "Context", "content": " ".join(parts), "confidence": 0.9},
        "sourceNoteIds": [n["id"] for n in notes], "reason": f"joined {len(notes)} notes",
    })


_NEGATIONS = {"no", "not", "never", "nobody", "nothing", "none", "isn't", "aren't", "doesn't", "don't", "n't"}
_FILLER = {"a", "an", "the", "is", "are", "there", "do", "does", "one", "someone", "person", "people"}


def negation_rule(a: str, b: str) -> bool:
    """Two statements contradict when exactly one is negated and their other words mostly agree."""
    words_a, words_b = (set(re.findall(r"[a-z']+", t.lower())) for t in (a, b))
    negated_a, negated_b = bool(words_a & _NEGATIONS), bool(words_b & _NEGATIONS)
    rest_a, rest_b = words_a - _NEGATIONS - _FILLER, words_b - _NEGATIONS - _FILLER
    overlap = len(rest_a & rest_b) / max(1, len(rest_a | rest_b))
    return negated_a != negated_b and overlap >= 0.5


def responder(contradiction: Callable[[dict[str, Any], dict[str, Any]], Reply]) -> Callable[[dict[str, Any]], Reply]:
    """Answer consolidation by join_distinct and contradiction questions by `contradiction(note_a, note_b)`."""

    def respond(body: dict[str, Any]) -> Reply:
        if prompt_kind(body) == "contradiction":
            a, b = notes_from_request(body)[:2]
            return contradiction(a, b)
        return join_distinct(body)

    return respond


def gold_by_note_id() -> dict[str, bool]:
    _, pairs = load_contradiction_pairs()
    return {note_id: pair.contradiction for pair in pairs for note_id in pair_note_ids(pair)}


# --- the retention criterion ------------------------------------------------------------------


def test_a_fact_is_stated_by_its_words_in_order_with_the_first_person_read_as_the_user() -> None:
    fact = statement("i have two dogs.")
    assert states(statement("User has two dogs and a cat."), fact)
    assert states(statement("Mentioned again on 2025-06-01: i have two dogs."), fact)
    assert not states(statement("User does not have two dogs."), fact)
    assert not states(statement("User has dogs."), fact)
    assert not states(statement("i have two dogs."), statement("i do not have two dogs."))
    assert states(statement("User does not eat meat."), statement("i don't eat meat."))


def test_a_fact_with_a_relative_date_is_retained_once_the_date_is_made_absolute() -> None:
    fact = Fact("my mom is coming to visit me tomorrow.", "in 24 hours my mother will be at my home to see me.")
    assert retained(fact, sentences_of(["User's mom is coming to visit user on 2025-06-02."]))
    assert not retained(fact, sentences_of(["User's dad is coming on 2025-06-02."]))


def test_the_grader_is_written_apart_from_the_product() -> None:
    # the harness grades with its own matching: the grader imports nothing from memctl, only the standard library
    import ast

    tree = ast.parse((ROOT / "memctl" / "evaluation" / "grader.py").read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0]
    assert not any(isinstance(node, ast.ImportFrom) and node.level > 0 for node in ast.walk(tree)), "no relative imports"
    assert imported and all(name.split(".")[0] in sys.stdlib_module_names | {"__future__"} for name in imported), imported
    calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not calls & {"__import__", "import_module"}


# --- the shipped corpora ----------------------------------------------------------------------


def test_the_shipped_corpora_are_consistent_and_the_pairs_are_balanced() -> None:
    meta, personas = load_consolidation_corpus()
    assert meta["personas"] == len(personas) == 100
    assert meta["notes"] == sum(len(p.notes) for p in personas) and meta["facts"] == sum(len(p.facts) for p in personas)
    for p in personas:
        for k in range(len(p.facts)):
            forms = sorted(n.form for n in p.notes if n.fact == k)
            assert forms.count("original") == forms.count("revised") == 1 and forms.count("mention") == len(forms) - 2 <= 2
        assert all(n.created_at <= meta_time(meta) for n in p.notes)
    assert any(find_relative(n.text) for p in personas for n in p.notes if n.form == "mention")

    meta, pairs = load_contradiction_pairs()
    assert meta["pairs"] == len(pairs) == 400 and len({p.id for p in pairs}) == 400
    assert sum(p.contradiction for p in pairs) == 100
    first = pairs[:50]
    labels = {label: sum(p.label == label for p in first) for label in ("CONTRADICTION", "NEUTRAL", "ENTAILMENT", "DISTINCT_FACTS", "PARAPHRASE")}
    assert set(labels.values()) == {10}, labels


def meta_time(meta: dict[str, Any]) -> Any:
    from memctl.settings import parse_time

    return parse_time(meta["referenceDate"])


@pytest.mark.skipif(not (SHARED_DATA / "persona_rephrase_pairs.jsonl").is_file(), reason=f"shared data not at {SHARED_DATA}")
def test_the_shipped_corpora_are_exactly_what_the_builder_makes_from_the_shared_data() -> None:
    result = subprocess.run(
        [sys.executable, "benchmarks/build_eval_data.py", "--data", str(SHARED_DATA), "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- the offline provider ---------------------------------------------------------------------


def test_offline_eval_measures_the_offline_provider_on_a_scratch_store(tmp_path: Path, loopback_only: list[Any]) -> None:
    settings = offline_settings(tmp_path)
    report = evaluate(settings, limit=10)
    data = report.to_dict()
    assert report.exit_code == 0 and data["success"]
    assert data["provider"] == "offline" and data["judge"] == "memctl-offline-v1"
    assert not (tmp_path / "operator.db").exists(), "eval must never open the operator's store"

    c = data["consolidation"]
    _, personas = load_consolidation_corpus(10)
    assert c["personas"] == 10 and c["activeNotesBefore"] == sum(len(p.notes) for p in personas)
    assert c["activeNotesAfter"] == c["activeNotesBefore"] - c["notesRevoked"] + c["notesCreated"]
    assert c["reduction"] == pytest.approx((c["activeNotesBefore"] - c["activeNotesAfter"]) / c["activeNotesBefore"])
    assert c["clusters"]["consolidated"] == c["notesCreated"] > 0
    assert c["facts"] == {"total": sum(len(p.facts) for p in personas), "retained": c["facts"]["total"], "retention": 1.0,
                          "touched": c["facts"]["touched"], "lost": []}
    assert c["relativeDates"]["consolidated"] > 0 and c["relativeDates"]["inNewNotes"] == 0
    assert c["llmCalls"] == c["tokens"] == c["cacheHits"] == 0
    assert c["embedder"] == "memctl-hashing-v2" and c["threshold"] == 0.55

    d = data["contradictions"]
    assert d["pairs"] == 10 and d["positives"] == 2 and d["negatives"] == 8
    m = d["confusion"]
    assert m["tp"] + m["fn"] == 2 and m["fp"] + m["tn"] == 8
    assert d["llmCalls"] == d["tokens"] == 0
    assert set(d["byLabel"]) == {"sick:CONTRADICTION", "sick:NEUTRAL", "sick:ENTAILMENT", "persona:DISTINCT_FACTS", "persona:PARAPHRASE"}
    assert d["pairing"]["embedder"] == "memctl-hashing-v2" and d["pairing"]["threshold"] == 0.34
    assert loopback_only == []


def test_the_json_output_of_the_cli(clean_env: None) -> None:
    result = CliRunner().invoke(app, ["eval", "--limit", "5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"judge", "provider", "prompts", "limit", "consolidation", "contradictions", "success", "seconds"}
    assert data["limit"] == 5 and set(data["prompts"]) == {"consolidate", "contradiction"}
    assert {"activeNotesBefore", "activeNotesAfter", "reduction", "facts", "relativeDates", "checks", "llmCalls", "tokens", "cacheHits", "seconds"} <= set(data["consolidation"])
    assert set(data["consolidation"]["checks"]) == {"reductionAtLeast20Percent", "everyFactRetained", "noRelativeDatesInNewNotes"}
    assert {"precision", "recall", "f1", "confusion", "byType", "byLabel", "llmCalls", "tokens", "cacheHits", "seconds"} <= set(data["contradictions"])
    assert set(data["contradictions"]["confusion"]) == {"tp", "fp", "fn", "tn"}


def test_only_one_part_and_the_human_rendering(clean_env: None) -> None:
    result = CliRunner().invoke(app, ["eval", "--only", "contradictions", "--limit", "10"])
    assert result.exit_code == 0, result.output
    assert "precision" in result.stdout and "TP / FP / FN / TN" in result.stdout
    assert "reduction" not in result.stdout


@pytest.mark.parametrize("args", [["eval", "--only", "everything"], ["eval", "--limit", "0"], ["--llm-base-url", "http://127.0.0.1:9/v1", "eval"]])
def test_usage_and_configuration_errors_exit_2(clean_env: None, args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output


# --- against the stub server ------------------------------------------------------------------


@pytest.mark.parametrize("per_call", [1, 10])
def test_figures_are_computed_from_the_llm_replies(tmp_path: Path, loopback_only: list[Any], per_call: int) -> None:
    # per_call 10: the same answers reach memctl ten questions per request (issue 16), the same figures come out
    decisions: dict[str, bool] = {}
    lock = threading.Lock()

    def by_rule(a: dict[str, Any], b: dict[str, Any]) -> Reply:
        flag = negation_rule(a["content"], b["content"])
        with lock:
            decisions[a["id"]] = flag
        return contradiction_reply(flag)

    with LLMStub(responder(by_rule)) as stub:
        report = evaluate(stub_settings(tmp_path, stub, questions_per_call=per_call), limit=15)
        chat = stub.chat_requests
    data = report.to_dict()
    assert report.exit_code == 0 and data["provider"] == "llm" and data["judge"] == "stub-model"
    asked = {kind: sum(prompt_kind(r.body) == kind for r in chat) for kind in ("consolidate", "contradiction")}

    c = data["consolidation"]
    found = c["clusters"]["found"]
    # clusters share a request only within their partition (one persona here)
    assert c["llmCalls"] == asked["consolidate"] and found > 0
    # (with a model, nothing splits a cluster before it is asked: one request per cluster, or per_call clusters a request)
    assert c["llmCalls"] == found if per_call == 1 else math.ceil(found / per_call) <= c["llmCalls"] <= found
    # the stub's usage: 11 + 5 per question; an unusable answer in a batch is asked again alone
    assert c["tokens"] == 16 * (found + (c["clusters"]["invalid"] if per_call > 1 else 0))
    # the stub joins every note of a cluster: a join that holds two values of one slot is refused (synthesis_problem)
    assert c["clusters"]["consolidated"] == c["notesCreated"] == found - c["clusters"]["invalid"] > 0
    assert all("the synthesis states" in problem for problem in c["clusterProblems"])
    assert c["activeNotesAfter"] == c["activeNotesBefore"] - c["notesRevoked"] + c["notesCreated"]
    assert c["checks"]["everyFactRetained"] and c["relativeDates"]["inNewNotes"] == 0

    d = data["contradictions"]
    _, pairs = load_contradiction_pairs(15)
    assert d["llmCalls"] == asked["contradiction"] == math.ceil(15 / per_call) and len(decisions) == 15 and d["tokens"] == 16 * 15
    flagged = {p.id: decisions[pair_note_ids(p)[0]] for p in pairs}
    expected = {
        "tp": sum(p.contradiction and flagged[p.id] for p in pairs), "fp": sum(not p.contradiction and flagged[p.id] for p in pairs),
        "fn": sum(p.contradiction and not flagged[p.id] for p in pairs), "tn": sum(not p.contradiction and not flagged[p.id] for p in pairs),
    }
    assert d["confusion"] == expected
    assert d["recall"] == pytest.approx(expected["tp"] / 3)
    assert d["precision"] == (pytest.approx(expected["tp"] / (expected["tp"] + expected["fp"])) if expected["tp"] + expected["fp"] else None)
    assert loopback_only and all(address[0] in LOOPBACK for address in loopback_only)


def test_a_judge_that_never_flags_has_recall_0_and_no_precision(tmp_path: Path) -> None:
    with LLMStub(responder(lambda a, b: contradiction_reply(False))) as stub:
        report = evaluate(stub_settings(tmp_path, stub), only="contradictions", limit=40)
    d = report.to_dict()["contradictions"]
    assert report.consolidation is None
    assert d["confusion"] == {"tp": 0, "fp": 0, "fn": 8, "tn": 32}
    assert d["recall"] == 0.0 and d["precision"] is None and d["f1"] == 0.0 and d["byType"] == {}
    assert dict(report.tables())["contradictions"][1] == ("precision", "undefined (nothing flagged)")


def test_a_judge_that_knows_the_gold_labels_scores_1(tmp_path: Path) -> None:
    gold = gold_by_note_id()
    with LLMStub(responder(lambda a, b: contradiction_reply(gold[a["id"]], "competing_value"))) as stub:
        report = evaluate(stub_settings(tmp_path, stub), only="contradictions")
    d = report.to_dict()["contradictions"]
    assert d["pairs"] == 400 and d["confusion"] == {"tp": 100, "fp": 0, "fn": 0, "tn": 300}
    assert d["precision"] == d["recall"] == d["f1"] == 1.0
    assert d["byType"] == {"competing_value": {"flagged": 100, "tp": 100, "fp": 0, "precision": 1.0}}
    assert d["falsePositives"] == d["falseNegatives"] == []


def test_a_contradiction_below_the_confidence_floor_is_not_flagged(tmp_path: Path) -> None:
    gold = gold_by_note_id()

    def unsure(a: dict[str, Any], b: dict[str, Any]) -> Reply:
        return answer({"isContradiction": gold[a["id"]], "contradictionType": "negation" if gold[a["id"]] else "none", "reason": "?", "confidence": 0.5})

    with LLMStub(responder(unsure)) as stub:
        report = evaluate(stub_settings(tmp_path, stub, confidence_floor=0.6), only="contradictions", limit=20)
    d = report.to_dict()["contradictions"]
    assert d["confidenceFloor"] == 0.6 and d["lowConfidence"] == 4 and d["confusion"]["tp"] == 0 and d["recall"] == 0.0


def test_a_merge_that_drops_facts_is_caught(tmp_path: Path) -> None:
    def first_note_only(body: dict[str, Any]) -> Reply:
        notes = notes_from_request(body)
        return answer({
            "shouldConsolidate": True, "consolidatedNote": {"type": "Context", "content": notes[0]["content"], "confidence": 0.9},
            "sourceNoteIds": [n["id"] for n in notes], "reason": "kept the first",
        })

    # Every note clears a threshold of -1, so clusters hold several facts and the merge loses all but one.
    with LLMStub(first_note_only) as stub:
        report = evaluate(stub_settings(tmp_path, stub, consolidate_threshold=-1.0), only="consolidation", limit=5)
    c = report.to_dict()["consolidation"]
    # merges kept as the first note itself (a standing note) lose the others' facts just the same
    assert c["clusters"]["consolidated"] + c["clusters"]["intoStanding"] > 0
    assert 0 < len(c["facts"]["lost"]) == c["facts"]["total"] - c["facts"]["retained"]
    assert not c["checks"]["everyFactRetained"]
    lost = c["facts"]["lost"][0]
    assert lost["replacedBy"] and {"persona", "original", "revised"} <= set(lost)


def test_a_merge_that_keeps_a_relative_date_is_rejected_not_counted(tmp_path: Path) -> None:
    def lazy(body: dict[str, Any]) -> Reply:
        notes = notes_from_request(body)
        content = "Noted yesterday: " + " ".join(n["content"] for n in notes)
        return answer({
            "shouldConsolidate": True, "consolidatedNote": {"type": "Context", "content": content, "confidence": 0.9},
            "sourceNoteIds": [n["id"] for n in notes], "reason": "joined",
        })

    with LLMStub(lazy) as stub:
        report = evaluate(stub_settings(tmp_path, stub), only="consolidation", limit=10)
    c = report.to_dict()["consolidation"]
    assert c["clusters"]["found"] > 0 and c["clusters"]["invalid"] == c["clusters"]["found"]
    # every merge was rejected and no note was written; the only revocations planned are copies of one
    # fact in the same words, which need no model (issue 29), and a phase whose every answer was
    # unusable fails, so not even those were applied
    assert c["notesCreated"] == 0 and c["relativeDates"]["inNewNotes"] == 0
    assert c["notesRevoked"] == c["copiesAbsorbed"] and c["activeNotesBefore"] == c["activeNotesAfter"]
    assert c["clusterProblems"] and all("relative time words" in problem for problem in c["clusterProblems"])
    # no cluster got a usable answer: the evaluation says so and exits 1 (issue 15)
    assert not c["checks"]["reductionAtLeast20Percent"] and report.exit_code == 1
    assert "no usable judge answer" in c["error"] and "invalid" in c["error"]


def test_an_unreachable_llm_is_a_failed_evaluation_exit_1(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening, closed: connections are refused
    monkeypatch.setenv("MEMCTL_LLM_MAX_RETRIES", "0")
    args = ["--llm-base-url", f"http://127.0.0.1:{port}/v1", "--llm-model", "nowhere", "eval", "--limit", "3", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert not data["success"]
    assert "no usable judge answer" in data["contradictions"]["error"]
    assert "no usable judge answer" in data["consolidation"]["error"]
