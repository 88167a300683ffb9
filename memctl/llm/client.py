"""An OpenAI-compatible chat client that returns parsed replies or the reason there is none.

The `openai` package does the HTTP; its own retries are off (`max_retries=0`) so that memctl
counts every call, honours Retry-After, and decides what is worth retrying: 429, 5xx, timeouts
and dropped connections are; other 4xx are not. A per-call failure never raises: it becomes a
`JudgeResult` with `reply=None` and a short reason, and the phase leaves its cluster or pair
alone. Only configuration errors raise.

Providers differ in which `response_format` they accept. The client asks for a strict JSON
schema first; a server that rejects it (400 naming response_format/json_schema, or 422) is asked
for `json_object` mode instead, then for plain text, and the client remembers the downgrade for
the rest of its life. The prompts describe the reply shape in words, so every mode works.
"""

from __future__ import annotations

import copy
import email.utils
import json
import logging
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Optional, TypeVar

import openai
from pydantic import BaseModel, ValidationError

from memctl.errors import ConfigError
from memctl.llm.base import JudgeResult, Usage
from memctl.settings import mask_secrets

log = logging.getLogger(__name__)

T = TypeVar("T")
U = TypeVar("U")
R = TypeVar("R", bound=BaseModel)

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: response_format modes, most to least structured; a client only ever moves down this list
FORMAT_MODES = ("json_schema", "json_object", "text")
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```\s*$", re.DOTALL)
# JSON-schema keywords kept in a strict schema: what OpenAI's structured outputs and the common
# local servers (vLLM, llama.cpp, Ollama) all accept. Bounds and defaults are checked by pydantic.
_KEPT_KEYWORDS = {"type", "properties", "required", "items", "enum", "const", "anyOf", "$ref", "$defs", "description"}


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Return `model`'s JSON schema in OpenAI strict form (every key required, no extra keys)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key not in _KEPT_KEYWORDS:
                continue
            if key in ("properties", "$defs"):
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        if out.get("type") == "object" or "properties" in out:
            out["type"] = "object"
            out.setdefault("properties", {})
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    return walk(copy.deepcopy(model.model_json_schema()))


def strip_fences(text: str) -> str:
    """Return the inside of a ```json ... ``` fence, or `text` stripped when it has none."""
    match = _FENCE.match(text)
    return (match.group(1) if match else text).strip()


class LLMClient:
    """Calls an OpenAI-compatible chat endpoint with retries, format fallback and bounded concurrency."""

    def __init__(
        self,
        base_url: Optional[str],
        api_key: Optional[str],
        model: str,
        timeout: float = 60,
        max_retries: int = 4,
        concurrency: int = 8,
        *,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        max_retry_after: float = 120.0,
        max_reply_chars: int = 100_000,
    ) -> None:
        if not base_url and not api_key:
            raise ConfigError("LLM: set a base_url (OpenAI-compatible server) or an API key (api.openai.com)")
        if not model or not model.strip():
            raise ConfigError("LLM model is required")
        if timeout <= 0:
            raise ConfigError(f"LLM timeout must be positive, not {timeout}")
        if max_retries < 0:
            raise ConfigError(f"LLM max_retries must be 0 or more, not {max_retries}")
        if concurrency < 1:
            raise ConfigError(f"LLM concurrency must be at least 1, not {concurrency}")
        if backoff_base < 0 or backoff_max < 0 or max_retry_after < 0:
            raise ConfigError("LLM backoff settings must not be negative")
        self.base_url = str(base_url).rstrip("/") if base_url else OPENAI_BASE_URL
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.max_reply_chars = max_reply_chars
        # Local servers ignore the key, but the openai package insists on one.
        self._secret = api_key or ""
        self._openai = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "unused", timeout=self.timeout, max_retries=0
        )
        self._slots = threading.BoundedSemaphore(concurrency)
        self._mode_lock = threading.Lock()
        self._mode = 0
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, model={self.model!r}, format={self.response_format_mode!r})"

    @property
    def response_format_mode(self) -> str:
        """The response_format mode requests use now: json_schema, json_object or text."""
        return FORMAT_MODES[self._mode]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._openai.close()

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- public API ------------------------------------------------------------------------
    def complete_json(self, system: str, user: str, reply_model: type[R], schema_name: str) -> JudgeResult[R]:
        """Ask for a JSON reply and parse it into `reply_model`; failures come back as `error`."""
        if not _SCHEMA_NAME.match(schema_name):
            raise ConfigError(f"schema_name must match {_SCHEMA_NAME.pattern}, not {schema_name!r}")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        calls = 0
        attempt = 0
        usage = Usage()
        while True:
            calls += 1
            try:
                with self._slots:
                    # Read once a slot is free: another call may have downgraded the format meanwhile.
                    mode = self._mode
                    response = self._openai.chat.completions.create(
                        model=self.model,
                        messages=messages,
                        temperature=0,
                        response_format=self._response_format(mode, reply_model, schema_name),
                    )
            except openai.APIStatusError as exc:
                if self._rejects_format(exc, mode):
                    self._downgrade(mode, exc)
                    continue
                reason = f"HTTP {exc.status_code}: {self._describe(exc)}"
                retryable, hint = exc.status_code == 429 or exc.status_code >= 500, exc.response
            except openai.APITimeoutError:
                reason, retryable, hint = f"timed out after {self.timeout:g}s", True, None
            except openai.APIConnectionError as exc:
                reason, retryable, hint = f"connection error: {self._describe(exc.__cause__ or exc)}", True, None
            except Exception as exc:  # noqa: BLE001 - a per-call failure must not abort the phase
                reason = f"malformed response: {type(exc).__name__}: {self._describe(exc)}"
                return self._failure(reason, usage, calls, retried=False)
            else:
                return self._parse(response, reply_model, usage, calls)
            if not retryable or attempt >= self.max_retries:
                return self._failure(reason, usage, calls)
            self._sleep_before_retry(attempt, reason, hint)
            attempt += 1

    def map(self, fn: Callable[[T], U], items: Iterable[T]) -> list[U]:
        """Return `[fn(item) for item in items]`, computed `concurrency` at a time, in input order."""
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items)), thread_name_prefix="memctl-llm") as pool:
            return list(pool.map(fn, items))

    # -- internals -------------------------------------------------------------------------
    def _response_format(self, mode: int, reply_model: type[BaseModel], schema_name: str) -> Any:
        kind = FORMAT_MODES[mode]
        if kind == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "strict": True, "schema": strict_schema(reply_model)},
            }
        if kind == "json_object":
            return {"type": "json_object"}
        return openai.omit

    def _rejects_format(self, exc: openai.APIStatusError, mode: int) -> bool:
        if mode + 1 >= len(FORMAT_MODES):
            return False
        if exc.status_code == 422:
            return True
        if exc.status_code != 400:
            return False
        text = f"{exc.message} {exc.body}".lower()
        return "response_format" in text or FORMAT_MODES[mode] in text

    def _downgrade(self, mode: int, exc: openai.APIStatusError) -> None:
        with self._mode_lock:
            if self._mode == mode:
                self._mode = mode + 1
                log.warning(
                    "LLM server rejected response_format %s (HTTP %s); using %s from now on",
                    FORMAT_MODES[mode],
                    exc.status_code,
                    FORMAT_MODES[mode + 1],
                )

    def _sleep_before_retry(self, attempt: int, reason: str, response: Any) -> None:
        delay = self._retry_after(response)
        if delay is None:
            # Exponential backoff with "equal jitter": at least half the step, never more than the cap.
            step = min(self.backoff_max, self.backoff_base * (2**attempt))
            delay = step / 2 + self._rng.uniform(0, step / 2)
        log.debug("LLM call failed (%s); retry %d in %.2fs", reason, attempt + 1, delay)
        time.sleep(delay)

    def _retry_after(self, response: Any) -> Optional[float]:
        headers = getattr(response, "headers", None)
        if headers is None:
            return None
        value: Optional[float] = None
        try:
            if headers.get("retry-after-ms"):
                value = float(headers["retry-after-ms"]) / 1000
            elif headers.get("retry-after"):
                raw = headers["retry-after"].strip()
                try:
                    value = float(raw)
                except ValueError:
                    when = email.utils.parsedate_to_datetime(raw)
                    value = when.timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return None
        if value is None:
            return None
        return min(max(value, 0.0), self.max_retry_after)

    def _parse(self, response: Any, reply_model: type[R], usage: Usage, calls: int) -> JudgeResult[R]:
        try:
            u = response.usage
            if u is not None:
                usage = usage + Usage(int(u.prompt_tokens or 0), int(u.completion_tokens or 0))
            choice = response.choices[0]
            content = choice.message.content
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError, ValueError):
            return self._failure("malformed response: no choices[0].message", usage, calls, retried=False)
        if not content or not content.strip():
            return self._failure(f"empty reply (finish_reason={finish})", usage, calls, retried=False)
        if len(content) > self.max_reply_chars:
            return self._failure(
                f"reply too large ({len(content)} chars > {self.max_reply_chars})",
                usage,
                calls,
                raw=content[:2000],
                retried=False,
            )
        text = strip_fences(content)
        try:
            data = json.loads(text)
        except ValueError as exc:
            note = " (finish_reason=length: reply cut off)" if finish == "length" else ""
            return self._failure(f"reply is not JSON: {exc}{note}", usage, calls, raw=content, retried=False)
        try:
            reply = reply_model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
            return self._failure(
                f"reply does not match {reply_model.__name__}: {where}: {first.get('msg')}"
                f" ({exc.error_count()} error(s))",
                usage,
                calls,
                raw=content,
                retried=False,
            )
        return JudgeResult(reply=reply, usage=usage, calls=calls, raw=content)

    def _failure(
        self, reason: str, usage: Usage, calls: int, raw: Optional[str] = None, retried: bool = True
    ) -> JudgeResult:
        if retried and calls > 1:
            reason = f"{reason} (gave up after {calls} calls)"
        return JudgeResult(reply=None, error=self._scrub(reason), usage=usage, calls=calls, raw=raw)

    def _describe(self, exc: BaseException) -> str:
        if isinstance(exc, openai.APIStatusError) and isinstance(exc.body, dict):
            inner = exc.body.get("error", exc.body)
            message = inner.get("message") if isinstance(inner, dict) else None
            text = str(message or exc.message)
        else:
            text = str(exc) or type(exc).__name__
        return self._scrub(" ".join(text.split()))[:300]

    def _scrub(self, text: str) -> str:
        return mask_secrets(text, [self._secret])
