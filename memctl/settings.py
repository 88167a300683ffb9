"""Settings, resolved once into a frozen object: flag > MEMCTL_* environment > config file > default.

The config file is `memctl.toml` in the working directory, or the file given with `--config`.
Keys may be flat (`db_url = "..."`) or grouped in tables whose name is the key's prefix
(`[db] url = "..."` is `db_url`). An unknown key is an error naming the key, never ignored.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union, get_args, get_type_hints

from sqlalchemy.engine import make_url

from memctl.errors import ConfigError

DEFAULT_DB_FILE = "memctl.db"
#: llm_concurrency = "auto"'s default cap: keeps a hosted API busy under many accounts' rate
#: limits; beyond it the client's own CPU per request becomes the bound
CONCURRENCY_MAX = 32
#: an agent ID: a GUID, with or without its hyphens
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class Settings:
    """Everything memctl needs to know about where it runs and how hard it works."""

    db_url: str = ""
    db_schema: Optional[str] = None
    db_auto_upgrade: bool = False

    llm_base_url: Optional[str] = None
    llm_api_key: Optional[str] = None
    llm_model: Optional[str] = None
    llm_timeout: float = 60.0
    llm_max_retries: int = 4
    #: requests in flight: "auto" (grow while latency holds, back off on rising latency, timeouts,
    #: 429 and 503) or a number that pins the bound (halved on those, grown back after successes)
    llm_concurrency: Union[int, str] = "auto"
    #: auto's cap (a pinned number is its own ceiling)
    llm_concurrency_max: int = CONCURRENCY_MAX
    #: auto (json_schema, falling back to json_object, then text) or one of those to start from
    llm_response_format: str = "auto"
    #: where the prompt's instructions go: system (a system message), user (folded into the user
    #: message, for servers whose chat template drops system messages) or auto (probe once per run)
    llm_system_role: str = "system"
    #: the model's context window in tokens; a question that would not fit is split or not sent
    llm_context_tokens: Optional[int] = None
    #: append every LLM request and reply to this JSON Lines file (secrets scrubbed)
    llm_log: Optional[str] = None
    #: questions of one kind per request, each answered and validated on its own; 1 = one per request
    questions_per_call: int = 10

    embed_provider: str = "hashing"
    embed_model: Optional[str] = None
    embed_base_url: Optional[str] = None
    embed_api_key: Optional[str] = None
    embed_batch_size: int = 256
    #: the EmbeddingModelID (MJ AIModel ID) of the compute embedder's model, when the store keeps its
    #: vectors: they are then used as-is, and notes memctl creates get one
    embed_model_id: Optional[str] = None

    consolidate_threshold: Optional[float] = None
    contradiction_threshold: Optional[float] = None
    cluster_min_size: int = 3
    cluster_max_size: int = 7
    max_note_chars: int = 2000
    max_pairs: int = 50
    offline_max_pairs: int = 5000
    confidence_floor: float = 0.7
    #: a run whose judge calls at least this share of at least uniform_min_pairs pairs
    #: contradictions applies none of those verdicts (memctl/phases/safety.py)
    uniform_share: float = 0.9
    uniform_min_pairs: int = 20
    #: reject a consolidation whose note does not state every sentence of its sources (weak models)
    consolidate_keep_every_sentence: bool = False
    absorb: bool = True
    #: plan every partition, ignoring the marks of partitions already found to need nothing
    replan: bool = False
    #: above this many Active notes the LLM phases read the scope in slices of whole agents, so peak
    #: memory follows the largest slice (memctl/phases/slices.py); 0 = the whole scope at once
    slice_notes: int = 150_000

    prune_cap: int = 200
    note_retention_days: int = 90
    example_retention_days: int = 180
    low_score_threshold: float = 50.0

    #: freeze "now" (ISO 8601) for reproducible demos and tests; unset means the real clock
    now: Optional[str] = None

    #: the AIAgent row memctl records its runs under (an existing row, e.g. MJ's Memory Manager);
    #: unset means memctl's own row, created on the first run
    agent_id: Optional[str] = None

    gate_hours: float = 24.0
    gate_min_new_notes: int = 0
    lease_seconds: float = 300.0
    #: wall-clock bound of one run: at it memctl stops asking, applies nothing half-done, records
    #: the run Failed, releases the lease and exits 1; the lease is never renewed past it
    run_deadline_seconds: float = 3600.0

    def current_time(self) -> datetime:
        """Return the time memctl treats as now (aware UTC)."""
        if self.now:
            return parse_time(self.now)
        return datetime.now(timezone.utc)

    @property
    def masked_db_url(self) -> str:
        return mask_url(self.db_url)

    @property
    def is_embedded_default(self) -> bool:
        """Return whether the database is a SQLite file (upgraded automatically)."""
        return self.db_url.startswith("sqlite")

    @property
    def stored_model_id(self) -> Optional[str]:
        """Return the EmbeddingModelID whose stored vectors memctl may use, if any."""
        return self.embed_model if self.embed_provider == "stored" else self.embed_model_id

    @property
    def llm_workers(self) -> int:
        """Return how many requests may be in flight at most: the pinned bound, or auto's cap."""
        if self.llm_concurrency == "auto":
            return self.llm_concurrency_max
        return max(1, int(self.llm_concurrency))

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url or self.llm_api_key) and bool(self.llm_model)

    def secrets(self) -> list[str]:
        """Return the secret values that must never be printed or recorded."""
        found = [s for s in (self.llm_api_key, self.embed_api_key) if s]
        try:
            password = make_url(self.db_url).password if self.db_url else None
        except Exception:
            password = None
        if password:
            found.append(str(password))
        return found

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["db_url"] = self.masked_db_url
        for key in ("llm_api_key", "embed_api_key"):
            if shown[key]:
                shown[key] = "***"
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


