"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

The `openai` client talks to it over a socket exactly as it would talk to a provider, so the
retry, timeout, fallback and parsing code of memctl is exercised for real. Replies come from a
queue of scripted `Reply` objects, then from a `responder(request_json)` callable, then from a
deterministic default responder that answers memctl's three prompts sensibly. Faults (error
statuses, Retry-After, delays, connection resets, truncated bodies, bad content) are `Reply`
objects too, so a test scripts "429 then success" as two queue entries.

In-process::

    with LLMStub() as stub:
        stub.script(Reply.error(429, retry_after=1), Reply.json({...}))
        client = LLMClient(stub.base_url, "key", "stub-model")
        ...
        stub.chat_requests[-1].body["response_format"]

Load (adaptive concurrency): `slots=1` answers one chat request at a time and queues the rest,
as a one-slot local server does (latency grows with the requests in flight); `throttle`
answers a window of chat requests with 429 and a Retry-After header, as a hosted API over its
rate limit does.

Standalone (benchmarks)::

    python tests/llmstub.py --port 8765 --latency 0.3
"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import json
import math
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Union

NOTES_BLOCK = re.compile(r"<notes_json>\s*(.*?)\s*</notes_json>", re.DOTALL)
NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor cannot can't don't doesn't didn't isn't aren't "
    "wasn't weren't won't wouldn't shouldn't hasn't haven't dont doesnt didnt isnt arent wont".split()
)
_WORD = re.compile(r"[a-z0-9']+")


@dataclass
class Reply:
    """One scripted answer (or fault) for one HTTP call.

    `content` is the assistant message: a dict/list is sent as its JSON text, a str verbatim.
    `body` replaces the whole HTTP body (bytes verbatim, anything else as JSON). `delay` sleeps
    before answering; `reset` closes the socket with an RST and no reply; `truncate` sends the
    headers and half the body, then closes.
    """

    content: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    delay: float = 0.0
    reset: bool = False
    truncate: bool = False
    #: send the body one byte every `trickle` seconds (a server that keeps a call alive)
    trickle: float = 0.0
    finish_reason: str = "stop"
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> "Reply":
        """Answer with `obj` serialised as the message content."""
        return cls(content=obj, **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> "Reply":
        """Answer with `content` verbatim as the message content (fences, prose, broken JSON)."""
        return cls(content=content, **kw)

    @classmethod
    def error(cls, status: int, message: str = "", retry_after: Union[float, str, None] = None, **kw: Any) -> "Reply":
        """Answer with an OpenAI-style error body and `status`, optionally with a Retry-After header."""
        headers = dict(kw.pop("headers", {}))
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        body = {"error": {"message": message or f"stub error {status}", "type": "stub_error", "code": status}}
        return cls(status=status, headers=headers, body=body, **kw)

    @classmethod
    def slow(cls, delay: float, content: Any = None) -> "Reply":
        """Answer after `delay` seconds (use with a shorter client timeout to cause a timeout)."""
        return cls(content=content, delay=delay)

    @classmethod
    def connection_reset(cls) -> "Reply":
        """Close the connection with an RST, sending nothing."""
        return cls(reset=True)

    @classmethod
    def truncated(cls, content: Any = None) -> "Reply":
        """Send a Content-Length larger than what follows, then close."""
        return cls(content=content, truncate=True)

    @classmethod
    def malformed(cls) -> "Reply":
        """Answer with message content that is not JSON."""
        return cls(content='{"shouldConsolidate": true, "consolidatedNote": {"type": ')

    @classmethod
    def wrong_shape(cls) -> "Reply":
        """Answer with valid JSON content that matches none of memctl's reply models."""
        return cls(content={"answer": 42, "notes": []})

    @classmethod
    def huge(cls, chars: int = 2_000_000) -> "Reply":
        """Answer with a JSON content of about `chars` characters."""
        return cls(content={"isContradiction": False, "reason": "x" * chars, "confidence": 0.5})


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the stub received it."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    received_at: float

    def message(self, role: str) -> Optional[str]:
        """Return the content of the first chat message with `role`, if any."""
        for m in (self.body or {}).get("messages", []):
            if m.get("role") == role:
                return m.get("content")
        return None

    @property
    def response_format_type(self) -> Optional[str]:
        rf = (self.body or {}).get("response_format")
        return rf.get("type") if isinstance(rf, dict) else None


Responder = Callable[[dict], Union[Reply, dict, list, str]]


@dataclass(frozen=True)
class Throttle:
    """Answer chat requests number `after + 1` to `after + count` (in arrival order, retries
    included) with 429 and `Retry-After: retry_after`, as a rate-limited API does."""

    after: int
    count: int
    retry_after: float = 0.2


def notes_from_request(body: dict) -> Any:
    """Return the JSON data block (the notes) of a chat request memctl sent, or None."""
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        match = NOTES_BLOCK.search(m.get("content") or "")
        if match:
            return json.loads(match.group(1))
    return None


def prompt_kind(body: dict) -> str:
    """Return which memctl prompt a request carries: consolidate, contradiction or absorb."""
    data = notes_from_request(body)
    if isinstance(data, dict) and "broader" in data:
        return "absorb"
    rf = body.get("response_format") or {}
    name = ((rf.get("json_schema") or {}).get("name") or "").lower()
    system = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), "")
    probe = name or system[:400].lower()
    if "contradict" in probe:
        return "contradiction"
    if "absor" in probe or "cover" in probe:
        return "absorb"
    return "consolidate"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _affirmative(words: list[str]) -> list[str]:
    # "does not use" and "uses" must compare equal: drop negations and auxiliaries, then a plural/3rd-person s.
    kept = [w for w in words if w not in NEGATIONS and w not in ("do", "does", "did")]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in kept]


