"""An OpenAI-compatible chat client that returns parsed replies or the reason there is none.

memctl does its own retries (the `openai` client's are off) to count every call, honour Retry-After
and retry only transient failures. A per-call failure never raises (only configuration errors do),
and every call has a wall-clock deadline, slow bodies included. A server that rejects a strict JSON
schema is asked for json_object, then text, from then on.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence, TypeVar, Union

import openai
from pydantic import BaseModel, ValidationError

from memctl.errors import ConfigError
from memctl.llm.base import JudgeResult, Usage
from memctl.llm.calls import AdaptiveLimiter, CallDropped, CallLog, CallTimeout, Limiter, ReplyTooLarge, within
from memctl.llm.schema import schema_instructions, strict_schema, strip_fences
from memctl.settings import mask_secrets, pinned_or_auto

try:  # the HTTP library under `openai`: httpx2 in recent releases, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed openai
    import httpx as _http  # type: ignore[no-redef]

log = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: response_format modes, most to least structured; a client only ever moves down this list
FORMAT_MODES = ("json_schema", "json_object", "text")
#: values of the llm_response_format setting: negotiate from the top, or start at one mode
FORMAT_SETTINGS = ("auto", *FORMAT_MODES)
#: statuses that mean "busy", not "broken": retried however often they repeat, and they halve concurrency
OVERLOAD_STATUSES = (429, 503)
TRANSIENT_STATUSES = (429, 502, 503, 504)
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class LLMClient:
    """Calls an OpenAI-compatible chat endpoint with retries, format fallback and bounded concurrency."""

    def __init__(
        self,
        base_url: Optional[str],
        api_key: Optional[str],
        model: str,
        timeout: float = 60,
        max_retries: int = 4,
        concurrency: Union[int, str] = 8,
        *,
        concurrency_max: int = 32,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        max_retry_after: float = 120.0,
        max_reply_chars: int = 100_000,
        response_format: str = "auto",
        system_role: str = "system",
        log_path: Union[str, Path, None] = None,
        secrets: Sequence[str] = (),
    ) -> None:
        if not base_url and not api_key:
            raise ConfigError("LLM: set a base_url (OpenAI-compatible server) or an API key (api.openai.com)")
        if not model or not model.strip():
            raise ConfigError("LLM model is required")
        if timeout <= 0:
            raise ConfigError(f"LLM timeout must be positive, not {timeout}")
        if max_retries < 0:
            raise ConfigError(f"LLM max_retries must be 0 or more, not {max_retries}")
        adaptive = concurrency == "auto"
        if not pinned_or_auto(concurrency):
            raise ConfigError(f"LLM concurrency must be auto or at least 1, not {concurrency!r}")
        if concurrency_max < 1:
            raise ConfigError(f"LLM concurrency_max must be at least 1, not {concurrency_max}")
        if backoff_base < 0 or backoff_max < 0 or max_retry_after < 0:
            raise ConfigError("LLM backoff settings must not be negative")
        if response_format not in FORMAT_SETTINGS:
            raise ConfigError(f"llm_response_format must be one of {', '.join(FORMAT_SETTINGS)} (got {response_format!r})")
        if system_role not in ("system", "user", "auto"):
            raise ConfigError(f"llm_system_role must be system, user or auto (got {system_role!r})")
        self.base_url = str(base_url).rstrip("/") if base_url else OPENAI_BASE_URL
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        #: the most requests ever in flight: the pinned bound, or the cap of the adaptive one
        self.concurrency = concurrency_max if adaptive else int(concurrency)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.max_reply_chars = max_reply_chars
        # Local servers ignore the key, but the openai package insists on one.
        self._secrets = [s for s in (api_key or "", *secrets) if s]
        self._openai = openai.OpenAI(base_url=self.base_url, api_key=api_key or "unused", timeout=self.timeout, max_retries=0)
        self._limiter = AdaptiveLimiter(concurrency_max) if adaptive else Limiter(self.concurrency)
        self._mode_lock = threading.Lock()
        self._mode = 0 if response_format == "auto" else FORMAT_MODES.index(response_format)
        self._token_param = "max_tokens"
        self._system_role = system_role
        self._rng = random.Random()
        self._counts_lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(
            ("requests", "retries", "timeouts", "formatFallbacks", "concurrencyBackoffs", "deterministicErrors"), 0
        )
        self._log = CallLog(log_path, self._scrub) if log_path else None
        #: response_format and schema-in-words per (schema model, name or mode): built once, shared by
        #: every request, never written to
        self._formats: dict[tuple[type[BaseModel], str], dict[str, Any]] = {}

    def __repr__(self) -> str:
        return f"LLMClient(base_url={self.base_url!r}, model={self.model!r}, format={self.response_format_mode!r})"

    @property
    def response_format_mode(self) -> str:
        """The response_format mode requests use now: json_schema, json_object or text."""
        return FORMAT_MODES[self._mode]

    @property
    def concurrency_now(self) -> int:
        """The concurrency bound in force now (the configured one, or less after overload)."""
        return self._limiter.limit

    def concurrency_mark(self) -> int:
        """Return a mark of now for `concurrency_reached`."""
        return self._limiter.mark()

    def concurrency_reached(self, mark: int) -> tuple[int, int]:
        """Return the highest concurrency bound in force since `mark`, and the bound now."""
        return self._limiter.peak_since(mark), self._limiter.limit

    @property
    def system_role(self) -> str:
        """Where the instructions go: system (a system message) or user (folded into the user message)."""
        return self._system_role

    def counters(self) -> dict[str, int]:
        """Return how many requests, retries, timeouts, format fallbacks and back-offs happened so far."""
        with self._counts_lock:
            return dict(self._counts)

    def _count(self, name: str, n: int = 1) -> None:
        with self._counts_lock:
            self._counts[name] += n

    def close(self) -> None:
        """Close the HTTP connection pool (and the call log)."""
        self._openai.close()
        if self._log is not None:
            self._log.close()

    def complete_json(
        self, system: str, user: str, reply_model: type[R], schema_name: str, max_tokens: Optional[int] = None,
        schema_model: Optional[type[BaseModel]] = None,
    ) -> JudgeResult[R]:
        """Ask for a JSON reply and parse it into `reply_model`; failures come back as `error`.

        `schema_model`, when given, is the schema the server enforces (e.g. strict, while a lenient
        `BatchReply` parses). A transient failure other than a timeout comes back with `outage=True`.
        """
        schema = schema_model or reply_model
        if not _SCHEMA_NAME.match(schema_name):
            raise ConfigError(f"schema_name must match {_SCHEMA_NAME.pattern}, not {schema_name!r}")
        if self._system_role == "auto":
            self.probe_system_message()
        calls = 0
        attempt = 0
        usage = Usage()
        last_error: Optional[tuple[int, str]] = None
        while True:
            calls += 1
            started = self._limiter.acquire()
            overloaded = timed_out = replied = False
            # Read after a slot is free: another call may have downgraded the format meanwhile.
            mode = self._mode
            try:
                data = self._call(self._messages(system, user, schema, mode), schema, schema_name, mode, max_tokens)
                replied = True
            except openai.APIStatusError as exc:
                overloaded = exc.status_code in OVERLOAD_STATUSES
                if self._rejects_format(exc, mode):
                    self._downgrade(mode, exc)
                    continue
                if self._rejects_max_tokens(exc):
                    continue
                reason = f"HTTP {exc.status_code}: {self._describe(exc)}"
                retryable, hint = exc.status_code == 429 or exc.status_code >= 500, exc.response
                if retryable and exc.status_code not in TRANSIENT_STATUSES:
                    body = (exc.status_code, self._describe(exc))
                    if body == last_error:
                        self._count("deterministicErrors")
                        return self._failure(f"{reason} (the same error twice: not retried)", usage, calls, retried=False)
                    last_error = body
            except (openai.APITimeoutError, CallTimeout):
                overloaded = timed_out = True
                self._count("timeouts")
                reason, retryable, hint = f"timed out after {self.timeout:g}s", True, None
            except (openai.APIConnectionError, CallDropped) as exc:
                reason, retryable, hint = f"connection error: {self._describe(exc.__cause__ or exc)}", True, None
            except ReplyTooLarge as exc:
                return self._failure(f"reply too large ({exc})", usage, calls, raw=exc.head, retried=False, answered=True)
            except Exception as exc:  # noqa: BLE001 - a per-call failure must not abort the phase
                reason = f"malformed response: {type(exc).__name__}: {self._describe(exc)}"
                return self._failure(reason, usage, calls, retried=False)
            else:
                return self._parse(data, reply_model, usage, calls)
            finally:
                # latency teaches the adaptive bound, per schema and order of magnitude of max_tokens
                kind = f"{schema_name}/{(max_tokens or 0).bit_length()}" if replied else None
                if self._limiter.release(overloaded, started, kind):
                    self._count("concurrencyBackoffs")
                    log.warning("LLM server is overloaded (%s); concurrency lowered to %d", "timeout/429/503", self._limiter.limit)
            if not retryable or attempt >= self.max_retries:
                # a timeout is not an outage: a batched request may only be too slow, and is split
                return replace(self._failure(reason, usage, calls), outage=retryable and not timed_out)
            self._count("retries")
            self._sleep_before_retry(attempt, reason, hint)
            attempt += 1

    def probe_system_message(self) -> bool:
        """Find out once whether the server reads the system message; fold it into the user message if not.

        Compares prompt_tokens of two one-token requests with and without a system message.
        Returns whether the system message is kept (True when the server reports no usage).
        """
        with self._mode_lock:
            if self._system_role != "auto":
                return self._system_role == "system"
            self._system_role = "system"  # while probing, and if the probe tells nothing
        user = [{"role": "user", "content": "Say OK."}]
        system = [{"role": "system", "content": "You are a careful assistant. Answer in one word, in English."}]
        counts = []
        for messages in (user, system + user):
            try:
                data = self._call(messages, None, "probe", len(FORMAT_MODES) - 1, 1)
                counts.append(int((data.get("usage") or {}).get("prompt_tokens") or 0))
            except Exception as exc:  # noqa: BLE001 - a probe that fails decides nothing
                log.debug("system-message probe failed: %s", exc)
                return True
        if counts[0] and counts[0] == counts[1]:
            with self._mode_lock:
                self._system_role = "user"
            log.warning(
                "LLM server drops the system message (prompt tokens %d with and without it); "
                "memctl puts its instructions in the user message (set llm_system_role = \"user\" to skip this probe)",
                counts[0],
            )
            return False
        return True

    def _messages(self, system: str, user: str, reply_model: Optional[type[BaseModel]], mode: int) -> list[dict[str, str]]:
        if reply_model is not None and FORMAT_MODES[mode] != "json_schema":
            user = user + schema_instructions(reply_model, FORMAT_MODES[mode])
        if self._system_role == "user":
            return [{"role": "user", "content": f"{system}\n\n---\n\n{user}"}]
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def _call(
        self, messages: list[dict[str, str]], reply_model: Optional[type[BaseModel]], schema_name: str, mode: int,
        max_tokens: Optional[int],
    ) -> dict[str, Any]:
        """Make one HTTP call within the deadline; return the decoded JSON body."""
        self._count("requests")
        # keys in the order openai's `create` writes them, so the body is the bytes it would send
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        if max_tokens:
            params[self._token_param] = int(max_tokens)
        rf = self._response_format(mode, reply_model, schema_name) if reply_model is not None else None
        if rf is not None:
            params["response_format"] = rf
        params["temperature"] = 0
        started = time.monotonic()
        deadline = started + self.timeout
        finished, raw, error = within(lambda: self._fetch(params, deadline), self.timeout + 0.05)
        seconds = time.monotonic() - started
        if not finished:
            raw, error = None, CallTimeout(f"no complete reply within {self.timeout:g}s")
        if self._log is not None:
            self._log_call(params, schema_name, seconds, raw, error)
        if error is not None:
            raise error
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"the body is not JSON ({exc}): {raw[:120]!r}") from None
        if not isinstance(data, dict):
            raise ValueError("the body is not a JSON object")
        return data

    def _fetch(self, params: dict[str, Any], deadline: float) -> bytes:
        # `post` keeps the client's auth, pool and error statuses but skips `create`'s params
        # validation and `with_options` copy, which cost more CPU than the HTTP exchange
        remaining = max(0.01, deadline - time.monotonic())
        cap = 4 * self.max_reply_chars + 65536
        chunks: list[bytes] = []
        size = 0
        response = self._openai.post(
            "/chat/completions", cast_to=_http.Response, body=params, options={"timeout": remaining}, stream=True
        )
        try:
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:
                    raise ReplyTooLarge(f"body over {cap} bytes", b"".join(chunks)[:2000].decode("utf-8", "replace"))
                if time.monotonic() > deadline:
                    raise CallTimeout(f"body still arriving after {self.timeout:g}s")
        except _http.TimeoutException:
            raise CallTimeout(f"body stalled within {self.timeout:g}s") from None
        except _http.TransportError as exc:
            raise CallDropped(f"{type(exc).__name__}: {exc}") from None
        finally:
            response.close()
        return b"".join(chunks)

    def _log_call(
        self, params: dict[str, Any], schema_name: str, seconds: float, body: Optional[bytes], error: Optional[BaseException]
    ) -> None:
        assert self._log is not None
        record: dict[str, Any] = {
            "at": datetime.now(timezone.utc).isoformat(),
            "model": self.model,
            "schema": schema_name,
            "responseFormat": (params.get("response_format") or {}).get("type", "text"),
            "maxTokens": params.get(self._token_param),
            "messages": params["messages"],
            "seconds": round(seconds, 3),
        }
        if body is not None:
            try:
                record["reply"] = json.loads(body)
            except ValueError:
                record["reply"] = body[:20000].decode("utf-8", "replace")
        if error is not None:
            status = getattr(error, "status_code", None)
            record["error"] = f"HTTP {status}: {self._describe(error)}" if status else f"{type(error).__name__}: {error}"
            if isinstance(error, openai.APIStatusError):
                record["errorBody"] = error.body
        self._log.write(record)

    def _response_format(self, mode: int, reply_model: Optional[type[BaseModel]], schema_name: str) -> Optional[dict[str, Any]]:
        kind = FORMAT_MODES[mode]
        if kind == "json_schema" and reply_model is not None:
            key = (reply_model, schema_name)
            if key not in self._formats:
                schema = {"name": schema_name, "strict": True, "schema": strict_schema(reply_model)}
                self._formats[key] = {"type": "json_schema", "json_schema": schema}
            return self._formats[key]
        if kind == "json_object":
            return {"type": "json_object"}
        return None

    def _rejects_format(self, exc: openai.APIStatusError, mode: int) -> bool:
        if mode + 1 >= len(FORMAT_MODES):
            return False
        if exc.status_code == 422:
            return True
        if exc.status_code != 400 and exc.status_code < 500:
            return False
        text = f"{exc.message} {exc.body}".lower()
        return "response_format" in text or FORMAT_MODES[mode] in text or FORMAT_MODES[mode].replace("_", " ") in text

    def _rejects_max_tokens(self, exc: openai.APIStatusError) -> bool:
        # OpenAI's reasoning models take max_completion_tokens and refuse max_tokens by name.
        text = f"{exc.message} {exc.body}"
        if exc.status_code == 400 and self._token_param == "max_tokens" and "max_completion_tokens" in text:
            with self._mode_lock:
                self._token_param = "max_completion_tokens"
            return True
        return False

    def _downgrade(self, mode: int, exc: openai.APIStatusError) -> None:
        with self._mode_lock:
            if self._mode == mode:
                self._mode = mode + 1
                self._count("formatFallbacks")
                log.warning(
                    "LLM server rejected response_format %s (HTTP %s); using %s from now on",
                    FORMAT_MODES[mode], exc.status_code, FORMAT_MODES[mode + 1],
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
        try:
            if headers.get("retry-after-ms"):
                value = float(headers["retry-after-ms"]) / 1000
            elif headers.get("retry-after"):
                raw = headers["retry-after"].strip()
                try:
                    value = float(raw)
                except ValueError:
                    value = email.utils.parsedate_to_datetime(raw).timestamp() - time.time()
            else:
                return None
        except (TypeError, ValueError, IndexError):
            return None
        return min(max(value, 0.0), self.max_retry_after)

    def _parse(self, data: dict[str, Any], reply_model: type[R], usage: Usage, calls: int) -> JudgeResult[R]:
        try:
            u = data.get("usage")
            if isinstance(u, dict):
                usage = usage + Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0))
            choice = data["choices"][0]
            content = choice["message"]["content"]
            finish = choice.get("finish_reason")
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return self._failure("malformed response: no choices[0].message", usage, calls, retried=False)
        if not isinstance(content, str) or not content.strip():
            return self._failure(f"empty reply (finish_reason={finish})", usage, calls, retried=False, answered=True)
        if len(content) > self.max_reply_chars:
            reason = f"reply too large ({len(content)} chars > {self.max_reply_chars})"
            return self._failure(reason, usage, calls, raw=content[:2000], retried=False, answered=True)
        text = strip_fences(content)
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            note = " (finish_reason=length: reply cut off)" if finish == "length" else ""
            return self._failure(f"reply is not JSON: {exc}{note}", usage, calls, raw=content, retried=False, answered=True)
        try:
            reply = reply_model.model_validate(parsed)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
            reason = f"reply does not match {reply_model.__name__}: {where}: {first.get('msg')} ({exc.error_count()} error(s))"
            return self._failure(reason, usage, calls, raw=content, retried=False, answered=True)
        return JudgeResult(reply=reply, usage=usage, calls=calls, raw=content, answered=True)

    def _failure(
        self, reason: str, usage: Usage, calls: int, raw: Optional[str] = None, retried: bool = True, answered: bool = False
    ) -> JudgeResult:
        if retried and calls > 1:
            reason = f"{reason} (gave up after {calls} calls)"
        return JudgeResult(reply=None, error=self._scrub(reason), usage=usage, calls=calls, raw=raw, answered=answered)

    def _describe(self, exc: BaseException) -> str:
        if isinstance(exc, openai.APIStatusError) and isinstance(exc.body, dict):
            inner = exc.body.get("error", exc.body)
            message = inner.get("message") if isinstance(inner, dict) else None
            text = str(message or exc.message)
        else:
            text = str(exc) or type(exc).__name__
        return self._scrub(" ".join(text.split()))[:300]

    def _scrub(self, text: str) -> str:
        return mask_secrets(text, self._secrets)