_SECTION_ALIASES = {"db": "db_", "llm": "llm_", "embed": "embed_", "gate": "gate_", "consolidate": "", "contradictions": "", "prune": "", "archive": "", "lock": ""}


def mask_url(url: str) -> str:
    if not url:
        return url
    try:
        parsed = make_url(url)
    except Exception:
        return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", url)
    if parsed.password is None:
        return url
    return parsed.render_as_string(hide_password=True)


#: a secret at least this long is masked wherever it appears; a shorter one (an API key "x" a
#: local server ignores) only where it stands alone as a token, so "unexpected" stays readable
WHOLE_TEXT_SECRET_CHARS = 8


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """Replace each secret in `text` by ***: anywhere when it is long, as a whole token when short."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(secret) >= WHOLE_TEXT_SECRET_CHARS:
            text = text.replace(secret, "***")
        else:
            # a token: not inside a word, a path, a host name or a longer key (a full stop may end it)
            text = re.sub(rf"(?<![\w.~+/-]){re.escape(secret)}(?![\w~+/-]|\.\w)", "***", text)
    return text


def parse_time(text: str) -> datetime:
    """Parse an ISO 8601 timestamp; a missing offset means UTC."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _coerce(name: str, kind: Any, value: Any, origin: str) -> Any:
    if name == "llm_concurrency":
        return _concurrency(value, origin)
    text = value.strip() if isinstance(value, str) else value
    args = get_args(kind)  # Optional[X] is Union[X, None]; a plain type has none
    base = next(a for a in args if a is not type(None)) if args else kind
    if type(None) in args and (text is None or text == ""):
        return None
    try:
        if base is bool:
            if isinstance(text, bool):
                return text
            lowered = str(text).lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError("expected true or false")
        if base is int:
            if isinstance(text, bool) or (isinstance(text, float) and not text.is_integer()):
                raise ValueError("expected an integer")
            return int(text)
        if base is float:
            if isinstance(text, bool):
                raise ValueError("expected a number")
            number = float(text)
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError("expected a finite number")
            return number
        if not isinstance(text, str):
            raise ValueError("expected a string")
        return text
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{origin}: setting '{name}' has an invalid value {value!r}: {exc}") from None


def _concurrency(value: Any, origin: str) -> Union[int, str]:
    """Return llm_concurrency's value: "auto" or an integer of at least 1 (a ConfigError otherwise)."""
    text = value.strip().lower() if isinstance(value, str) else value
    if text == "auto":
        return "auto"
    number: Optional[int] = None
    if isinstance(text, int) and not isinstance(text, bool):
        number = text
    elif isinstance(text, str) and re.fullmatch(r"\d+", text):
        number = int(text)
    if number is None or number < 1:
        raise ConfigError(f"{origin}: setting 'llm_concurrency' has an invalid value {value!r}: expected auto or an integer of at least 1")
    return number