def questions_from_request(body: dict) -> Optional[list[dict]]:
    """Return the questions of a request of several (questions_per_call), each {"item", "data"}; None for one question."""
    data = notes_from_request(body)
    if isinstance(data, dict) and isinstance(data.get("questions"), list):
        return data["questions"]
    return None


def single_request(body: dict, data: Any) -> dict:
    """Return `body` as it would be with only the question whose data is `data` (its notes_json block replaced)."""
    block = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")
    messages = []
    for m in body.get("messages", []):
        content = m.get("content") or ""
        if m.get("role") == "user" and NOTES_BLOCK.search(content):
            content = NOTES_BLOCK.sub(lambda _: f"<notes_json>\n{block}\n</notes_json>", content, count=1)
        messages.append({**m, "content": content})
    return {**body, "messages": messages}


def default_responder(body: dict) -> dict:
    """Answer memctl's prompts deterministically and plausibly (no model involved).

    A request of several questions gets {"answers": [...]}: each question answered exactly as
    it would be alone, with its "item" number.
    """
    kind = prompt_kind(body)
    questions = questions_from_request(body)
    if questions is not None:
        return {"answers": [{"item": q["item"], **answer_question(kind, q["data"])} for q in questions]}
    return answer_question(kind, notes_from_request(body))


#: a word of any script, a katakana run, or one Han or hiragana character (what a quote is cut from)
_QUOTE_TOKEN = re.compile(r"[\u30a0-\u30ff\u30fc]+|[\u3040-\u309f\u3400-\u9fff]|[^\W_\u3040-\u30ff\u3400-\u9fff]+")


def _spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).casefold(), m.start(), m.end()) for m in _QUOTE_TOKEN.finditer(text)]


def common_quotes(texts: list[str]) -> Optional[list[str]]:
    """Return, from each text, the verbatim span of the longest run of words all of them share (None: none shared).

    The default responder's "subject" quote: a plausible stand-in for what a model would quote.
    """
    spans = [_spans(t) for t in texts]
    words = [[w for w, _, _ in sp] for sp in spans]
    first = words[0]
    for width in range(len(first), 0, -1):
        for i in range(len(first) - width + 1):
            run = first[i:i + width]
            at = []
            for other in words[1:]:
                j = next((j for j in range(len(other) - width + 1) if other[j:j + width] == run), None)
                if j is None:
                    break
                at.append(j)
            else:
                starts = [i, *at]
                return [t[sp[k][1]:sp[k + width - 1][2]] for t, sp, k in zip(texts, spans, starts)]
    return None


def answer_question(kind: str, data: Any) -> dict:
    """Answer one question of `kind` about `data` (the notes the prompt shows for it).

    Every answer that would change the store quotes its evidence as memctl's prompts ask: the
    longest run of words the notes share as each note's subject, the whole note as its value.
    """
    if kind == "absorb":
        broader = " ".join(_words(data["broader"]["content"]))
        narrower = " ".join(_words(data["narrower"]["content"]))
        covered = bool(narrower) and narrower in broader
        shared = common_quotes([data["broader"]["content"], data["narrower"]["content"]]) if covered else None
        return {
            "subjectBroader": shared[0] if shared else "", "valueBroader": data["broader"]["content"] if shared else "",
            "subjectNarrower": shared[1] if shared else "", "valueNarrower": data["narrower"]["content"] if shared else "",
            "isCovered": covered, "reason": "narrower text contained" if covered else "new facts", "confidence": 0.9,
        }
    if kind == "contradiction":
        a, b = (_words(n["content"]) for n in data[:2])
        negation = a != b and bool(_affirmative(a)) and _affirmative(a) == _affirmative(b)
        shared = common_quotes([n["content"] for n in data[:2]]) if negation else None
        return {
            "subjectA": shared[0] if shared else "", "valueA": data[0]["content"] if shared else "",
            "subjectB": shared[1] if shared else "", "valueB": data[1]["content"] if shared else "",
            "isContradiction": negation,
            "contradictionType": "negation" if negation else "none",
            "reason": "same statement, one negated" if negation else "compatible statements",
            "confidence": 0.9,
        }
    notes = data or []
    seen: set[str] = set()
    parts: list[str] = []
    for n in notes:
        text = n["content"].strip()
        key = " ".join(_words(text)) or text.lower()  # a note in another script has no [a-z] words
        if key and key not in seen:
            seen.add(key)
            parts.append(text if text.endswith((".", "!", "?")) else text + ".")
    types = [n["type"] for n in notes]
    kind_of_note = max(types, key=types.count) if types else "Context"
    shared = common_quotes([n["content"] for n in notes]) if len(notes) >= 2 else None
    if shared is None:
        return {"quotes": [], "shouldConsolidate": False, "consolidatedNote": None, "sourceNoteIds": [], "reason": "no subject in common"}
    return {
        "quotes": [{"id": n["id"], "subject": q, "value": n["content"]} for n, q in zip(notes, shared)],
        "shouldConsolidate": True,
        "consolidatedNote": {"type": kind_of_note, "content": " ".join(parts), "confidence": 0.9},
        "sourceNoteIds": [n["id"] for n in notes],
        "reason": f"merged {len(notes)} notes on one topic",
    }


def with_quotes(body: dict, content: dict) -> dict:
    """Return `content` with the evidence quotes a model following memctl's prompts gives, where it has none.

    Only an answer that would change the store quotes (a contradiction, a merge, a "covered"),
    and only keys the answer lacks are added: the longest run of words the notes share as each
    note's subject, the whole note as its value (`answer_question`'s quotes). A request of
    several questions has each answer completed with its own question's notes.
    """
    kind = prompt_kind(body)
    questions = questions_from_request(body)
    if questions is None:
        return _quoted(kind, notes_from_request(body), content)
    if not isinstance(content.get("answers"), list):
        return content
    data = {q.get("item"): q.get("data") for q in questions}
    answers = [_quoted(kind, data.get(a.get("item")), a) if isinstance(a, dict) else a for a in content["answers"]]
    return {**content, "answers": answers}