def _flatten_file(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            prefix = _SECTION_ALIASES.get(key)
            if prefix is None:
                raise ConfigError(f"{path}: unknown section [{key}]")
            for sub, subvalue in value.items():
                if isinstance(subvalue, dict):
                    raise ConfigError(f"{path}: unknown section [{key}.{sub}]")
                name = sub if sub.startswith(prefix) else prefix + sub
                flat[name] = (subvalue, f"{path} [{key}] {sub}")
        else:
            flat[key] = (value, f"{path}: {key}")
    return flat


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    return _flatten_file(data, path)


def resolve(
    flags: Optional[Mapping[str, Any]] = None,
    environ: Optional[Mapping[str, str]] = None,
    config_file: Optional[str | Path] = None,
    cwd: Optional[Path] = None,
) -> Settings:
    """Resolve settings once: flag > MEMCTL_* environment > config file > default.

    `flags` holds only the options the operator actually gave (None means not given).
    """
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    hints = get_type_hints(Settings)
    names = {f.name for f in fields(Settings)}
    values: dict[str, Any] = {}

    path: Optional[Path] = None
    if config_file is not None:
        path = Path(config_file)
    elif environ.get("MEMCTL_CONFIG"):
        path = Path(environ["MEMCTL_CONFIG"])
    elif (cwd / "memctl.toml").is_file():
        path = cwd / "memctl.toml"
    if path is not None:
        for name, (value, origin) in _read_file(path).items():
            if name not in names:
                raise ConfigError(f"{origin}: unknown setting '{name}'")
            values[name] = _coerce(name, hints[name], value, origin)

    if "llm_api_key" not in values and environ.get("OPENAI_API_KEY"):
        values["llm_api_key"] = environ["OPENAI_API_KEY"]
    for name in names:
        env_name = "MEMCTL_" + name.upper()
        if env_name in environ:
            values[name] = _coerce(name, hints[name], environ[env_name], f"environment {env_name}")

    for name, value in (flags or {}).items():
        if value is None:
            continue
        if name not in names:
            raise ConfigError(f"unknown setting '{name}'")
        values[name] = _coerce(name, hints[name], value, f"option --{name.replace('_', '-')}")

    if not values.get("db_url"):
        values["db_url"] = f"sqlite:///{(cwd / DEFAULT_DB_FILE).as_posix()}"
    settings = Settings(**values)
    _validate(settings)
    return settings


def _validate(s: Settings) -> None:
    try:
        make_url(s.db_url)
    except Exception:
        raise ConfigError(f"db_url {mask_url(s.db_url)!r} is not a database URL (e.g. sqlite:///memctl.db, postgresql+psycopg://user@host/db)") from None
    if s.embed_provider not in ("hashing", "stored", "openai", "sentence-transformers"):
        raise ConfigError(f"embed_provider must be one of hashing, stored, openai, sentence-transformers (got {s.embed_provider!r})")
    checks = [
        ("cluster_min_size", s.cluster_min_size >= 2, "at least 2"),
        ("cluster_max_size", s.cluster_max_size >= s.cluster_min_size, "at least cluster_min_size"),
        ("max_pairs", s.max_pairs >= 0, "zero or more"),
        ("offline_max_pairs", s.offline_max_pairs >= 0, "zero or more"),
        ("slice_notes", s.slice_notes >= 0, "zero or more"),
        ("prune_cap", s.prune_cap >= 0, "zero or more"),
        ("llm_concurrency", pinned_or_auto(s.llm_concurrency), "auto or an integer of at least 1"),
        ("llm_concurrency_max", s.llm_concurrency_max >= 1, "at least 1"),
        ("llm_max_retries", s.llm_max_retries >= 0, "zero or more"),
        ("llm_timeout", s.llm_timeout > 0, "positive"),
        ("llm_response_format", s.llm_response_format in ("auto", "json_schema", "json_object", "text"), "auto, json_schema, json_object or text"),
        ("llm_system_role", s.llm_system_role in ("system", "user", "auto"), "system, user or auto"),
        ("questions_per_call", 1 <= s.questions_per_call <= 100, "between 1 and 100"),
        ("llm_context_tokens", s.llm_context_tokens is None or s.llm_context_tokens >= 512, "at least 512"),
        ("gate_hours", s.gate_hours >= 0, "zero or more"),
        ("gate_min_new_notes", s.gate_min_new_notes >= 0, "zero or more"),
        ("lease_seconds", s.lease_seconds >= 5, "at least 5"),
        ("run_deadline_seconds", s.run_deadline_seconds >= 1, "at least 1"),
        ("note_retention_days", s.note_retention_days > 0, "positive"),
        ("example_retention_days", s.example_retention_days > 0, "positive"),
        ("confidence_floor", 0.0 <= s.confidence_floor <= 1.0, "between 0 and 1"),
        ("uniform_share", 0.0 < s.uniform_share <= 1.0, "above 0 and at most 1"),
        ("uniform_min_pairs", s.uniform_min_pairs >= 1, "at least 1"),
        ("max_note_chars", s.max_note_chars >= 100, "at least 100"),
        ("embed_batch_size", s.embed_batch_size >= 1, "at least 1"),
        ("consolidate_threshold", s.consolidate_threshold is None or -1.0 <= s.consolidate_threshold <= 1.0, "between -1 and 1"),
        ("contradiction_threshold", s.contradiction_threshold is None or -1.0 <= s.contradiction_threshold <= 1.0, "between -1 and 1"),
    ]
    for name, ok, expected in checks:
        if not ok:
            raise ConfigError(f"setting '{name}' must be {expected} (got {getattr(s, name)!r})")
    if s.embed_provider == "stored" and not s.embed_model:
        raise ConfigError("embed_provider 'stored' needs embed_model: the EmbeddingModelID the stored vectors were made with")
    if s.now is not None:
        try:
            parse_time(s.now)
        except ValueError:
            raise ConfigError(f"setting 'now' must be an ISO 8601 timestamp (got {s.now!r})") from None
    if s.agent_id is not None and not UUID_RE.fullmatch(s.agent_id):
        raise ConfigError(f"setting 'agent_id' must be an AIAgent ID (a UUID), got {s.agent_id!r}")
    if s.db_schema is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s.db_schema):
        raise ConfigError(f"db_schema {s.db_schema!r} is not a plain identifier")


def pinned_or_auto(value: Any) -> bool:
    """Return whether a concurrency setting is `auto` or a whole number of at least 1 (not a bool)."""
    return value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)


def replace(settings: Settings, **changes: Any) -> Settings:
    """Return a copy of `settings` with `changes` applied and validated."""
    new = dataclasses.replace(settings, **changes)
    _validate(new)
    return new