def _quoted(kind: str, data: Any, answer: dict) -> dict:
    try:
        if kind == "contradiction" and "subjectA" not in answer and answer.get("verdict", answer.get("contradictionType", "none")) != "none":
            shared = common_quotes([n["content"] for n in data[:2]]) or ["", ""]
            return {"subjectA": shared[0], "valueA": data[0]["content"], "subjectB": shared[1], "valueB": data[1]["content"], **answer}
        if kind == "absorb" and "subjectBroader" not in answer and answer.get("isCovered") is True:
            shared = common_quotes([data["broader"]["content"], data["narrower"]["content"]]) or ["", ""]
            return {"subjectBroader": shared[0], "valueBroader": data["broader"]["content"],
                    "subjectNarrower": shared[1], "valueNarrower": data["narrower"]["content"], **answer}
        if kind == "consolidate" and "quotes" not in answer and answer.get("shouldConsolidate") is True:
            by_id = {str(n["id"]).lower(): n for n in data}
            chosen = [by_id[i.strip().lower()] for i in answer.get("sourceNoteIds", []) if isinstance(i, str) and i.strip().lower() in by_id]
            shared = common_quotes([n["content"] for n in chosen]) if chosen else None
            quotes = [{"id": n["id"], "subject": q, "value": n["content"]} for n, q in zip(chosen, shared or [])]
            return {"quotes": quotes, **answer}
    except (KeyError, TypeError, IndexError, AttributeError):
        pass  # an answer about notes it was not asked about: leave it as scripted
    return answer


def hash_embedding(text: str, dim: int) -> list[float]:
    """Feature-hash the words of `text` into a unit vector: deterministic, similar texts are close."""
    vec = [0.0] * dim
    for word in _words(text):
        h = hashlib.blake2b(word.encode(), digest_size=8).digest()
        idx = int.from_bytes(h[:4], "little") % dim
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm else vec


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out and hang up are part of the scripts; their broken pipes are noise.
        if not isinstance(sys.exc_info()[1], (ConnectionError, socket.timeout, OSError)):
            super().handle_error(request, client_address)


class LLMStub:
    """An OpenAI-compatible chat-completions and embeddings server on 127.0.0.1, in a thread."""

    def __init__(
        self,
        responder: Optional[Responder] = None,
        *,
        latency: float = 0.0,
        embedding_dim: int = 64,
        reject_json_schema: bool = False,
        rejected_formats: tuple[str, ...] = (),
        fault_rate: float = 0.0,
        fault: Optional[Reply] = None,
        slots: Optional[int] = None,
        throttle: Optional[Throttle] = None,
        seed: int = 0,
        model: str = "stub-model",
        host: str = "127.0.0.1",
        port: int = 0,
        quote: bool = True,
    ) -> None:
        self.responder = responder
        #: fill in the evidence quotes memctl's prompts ask for where a scripted answer that would
        #: change the store has none (`with_quotes`); False sends every answer exactly as scripted
        self.quote = quote
        self.latency = latency
        self.embedding_dim = embedding_dim
        self.rejected_formats = set(rejected_formats) | ({"json_schema"} if reject_json_schema else set())
        self.fault_rate = fault_rate
        self.fault = fault or Reply.error(503, "stub: injected overload")
        #: chat requests answered at once (None: all); the others wait for a slot, so a request's
        #: latency is its own `latency` plus that of the requests ahead of it
        self.slots = slots
        self._slot_turns: collections.deque[object] = collections.deque()  # waiting requests, first come first served
        self._slot_cond = threading.Condition()
        self._slots_busy = 0
        self.throttle = throttle
        #: chat requests answered 429 by `throttle` so far
        self.throttled = 0
        self._chat_count = 0
        self.model = model
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._queue: list[Reply] = []
        self._embedding_queue: list[Reply] = []
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self.max_in_flight = 0
        self._stopping = threading.Event()
        self._server = _Server((host, port), self._handler_class())
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client as base_url (ends in /v1)."""
        host = self._server.server_address[0]
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}/v1"

    def start(self) -> "LLMStub":
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="llmstub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (sleeping handlers wake up and give up)."""
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> "LLMStub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting and inspection ----------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        """Queue replies for the next chat-completion calls, in order (before the responder)."""
        with self._lock:
            self._queue.extend(replies)

    def script_embeddings(self, *replies: Reply) -> None:
        """Queue faults (or raw bodies) for the next embeddings calls; None-content replies compute vectors."""
        with self._lock:
            self._embedding_queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted chat replies are still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    def clear(self) -> None:
        """Forget recorded requests, queued replies and the in-flight high-water mark."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()
            self._embedding_queue.clear()
            self.max_in_flight = 0

    # -- answering -------------------------------------------------------------------------
    def _take_slot(self) -> bool:
        """Wait for one of `slots`, first come first served (as llama.cpp's task queue); False when stopping."""
        turn = object()
        with self._slot_cond:
            self._slot_turns.append(turn)
            while self._slots_busy >= (self.slots or 0) or self._slot_turns[0] is not turn:
                if self._stopping.is_set():
                    self._slot_turns.remove(turn)
                    self._slot_cond.notify_all()
                    return False
                self._slot_cond.wait(0.05)
            self._slot_turns.popleft()
            self._slots_busy += 1
            self._slot_cond.notify_all()
            return True

    def _give_slot(self) -> None:
        with self._slot_cond:
            self._slots_busy -= 1
            self._slot_cond.notify_all()

    def _next_chat_reply(self, body: Any) -> Reply:
        reply = self._pick_chat_reply(body)
        if self.quote and isinstance(reply.content, dict) and isinstance(body, dict):
            return replace(reply, content=with_quotes(body, reply.content))
        return reply

    def _pick_chat_reply(self, body: Any) -> Reply:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return Reply.error(400, "stub: 'messages' is required")
        rf = body.get("response_format")
        rf_type = rf.get("type") if isinstance(rf, dict) else None
        if rf_type in self.rejected_formats:
            return Reply.error(
                400, f"Invalid parameter: response_format of type '{rf_type}' is not supported by this model."
            )
        with self._lock:
            self._chat_count += 1
            if self.throttle is not None and self.throttle.after < self._chat_count <= self.throttle.after + self.throttle.count:
                self.throttled += 1
                return Reply.error(429, "stub: rate limit reached", retry_after=self.throttle.retry_after)
            if self._queue:
                return self._queue.pop(0)
            injected = self.fault_rate > 0 and self._rng.random() < self.fault_rate
        if injected:
            return self.fault
        questions = questions_from_request(body)
        if questions is not None and self.responder is not None and not getattr(self.responder, "answers_batches", False):
            return self._answer_each(body, questions)
        answer = (self.responder or default_responder)(body)
        return answer if isinstance(answer, Reply) else Reply(content=answer)

    def _answer_each(self, body: dict, questions: list[dict]) -> Reply:
        """Answer a request of several questions by asking the responder about each one alone.

        A responder written for one question per request then answers batches too: each
        question is handed to it as the request it would be alone, and its answer becomes that
        question's entry. A question the responder answers with a fault (an error status, a
        reset, content that is not a JSON object) gets no entry, so memctl asks it again alone,
        where the responder's fault applies. A responder that reads batched requests itself
        says so with an `answers_batches = True` attribute.
        """
        assert self.responder is not None
        entries, prompt, completion = [], 0, 0
        for question in questions:
            answer = self.responder(single_request(body, question["data"]))
            reply = answer if isinstance(answer, Reply) else Reply(content=answer)
            content = reply.content
            if isinstance(content, str):
                try:
                    content = json.loads(content)
                except ValueError:
                    content = None
            if reply.status != 200 or reply.reset or reply.truncate or reply.body is not None or not isinstance(content, dict):
                continue
            entries.append({"item": question["item"], **content})
            prompt += reply.prompt_tokens or 0
            completion += reply.completion_tokens or 0
        return Reply(content={"answers": entries}, prompt_tokens=prompt or None, completion_tokens=completion or None)

    def _chat_body(self, reply: Reply, request: dict) -> bytes:
        if reply.body is not None:
            return reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        content = reply.content if isinstance(reply.content, str) or reply.content is None else json.dumps(reply.content)
        prompt_chars = sum(len(m.get("content") or "") for m in request.get("messages", []))
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else max(1, prompt_chars // 4)
        completion_tokens = (
            reply.completion_tokens if reply.completion_tokens is not None else max(1, len(content or "") // 4)
        )
        payload = {
            "id": f"chatcmpl-stub-{hashlib.sha1(json.dumps(request, sort_keys=True).encode()).hexdigest()[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return json.dumps(payload).encode()

    def _embeddings_body(self, reply: Reply, request: dict) -> bytes:
        if reply.body is not None:
            return reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        inputs = request.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dim = int(request.get("dimensions") or self.embedding_dim)
        as_base64 = request.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vec = hash_embedding(text if isinstance(text, str) else json.dumps(text), dim)
            emb: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode() if as_base64 else vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(_words(t)) if isinstance(t, str) else len(t) for t in texts)
        return json.dumps(
            {
                "object": "list",
                "data": data,
                "model": request.get("model", self.model),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        ).encode()

    def _handler_class(self) -> type:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY, as real servers (uvicorn, nginx) set it: headers and body go out in two
            # writes, and with Nagle's algorithm the body waits for the client's delayed ACK
            # (40 ms on Linux), which made every zero-latency stub call cost ~45 ms
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [{"id": stub.model, "object": "model"}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with stub._lock:
                    stub._requests.append(
                        RecordedRequest(
                            method="POST",
                            path=self.path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            raw=raw,
                            body=body,
                            received_at=time.monotonic(),
                        )
                    )
                    stub._in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub._in_flight)
                try:
                    self._answer(body)
                finally:
                    with stub._lock:
                        stub._in_flight -= 1

            def _answer(self, body: Any) -> None:
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/chat/completions"):
                    reply = stub._next_chat_reply(body)
                    make = stub._chat_body
                elif path.endswith("/embeddings"):
                    with stub._lock:
                        reply = stub._embedding_queue.pop(0) if stub._embedding_queue else Reply()
                    make = stub._embeddings_body
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                wait = stub.latency + reply.delay
                slotted = bool(stub.slots) and path.endswith("/chat/completions")
                if slotted and not stub._take_slot():
                    self._reset()
                    return
                try:
                    if wait > 0 and stub._stopping.wait(wait):
                        self._reset()
                        return
                finally:
                    if slotted:
                        stub._give_slot()
                if reply.reset:
                    self._reset()
                    return
                if reply.status != 200 and reply.body is None:
                    reply = replace(reply, body={"error": {"message": f"stub error {reply.status}"}})
                payload = make(reply, body)
                self._send(reply.status, payload, reply.headers, truncate=reply.truncate, trickle=reply.trickle)

            def _send(self, status: int, payload: bytes, headers: Optional[dict] = None, truncate: bool = False, trickle: float = 0.0) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    if truncate:
                        self.wfile.write(payload[: len(payload) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if trickle > 0:
                        for i in range(len(payload)):
                            if stub._stopping.wait(trickle):
                                break
                            self.wfile.write(payload[i : i + 1])
                            self.wfile.flush()
                        return
                    self.wfile.write(payload)
                    self.wfile.flush()
                except OSError:
                    self.close_connection = True

            def _reset(self) -> None:
                # SO_LINGER with a zero timeout makes close() send an RST: a real "connection reset".
                self.close_connection = True
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass

        return Handler


def main(argv: Optional[list[str]] = None) -> int:
    """Run the stub in the foreground until interrupted (for benchmarks)."""
    parser = argparse.ArgumentParser(description="OpenAI-compatible stub LLM server for memctl benchmarks.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on start)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every call")
    parser.add_argument("--dim", type=int, default=64, help="embedding dimension")
    parser.add_argument("--reject-json-schema", action="store_true", help="answer json_schema requests with 400")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of chat calls answered with a 503")
    parser.add_argument("--slots", type=int, help="chat calls answered at once, the others queued (1: a one-slot server)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    stub = LLMStub(
        latency=args.latency,
        embedding_dim=args.dim,
        reject_json_schema=args.reject_json_schema,
        fault_rate=args.fault_rate,
        slots=args.slots,
        seed=args.seed,
        host=args.host,
        port=args.port,
    )
    stub.start()
    print(f"llmstub listening on {stub.base_url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
