"""Build a deterministic, realistic memory store of any size for benchmarks and scale tests.

The same `CorpusSpec` (seed included) always gives the same store, row for row and ID for ID, so
two stores built from one spec are identical: memctl and the baseline, or a sharded and an
unsharded run, work on the same data.

Shape of the store (MemberJunction tables):
- `agents` agents; agent 0 can hold a fixed number of notes (`big_agent_notes`, e.g. 20,000 of
  100,000), the others share the rest evenly. The last agent is Disabled (its notes are orphans);
  a few agents carry their own retention (30 / 180 days) or have AutoArchiveEnabled off.
- Companies (notes / 400) and users (notes / 40), each user in one company; every agent talks
  with its own pool of users (about 25 user-level notes per user), so partitions look like a real
  store's: many small user partitions, fewer company partitions, one agent-wide partition per
  agent (2,000 notes for a 20,000-note agent), and a few project-scoped ones (PrimaryScope*,
  SecondaryScopes).
- Note texts come from templates over attributes and values ("Prefers to be contacted by Slack.",
  "Hosts its workloads on Azure.", "Escalate outages of SSO login to the on-call engineer within
  15 minutes.") and unique context notes ("Asked about webhooks during ticket 48213.").
- Planted problems, counted in the `Manifest`:
  near-duplicate groups of 3..7 paraphrases of one fact in one partition; user notes that a
  company-level note of the same agent already states (absorption); contradictory pairs in
  one partition (competing values, or a statement and its negation) whose dates and access counts
  cover every authority rule (> 7 days apart, same week with different access counts, a tie);
  orphans (Disabled agent, deleted user, inactive user, deleted company, deleted conversation);
  expired notes and examples; stale notes (not accessed within their agent's retention) and stale
  low-score examples. Manual, Protected and Immutable notes are mixed in.
- Vectors: with `dim` > 0 every note carries a stored EmbeddingVector (a JSON array) of model
  `MODEL_ID`, built so that paraphrases are close (cosine ~0.89), contradictory pairs close (~0.8)
  and everything else far apart (< 0.45); use it with embed_provider="stored",
  embed_model=MODEL_ID. With `dim` = 0 the store holds text only, for the hashing embedder.

Writing uses SQLAlchemy Core executemany batches with identical keys in every row (executemany
takes its columns from the first row), inside one write transaction.

    python benchmarks/corpus.py --notes 100000 --agents 50 --big-agent-notes 20000 \
        --db-url sqlite:///benchmarks/results/100k.db
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memctl.store import models as m  # noqa: E402
from memctl.store.engine import write  # noqa: E402

#: the EmbeddingModelID (an MJ AIModel ID) of the synthetic stored vectors
MODEL_ID = "b3a5e0c2-6d65-4d63-8000-00000000a384"
NOW = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)
BATCH = 2000  # rows per executemany
USER_NOTES_PER_USER = 25
PROJECT_ENTITY_ID = "d1e5a7c0-6d65-4d63-8000-0000000000e1"  # the MJ entity "Projects"

# (attribute, verb, rest with {v}, values, note type). A user- or company-level fact reads
# "<Verb>s <rest>." and its negation "Does not <verb> <rest>."; an agent-wide instruction reads
# "<Verb> <rest>." and "Do not <verb> <rest>.".
USER_FACTS = [
    (
        "contact channel",
        "prefer",
        "to be contacted by {v}",
        ["email", "Slack", "phone", "SMS", "Microsoft Teams", "WhatsApp"],
        "Preference",
    ),
    (
        "reply language",
        "want",
        "replies in {v}",
        ["English", "German", "French", "Spanish", "Japanese", "Portuguese", "Dutch"],
        "Preference",
    ),
    ("units", "use", "{v} units", ["metric", "imperial"], "Preference"),
    ("tone", "prefer", "a {v} tone in replies", ["formal", "casual", "concise", "detailed"], "Preference"),
    ("timezone", "work", "in the {v} timezone", ["CET", "PST", "EST", "IST", "JST", "AEST", "GMT"], "Context"),
    ("meeting slot", "prefer", "meetings in the {v}", ["early morning", "late morning", "early afternoon", "late afternoon"], "Preference"),
    ("report format", "want", "reports as {v} files", ["PDF", "Excel", "CSV", "PowerPoint"], "Preference"),
    ("editor", "use", "{v} as the main editor", ["VS Code", "Vim", "Emacs", "IntelliJ", "Sublime Text"], "Context"),
    ("laptop", "run", "{v} on the work laptop", ["macOS", "Windows 11", "Ubuntu", "Fedora"], "Context"),
    ("catering", "need", "{v} options at catered meetings", ["vegetarian", "vegan", "gluten-free", "halal", "kosher"], "Constraint"),
    ("date format", "write", "dates in {v} format", ["ISO 8601", "US", "European"], "Preference"),
    (
        "call summary",
        "like",
        "a {v} summary after each call",
        ["short email", "bullet-point", "one-line Slack", "detailed written"],
        "Preference",
    ),
    (
        "purchase approval",
        "need",
        "approval from {v} before purchases",
        ["finance", "the CTO", "procurement", "the team lead"],
        "Constraint",
    ),
    ("dashboard theme", "prefer", "the {v} theme in the dashboard", ["dark", "light", "high-contrast"], "Preference"),
]
COMPANY_FACTS = [
    ("billing cycle", "pay", "for the subscription {v}", ["monthly", "quarterly", "annually"], "Context"),
    ("cloud", "host", "its workloads on {v}", ["AWS", "Azure", "Google Cloud", "on-premises servers"], "Context"),
    ("crm", "track", "customers in {v}", ["Salesforce", "HubSpot", "Dynamics 365", "Zoho"], "Context"),
    ("support tier", "hold", "a {v} support contract", ["gold", "silver", "bronze", "platinum"], "Context"),
    ("sso", "use", "{v} for single sign-on", ["Okta", "Azure AD", "Google Workspace", "OneLogin"], "Context"),
    ("data residency", "require", "customer data to stay in {v}", ["the EU", "the US", "Canada", "Australia"], "Constraint"),
    ("payment terms", "pay", "invoices on {v} terms", ["net 30", "net 45", "net 60"], "Context"),
    ("fiscal year", "start", "its fiscal year in {v}", ["January", "April", "July", "October"], "Context"),
    ("ticketing", "log", "incidents in {v}", ["Jira", "ServiceNow", "Zendesk", "Freshdesk"], "Context"),
]
FEATURES = [
    "the reporting API",
    "SSO login",
    "bulk export",
    "the mobile app",
    "invoice download",
    "webhooks",
    "audit logs",
    "role permissions",
    "the search index",
    "data retention settings",
    "two-factor authentication",
    "the billing portal",
    "custom dashboards",
    "rate limits",
    "the CSV importer",
    "the Outlook plugin",
    "usage alerts",
    "the sandbox tenant",
]
AGENT_FACTS = [
    (
        "escalation",
        "escalate",
        "outages of {f} to the on-call engineer within {v}",
        ["15 minutes", "30 minutes", "1 hour", "4 hours"],
        "Constraint",
    ),
    (
        "reply length",
        "keep",
        "replies about {f} under {v}",
        ["100 words", "200 words", "three sentences", "five bullet points"],
        "Preference",
    ),
    ("bug queue", "file", "bugs in {f} in the {v} queue", ["Tier 1", "Tier 2", "Platform", "Security"], "Context"),
    ("first response", "promise", "a first response on {f} issues within {v}", ["2 hours", "4 hours", "1 business day"], "Constraint"),
]
CONTEXT_TEMPLATES = [
    ("Context", "Asked about {f} during ticket {n}."),
    ("Issue", "Reported that {f} was slow on a {d}; ticket {n}."),
    ("Context", "Is evaluating the {p} add-on for the {t} team."),
    ("Context", "Mentioned a renewal discussion for contract {n}."),
    ("Issue", "Had trouble with {f} after the {k} upgrade (case {n})."),
    ("Context", "Requested a demo of {f} for {c} colleagues."),
    ("Issue", "Known issue: {f} times out for exports above {c} MB (bug {n})."),
]
PRODUCTS = ["analytics", "compliance", "premium support", "forecasting", "workflow automation", "data warehouse"]
TEAMS = ["finance", "sales", "support", "platform", "legal", "marketing", "operations"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
PREFIXES = ["", "Confirmed: ", "Reminder: ", "Repeated on a call: ", "Restated: ", "Noted again: ", "Per the account team: "]
SUFFIXES = ["", " whenever possible", " for every follow-up", ", as confirmed on a call", " going forward", " in all cases", " by default"]
FIRST_NAMES = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Yara",
]
COMPANY_WORDS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Wonka", "Tyrell", "Cyberdyne", "Soylent", "Vandelay"]

# Vector recipe weights: a fact's direction is its attribute plus its value plus its own noise.
ATTRIBUTE_WEIGHT, VALUE_WEIGHT = 0.5, 0.5
PARAPHRASE_NOISE = 0.35  # paraphrases of one fact: cosine ~ 1 / (1 + 0.35^2) = 0.89
PAIR_NOISE = 0.4  # the two sides of a contradiction: cosine ~ 0.8


@lru_cache(maxsize=None)
def direction(seed: int, dim: int, key: str) -> np.ndarray:
    """Return a fixed random unit vector for `key`: the same in every process for one seed and dim."""
    digest = hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=8).digest()
    vector = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(dim)
    return vector / np.linalg.norm(vector)


def _fact_key(fact: tuple, feature: str) -> str:
    return f"{fact[0]}|{feature}"


class TextVectors:
    """Embed a text the way the corpus's stored vectors were made: from the facts it states.

    This stands in for the store's embedding model when memctl embeds a note it creates (the
    benchmark stub serves it on /v1/embeddings). A text stating a corpus fact ("... to be
    contacted by email ...") lands on that fact's attribute and value directions, as the stored
    vectors of its paraphrases do; any other text gets its own random direction. A lexical
    stand-in would instead find every consolidated note similar to every other one, since they
    share the corpus's template words, which no semantic model does.
    """

    def __init__(self, seed: int, dim: int) -> None:
        self.seed, self.dim = seed, dim
        self.phrases: list[tuple[str, str, str]] = []  # (lowercase phrase, attribute key, value)
        for facts in (USER_FACTS, COMPANY_FACTS, AGENT_FACTS):
            for fact in facts:
                for feature in FEATURES if "{f}" in fact[2] else [""]:
                    for value in fact[3]:
                        phrase = fact[2].replace("{v}", value).replace("{f}", feature).lower()
                        self.phrases.append((phrase, _fact_key(fact, feature), value))

    def __call__(self, text: str) -> np.ndarray:
        lowered = text.lower()
        digest = hashlib.blake2b(lowered.encode(), digest_size=8).digest()
        noise = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(self.dim)
        noise /= np.linalg.norm(noise)
        stated = [(key, value) for phrase, key, value in self.phrases if phrase in lowered]
        if not stated:
            return noise
        vector = sum(
            ATTRIBUTE_WEIGHT * direction(self.seed, self.dim, f"attribute:{key}")
            + VALUE_WEIGHT * direction(self.seed, self.dim, f"value:{value}")
            for key, value in stated
        )
        if "not " in lowered:
            vector = vector + 0.25 * direction(self.seed, self.dim, "negation")
        vector = vector / np.linalg.norm(vector) + 0.3 * noise
        return vector / np.linalg.norm(vector)


@dataclass(frozen=True)
class CorpusSpec:
    """What to generate; the seed makes it reproducible."""

    notes: int = 1000
    agents: int = 5
    big_agent_notes: int = 0
    dim: int = 384
    seed: int = 7
    now: datetime = NOW
    duplicate_share: float = 0.05
    contradiction_share: float = 0.02
    absorption_share: float = 0.005
    orphan_share: float = 0.01
    expired_share: float = 0.01
    stale_share: float = 0.03
    example_share: float = 0.10
    manual_share: float = 0.03
    protected_share: float = 0.01
    immutable_share: float = 0.005
    model_id: str = MODEL_ID

    def label(self) -> str:
        size = f"{self.notes // 1000}k" if self.notes % 1000 == 0 else str(self.notes)
        return (
            f"{size}-{self.agents}a"
            + (f"-big{self.big_agent_notes}" if self.big_agent_notes else "")
            + (f"-d{self.dim}" if self.dim else "-text")
            + f"-s{self.seed}"
        )


@dataclass
class Manifest:
    """What was planted, so runs can be checked against it."""

    spec: dict[str, Any]
    counts: dict[str, int] = field(default_factory=dict)
    duplicate_groups: list[list[str]] = field(default_factory=list)
    contradiction_pairs: list[tuple[str, str, str]] = field(default_factory=list)  # (a, b, expected authority rule)
    absorptions: list[tuple[str, str]] = field(default_factory=list)  # (user note, company note stating it)
    orphans: dict[str, list[str]] = field(default_factory=dict)
    expired_notes: list[str] = field(default_factory=list)
    stale_notes: list[str] = field(default_factory=list)
    partitions: int = 0
    largest_partition: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """Return the counts (no ID lists)."""
        return {
            **self.counts,
            "duplicateGroups": len(self.duplicate_groups),
            "duplicateNotes": sum(len(g) for g in self.duplicate_groups),
            "contradictionPairs": len(self.contradiction_pairs),
            "absorptions": len(self.absorptions),
            "orphans": {k: len(v) for k, v in self.orphans.items()},
            "expiredNotes": len(self.expired_notes),
            "staleNotes": len(self.stale_notes),
            "partitions": self.partitions,
            "largestPartition": self.largest_partition,
            "buildSeconds": round(self.seconds, 2),
        }


@dataclass
class _Partition:
    level: str  # user | company | agent | project
    agent: int
    company: Optional[str]
    user: Optional[str]
    size: int
    entity: Optional[str] = None
    record: Optional[str] = None
    scopes: Optional[str] = None
    used_attributes: set = field(default_factory=set)
    free: int = 0


@dataclass
class _Note:
    """A note before it becomes a row: everything but the vector, and how to build the vector."""

    id: str
    partition: _Partition
    text: str
    type: str
    recipe: tuple  # ("fact", attribute, value) | ("context", template) | ("given", index)
    created_days: float
    access: int
    accessed_days: Optional[float]
    expires_days: Optional[float] = None
    auto: bool = True
    tier: str = "Standard"
    conversation: Optional[str] = None
    agent_id: Optional[str] = None
    user_id: Optional[str] = None
    company_id: Optional[str] = None


class Generator:
    """Generate one corpus; `rows()` yields the store's rows table by table."""

    def __init__(self, spec: CorpusSpec) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        self.r = random.Random(spec.seed)
        self.manifest = Manifest(spec={k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in asdict(spec).items()})
        self.given_vectors: list[np.ndarray] = []
        self._counter = 0
        self._plan()

    # -- ids, directions ---------------------------------------------------------------------
    def uid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def direction(self, key: str) -> np.ndarray:
        """Return the fixed random unit vector of `key` (see `direction`)."""
        return direction(self.spec.seed, self.spec.dim, key)

    def _unit_noise(self, n: int = 1) -> np.ndarray:
        noise = self.rng.standard_normal((n, self.spec.dim))
        return noise / np.linalg.norm(noise, axis=1, keepdims=True)

    @staticmethod
    def _unit(v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v)

    # -- entities ---------------------------------------------------------------------------
    def _plan(self) -> None:
        s = self.spec
        self.companies = [
            (self.uid(), f"{COMPANY_WORDS[i % len(COMPANY_WORDS)]} {i // len(COMPANY_WORDS) + 1}") for i in range(max(3, s.notes // 400))
        ]
        n_users = max(6, s.notes // 40)
        self.users = []  # (id, name, company id, active)
        inactive_every = 50
        for i in range(n_users):
            name = f"{FIRST_NAMES[i % len(FIRST_NAMES)]} {i // len(FIRST_NAMES) + 1}"
            inactive = i % inactive_every == inactive_every - 1 or i == n_users - 1
            self.users.append((self.uid(), name, self.companies[i % len(self.companies)][0], not inactive))
        self.active_users = [u for u in self.users if u[3]]
        self.inactive_users = [u for u in self.users if not u[3]]
        self.deleted_users = [self.uid() for _ in range(max(1, n_users // 50))]
        self.deleted_company = self.uid()
        self.deleted_conversations = [self.uid() for _ in range(max(1, s.notes // 1000))]
        self.user_company = {u[0]: u[2] for u in self.users}
        self.conversations: dict[str, list[str]] = {u[0]: [self.uid() for _ in range(4)] for u in self.users}

        self.agents = []  # (id, name, status, note days, example days, auto archive)
        for i in range(max(2, s.agents)):
            status = "Disabled" if i == max(2, s.agents) - 1 else "Active"
            note_days = {1: 30, 3: 180}.get(i)
            example_days = {3: 90}.get(i)
            auto_archive = i != 2
            self.agents.append((self.uid(), f"Agent {i:02d}", status, note_days, example_days, auto_archive))
        self.active_agents = [i for i, a in enumerate(self.agents) if a[2] == "Active"]

        n_orphans = round(s.notes * s.orphan_share)
        live = s.notes - n_orphans
        per_agent = self._split_agents(live)
        self.partitions: list[_Partition] = []
        for agent, count in zip(self.active_agents, per_agent):
            self._agent_partitions(agent, count)
        sizes = [p.size for p in self.partitions if p.size]
        self.manifest.partitions = len(sizes)
        self.manifest.largest_partition = max(sizes) if sizes else 0

        self.notes: list[_Note] = []
        for p in self.partitions:
            p.free = p.size
        self._plant_duplicates(round(s.notes * s.duplicate_share))
        self._plant_contradictions(round(s.notes * s.contradiction_share / 2))
        self._plant_absorptions(round(s.notes * s.absorption_share / 2))
        self._fill_background()
        self._plant_orphans(n_orphans)
        self._plant_expiry_and_staleness()
        self.notes.sort(key=lambda n: n.id)  # insertion order unrelated to planting order
        self.manifest.counts = {
            "notes": len(self.notes),
            "agents": len(self.agents),
            "companies": len(self.companies),
            "users": len(self.users),
            "conversations": sum(len(v) for v in self.conversations.values()),
            "examples": round(s.notes * s.example_share),
        }

    def _split_agents(self, live: int) -> list[int]:
        n = len(self.active_agents)
        big = min(self.spec.big_agent_notes, live) if self.spec.big_agent_notes else 0
        if big:
            rest = live - big
            counts = [big] + [rest // (n - 1) + (1 if i < rest % (n - 1) else 0) for i in range(n - 1)] if n > 1 else [live]
        else:
            counts = [live // n + (1 if i < live % n else 0) for i in range(n)]
        return counts

    def _agent_partitions(self, agent: int, count: int) -> None:
        rng = self.rng
        user_notes = round(count * 0.65)
        company_notes = round(count * 0.22)
        project_notes = round(count * 0.03)
        agent_notes = count - user_notes - company_notes - project_notes
        pool_size = max(1, min(len(self.active_users), round(user_notes / USER_NOTES_PER_USER)))
        pool = [self.active_users[i] for i in sorted(rng.choice(len(self.active_users), pool_size, replace=False))]
        for user, size in zip(pool, rng.multinomial(user_notes, [1 / pool_size] * pool_size)):
            self.partitions.append(_Partition("user", agent, user[2], user[0], int(size)))
        companies = sorted({u[2] for u in pool})
        for company, size in zip(companies, rng.multinomial(company_notes, [1 / len(companies)] * len(companies))):
            self.partitions.append(_Partition("company", agent, company, None, int(size)))
        projects = max(1, project_notes // 40)
        for j, size in enumerate(rng.multinomial(project_notes, [1 / projects] * projects)):
            scopes = json.dumps({"region": "EU" if j % 2 else "US", "team": TEAMS[j % len(TEAMS)]}) if j % 3 else None
            self.partitions.append(
                _Partition(
                    "project", agent, companies[j % len(companies)], None, int(size), PROJECT_ENTITY_ID, f"PRJ-{agent:02d}{j:03d}", scopes
                )
            )
        self.partitions.append(_Partition("agent", agent, None, None, agent_notes))

    # -- facts and texts ----------------------------------------------------------------------
    def _facts_for(self, p: _Partition) -> list[tuple]:
        return AGENT_FACTS if p.level in ("agent", "project") else COMPANY_FACTS if p.level == "company" else USER_FACTS

    def _fact_keys(self, p: _Partition) -> list[tuple[str, tuple]]:
        """Return every (attribute key, fact) a partition's level can state."""
        keys = []
        for fact in self._facts_for(p):
            for feature in FEATURES if "{f}" in fact[2] else [""]:
                keys.append((_fact_key(fact, feature), (fact, feature)))
        return keys

    def _pick_fact(self, p: _Partition) -> Optional[tuple[str, tuple, str]]:
        """Return (attribute key, fact, value) for an attribute the partition has not stated yet.

        One fact per attribute and partition keeps the background free of accidental
        duplicates and contradictions: those are only where they were planted.
        """
        unused = [k for k in self._fact_keys(p) if k[0] not in p.used_attributes]
        if not unused:
            return None
        key, fact = unused[self.r.randrange(len(unused))]
        p.used_attributes.add(key)
        return key, fact, self.r.choice(fact[0][3])

    @staticmethod
    def _sentence(p: _Partition, fact: tuple, value: str, negated: bool = False) -> str:
        (attribute, verb, rest, _values, _type), feature = fact
        body = rest.replace("{v}", value).replace("{f}", feature)
        if p.level in ("agent", "project"):
            return f"Do not {verb} {body}." if negated else f"{verb.capitalize()} {body}."
        return f"Does not {verb} {body}." if negated else f"{verb.capitalize()}s {body}."

    def _context_text(self) -> tuple[str, str, str]:
        r = self.r
        kind, template = CONTEXT_TEMPLATES[r.randrange(len(CONTEXT_TEMPLATES))]
        text = template.format(
            f=r.choice(FEATURES),
            n=r.randrange(10000, 99999),
            d=r.choice(WEEKDAYS),
            p=r.choice(PRODUCTS),
            t=r.choice(TEAMS),
            k=f"{r.randrange(2, 9)}.{r.randrange(0, 20)}",
            c=r.randrange(3, 400),
        )
        return kind, template, text

    def _ids(self, p: _Partition) -> tuple[str, Optional[str], Optional[str]]:
        return self.agents[p.agent][0], p.company, p.user

    def _conversation(self, p: _Partition) -> Optional[str]:
        if p.user is None or self.r.random() >= 0.7:
            return None
        return self.r.choice(self.conversations[p.user])

    def _retention(self, p: _Partition) -> int:
        return self.agents[p.agent][3] or 90

    def _live_access(self, p: _Partition, created: float) -> Optional[float]:
        """Return days since last access for a note that must not look stale (None: never accessed)."""
        window = self._retention(p) * 0.8
        if created < window and self.r.random() < 0.1:
            return None
        return self.r.uniform(0, min(created, window))

    def _new_note(self, p: _Partition, text: str, kind: str, recipe: tuple, created: float, access: int, **kw: Any) -> _Note:
        agent_id, company, user = self._ids(p)
        accessed = kw.pop("accessed_days") if "accessed_days" in kw else self._live_access(p, created)
        conversation = kw.pop("conversation") if "conversation" in kw else self._conversation(p)
        note = _Note(
            id=self.uid(),
            partition=p,
            text=text,
            type=kind,
            recipe=recipe,
            created_days=created,
            access=access,
            accessed_days=accessed,
            agent_id=agent_id,
            company_id=company,
            user_id=user,
            conversation=conversation,
            **kw,
        )
        self.notes.append(note)
        p.free -= 1
        return note

    def _choose_partition(self, need: int) -> Optional[_Partition]:
        """Pick a partition with room for `need` more notes and an unused attribute, weighted by room."""
        if not hasattr(self, "_room"):
            self._room = np.array([p.free for p in self.partitions], dtype=np.float64)
            self._attributes_left = np.array([len(self._fact_keys(p)) for p in self.partitions], dtype=np.int64)
        weights = np.where((self._room >= need) & (self._attributes_left > 0), self._room, 0.0)
        total = weights.sum()
        if total <= 0:
            return None
        index = int(self.rng.choice(len(weights), p=weights / total))
        self._room[index] -= need
        self._attributes_left[index] -= 1
        return self.partitions[index]

    def _plant_duplicates(self, budget: int) -> None:
        r = self.r
        while budget >= 3:
            size = min(r.randint(3, 7), budget)
            p = self._choose_partition(size)
            if p is None:
                return
            key, fact, value = self._pick_fact(p)  # type: ignore[misc]
            base = self._sentence(p, fact, value)
            variants = r.sample([(a, b) for a in PREFIXES for b in SUFFIXES], size)
            seed_vector = self._fact_vector(key, value) if self.spec.dim else None
            group = []
            newest = r.uniform(1, 20)
            for prefix, suffix in variants:
                text = prefix + (base[0].lower() + base[1:] if prefix else base)
                text = text[:-1] + suffix + "."
                recipe = (
                    "given",
                    self._give(self._unit(seed_vector + PARAPHRASE_NOISE * self._unit_noise()[0])) if seed_vector is not None else None,
                )
                note = self._new_note(p, text, fact[0][4], recipe, newest + r.uniform(0, 40), int(self.rng.poisson(4)))
                group.append(note.id)
            self.manifest.duplicate_groups.append(group)
            budget -= size

    def _plant_contradictions(self, pairs: int) -> None:
        r = self.r
        rules = ["recency", "access", "tie"]
        for i in range(pairs):
            p = self._choose_partition(2)
            if p is None:
                return
            key, fact, value = self._pick_fact(p)  # type: ignore[misc]
            negation = r.random() < 0.5 or len(fact[0][3]) < 2
            other = value if negation else r.choice([v for v in fact[0][3] if v != value])
            text_a = self._sentence(p, fact, value)
            text_b = self._sentence(p, fact, other, negated=negation)
            rule = rules[i % len(rules)]
            older = r.uniform(20, 60)
            if rule == "recency":
                dates, access = (older, older - r.uniform(8, 18)), (int(self.rng.poisson(20)) + 5, int(self.rng.poisson(2)))
            elif rule == "access":
                dates, access = (older, older - r.uniform(0, 5)), (25, 2)
            else:
                dates, access = (older, older - r.uniform(0, 5)), (3, 3)
            recipes: list[tuple] = [(None,), (None,)]
            if self.spec.dim:
                common = self._unit(self._fact_vector(key, value) + 0.0)
                side_b = self.direction("negation") if negation else self.direction(f"value:{other}")
                recipes = [
                    ("given", self._give(self._unit(common + PAIR_NOISE * self._unit_noise()[0]))),
                    ("given", self._give(self._unit(common + PAIR_NOISE * self._unit_noise()[0] + 0.25 * side_b))),
                ]
            a = self._new_note(p, text_a, fact[0][4], recipes[0], dates[0], access[0])
            b = self._new_note(p, text_b, fact[0][4], recipes[1], dates[1], access[1])
            self.manifest.contradiction_pairs.append((a.id, b.id, ("negation " if negation else "competing value ") + rule))

    def _plant_absorptions(self, count: int) -> None:
        """Plant user notes that a company-level note of the same agent already states (DESIGN 3)."""
        r = self.r
        companies = {(p.agent, p.company): p for p in self.partitions if p.level == "company"}
        users = [p for p in self.partitions if p.level == "user" and (p.agent, p.company) in companies]
        for _ in range(count):
            weights = np.array(
                [
                    p.free if p.free >= 1 and len(p.used_attributes) < len(USER_FACTS) and companies[(p.agent, p.company)].free >= 1 else 0
                    for p in users
                ],
                dtype=np.float64,
            )
            if weights.sum() <= 0:
                return
            narrow = users[int(self.rng.choice(len(users), p=weights / weights.sum()))]
            broad = companies[(narrow.agent, narrow.company)]
            key, fact, value = self._pick_fact(narrow)  # type: ignore[misc]
            sentence = self._sentence(narrow, fact, value)
            recipes: list[tuple] = [(None,), (None,)]
            if self.spec.dim:
                base = self._fact_vector(key, value)
                recipes = [("given", self._give(self._unit(base + PARAPHRASE_NOISE * self._unit_noise()[0]))) for _ in range(2)]
            created = r.uniform(5, 90)
            user_note = self._new_note(narrow, sentence, fact[0][4], recipes[0], created, int(self.rng.poisson(2)))
            company_note = self._new_note(
                broad,
                "Team-wide: " + sentence[0].lower() + sentence[1:],
                fact[0][4],
                recipes[1],
                created + r.uniform(1, 30),
                int(self.rng.poisson(6)),
            )
            self.manifest.absorptions.append((user_note.id, company_note.id))

    def _fill_background(self) -> None:
        r = self.r
        s = self.spec
        for p in self.partitions:
            while p.free > 0:
                created = r.uniform(1, 365)
                picked = self._pick_fact(p) if r.random() < 0.45 else None
                if picked is not None:
                    key, fact, value = picked
                    note = self._new_note(
                        p, self._sentence(p, fact, value), fact[0][4], ("fact", key, value), created, int(self.rng.poisson(3))
                    )
                else:
                    kind, template, text = self._context_text()
                    note = self._new_note(p, text, kind, ("context", template), created, int(self.rng.poisson(2)))
                roll = r.random()
                if roll < s.manual_share:
                    note.auto = False
                elif roll < s.manual_share + s.protected_share:
                    note.tier = "Protected"
                elif roll < s.manual_share + s.protected_share + s.immutable_share:
                    note.tier = "Immutable"
                elif r.random() < 0.1:
                    note.expires_days = r.uniform(10, 200)

    def _plant_orphans(self, count: int) -> None:
        r = self.r
        kinds = [
            ("disabledAgent", 0.4),
            ("deletedUser", 0.2),
            ("inactiveUser", 0.15),
            ("deletedConversation", 0.15),
            ("deletedCompany", 0.1),
        ]
        disabled = len(self.agents) - 1
        self.manifest.orphans = {k: [] for k, _ in kinds}
        for i in range(count):
            kind = kinds[-1][0]
            roll, acc = (i + 0.5) / count, 0.0
            for name, share in kinds:
                acc += share
                if roll < acc:
                    kind = name
                    break
            agent = disabled if kind == "disabledAgent" else r.choice(self.active_agents)
            user = r.choice(self.active_users)
            if kind == "deletedCompany":
                p = _Partition("company", agent, self.deleted_company, None, 1)
            elif kind == "deletedUser":
                p = _Partition("user", agent, user[2], r.choice(self.deleted_users), 1)
            elif kind == "inactiveUser":
                p = _Partition(
                    "user",
                    agent,
                    self.inactive_users[i % len(self.inactive_users)][2],
                    self.inactive_users[i % len(self.inactive_users)][0],
                    1,
                )
            else:
                p = _Partition("user", agent, user[2], user[0], 1)
            kind_name, template, text = self._context_text()
            conversation = r.choice(self.deleted_conversations) if kind == "deletedConversation" else None
            note = self._new_note(
                p, text, kind_name, ("context", template), r.uniform(1, 60), 1, conversation=conversation, accessed_days=r.uniform(0, 10)
            )
            self.manifest.orphans[kind].append(note.id)

    def _plant_expiry_and_staleness(self) -> None:
        r = self.r
        s = self.spec
        planted = {i for g in self.manifest.duplicate_groups for i in g} | {
            i for a, b, _ in self.manifest.contradiction_pairs for i in (a, b)
        }
        planted |= {i for pair in self.manifest.absorptions for i in pair}
        planted |= {i for ids in self.manifest.orphans.values() for i in ids}
        candidates = [n for n in self.notes if n.id not in planted and n.auto and n.tier == "Standard" and n.expires_days is None]
        candidates = [n for n in candidates if self.agents[n.partition.agent][5]]  # agents with retention archival on
        picked = r.sample(candidates, min(len(candidates), round(s.notes * (s.expired_share + s.stale_share))))
        n_expired = round(len(picked) * s.expired_share / max(1e-9, s.expired_share + s.stale_share))
        for note in picked[:n_expired]:
            note.expires_days = -r.uniform(1, 30)
            self.manifest.expired_notes.append(note.id)
        for note in picked[n_expired:]:
            idle = self._retention(note.partition) + r.uniform(5, 150)
            note.accessed_days = idle
            note.created_days = max(note.created_days, idle + r.uniform(0, 60))
            self.manifest.stale_notes.append(note.id)

    def _fact_vector(self, key: str, value: str) -> np.ndarray:
        base = ATTRIBUTE_WEIGHT * self.direction(f"attribute:{key}") + VALUE_WEIGHT * self.direction(f"value:{value}")
        return self._unit(base + self._unit_noise()[0])

    def _give(self, vector: np.ndarray) -> int:
        self.given_vectors.append(vector)
        return len(self.given_vectors) - 1

    # -- rows -------------------------------------------------------------------------------
    def _vectors(self, notes: list[_Note]) -> list[Optional[str]]:
        if not self.spec.dim:
            return [None] * len(notes)
        noise = self._unit_noise(len(notes))
        out = []
        for note, r in zip(notes, noise):
            if note.recipe[0] == "given":
                v = self.given_vectors[note.recipe[1]]
            elif note.recipe[0] == "fact":
                v = self._unit(
                    ATTRIBUTE_WEIGHT * self.direction(f"attribute:{note.recipe[1]}")
                    + VALUE_WEIGHT * self.direction(f"value:{note.recipe[2]}")
                    + r
                )
            else:
                v = self._unit(0.3 * self.direction(f"context:{note.recipe[1]}") + r)
            out.append(json.dumps(np.round(v, 6).tolist(), separators=(",", ":")))
        return out

    def _note_row(self, n: _Note, vector: Optional[str]) -> dict[str, Any]:
        now = self.spec.now
        created = now - timedelta(days=n.created_days)
        p = n.partition
        return {
            "ID": n.id,
            "AgentID": n.agent_id,
            "AgentNoteTypeID": None,
            "Note": n.text,
            "UserID": n.user_id,
            "Type": n.type,
            "IsAutoGenerated": n.auto,
            "Comments": None,
            "Status": "Active",
            "SourceConversationID": n.conversation,
            "SourceConversationDetailID": None,
            "SourceAIAgentRunID": None,
            "CompanyID": n.company_id,
            "EmbeddingVector": vector,
            "EmbeddingModelID": self.spec.model_id if vector is not None else None,
            "PrimaryScopeEntityID": p.entity,
            "PrimaryScopeRecordID": p.record,
            "SecondaryScopes": p.scopes,
            "LastAccessedAt": now - timedelta(days=n.accessed_days) if n.accessed_days is not None else None,
            "AccessCount": n.access,
            "ExpiresAt": now + timedelta(days=n.expires_days) if n.expires_days is not None else None,
            "ConsolidatedIntoNoteID": None,
            "ConsolidationCount": 0,
            "DerivedFromNoteIDs": None,
            "ProtectionTier": n.tier,
            "ImportanceScore": None,
            "__mj_CreatedAt": created,
            "__mj_UpdatedAt": created,
        }

    def note_batches(self, size: int = BATCH) -> Iterator[list[dict[str, Any]]]:
        """Yield the AIAgentNote rows in batches (vectors are built batch by batch)."""
        for start in range(0, len(self.notes), size):
            batch = self.notes[start : start + size]
            yield [self._note_row(n, v) for n, v in zip(batch, self._vectors(batch))]

    def entity_rows(self) -> dict[sa.Table, list[dict[str, Any]]]:
        """Return the rows of the small tables: companies, users, conversations, agents."""
        audit = {"__mj_CreatedAt": self.spec.now - timedelta(days=700), "__mj_UpdatedAt": self.spec.now - timedelta(days=700)}
        return {
            m.company: [{"ID": cid, "Name": name, **audit} for cid, name in self.companies],
            m.user: [
                {"ID": uid, "Name": name, "Email": f"user{i}@example.com", "IsActive": active, **audit}
                for i, (uid, name, _c, active) in enumerate(self.users)
            ],
            m.conversation: [
                {"ID": cid, "UserID": uid, "Name": f"Conversation {j}", "IsArchived": False, **audit}
                for uid, ids in self.conversations.items()
                for j, cid in enumerate(ids)
            ],
            m.agent: [
                {
                    "ID": aid,
                    "Name": name,
                    "Status": status,
                    "NoteRetentionDays": nd,
                    "ExampleRetentionDays": ed,
                    "AutoArchiveEnabled": auto,
                    **audit,
                }
                for aid, name, status, nd, ed, auto in self.agents
            ],
        }

    def example_rows(self) -> list[dict[str, Any]]:
        """Return the AIAgentExample rows: mostly live, some expired, some stale with a low score."""
        s = self.spec
        r = self.r
        now = s.now
        rows = []
        users_by_agent: dict[int, list[tuple[str, str]]] = {}
        for p in self.partitions:
            if p.user:
                users_by_agent.setdefault(p.agent, []).append((p.user, p.company or ""))
        expired = stale = 0
        for i in range(round(s.notes * s.example_share)):
            agent = self.active_agents[i % len(self.active_agents)]
            user, company = r.choice(users_by_agent.get(agent) or [(None, None)])
            days = self.agents[agent][4] or 180
            created = r.uniform(1, 400)
            roll = r.random()
            score = round(r.uniform(50, 100), 2)
            accessed: Optional[float] = r.uniform(0, min(created, days * 0.8))
            expires = None
            auto = r.random() > 0.05
            if roll < 0.05 and self.agents[agent][5]:
                expires, expired, auto = -r.uniform(1, 60), expired + 1, True
            elif roll < 0.15 and self.agents[agent][5]:
                auto = True
                score = round(r.uniform(5, 49), 2)
                accessed = days + r.uniform(5, 200)
                created = max(created, accessed + 1)
                stale += 1
            feature = r.choice(FEATURES)
            rows.append(
                {
                    "ID": self.uid(),
                    "AgentID": self.agents[agent][0],
                    "UserID": user,
                    "CompanyID": company or None,
                    "Type": "Example",
                    "ExampleInput": f"How do I configure {feature}?",
                    "ExampleOutput": f"Open Settings, choose {feature}, and follow step {r.randrange(1, 9)}.",
                    "IsAutoGenerated": auto,
                    "SuccessScore": score,
                    "Comments": None,
                    "Status": "Active",
                    "SourceConversationID": None,
                    "SourceConversationDetailID": None,
                    "SourceAIAgentRunID": None,
                    "EmbeddingVector": None,
                    "EmbeddingModelID": None,
                    "PrimaryScopeEntityID": None,
                    "PrimaryScopeRecordID": None,
                    "SecondaryScopes": None,
                    "LastAccessedAt": now - timedelta(days=accessed) if accessed is not None else None,
                    "AccessCount": r.randrange(0, 30),
                    "ExpiresAt": now + timedelta(days=expires) if expires is not None else None,
                    "__mj_CreatedAt": now - timedelta(days=created),
                    "__mj_UpdatedAt": now - timedelta(days=created),
                }
            )
        self.manifest.counts["examplesExpired"] = expired
        self.manifest.counts["examplesStaleLowScore"] = stale
        return rows


def build(engine: Engine, spec: CorpusSpec) -> Manifest:
    """Write the corpus of `spec` into an empty, migrated store; return what was planted."""
    started = time.monotonic()
    gen = Generator(spec)
    with write(engine) as conn:
        for table, rows in gen.entity_rows().items():
            for start in range(0, len(rows), BATCH):
                conn.execute(table.insert(), rows[start : start + BATCH])
        for batch in gen.note_batches():
            conn.execute(m.note.insert(), batch)
        examples = gen.example_rows()
        for start in range(0, len(examples), BATCH):
            conn.execute(m.example.insert(), examples[start : start + BATCH])
    gen.manifest.seconds = time.monotonic() - started
    return gen.manifest


def fresh_store(db_url: str, schema: Optional[str] = None, **settings_flags: Any) -> tuple[Any, Engine]:
    """Create an empty, migrated store (a SQLite file is replaced, a PostgreSQL schema dropped first)."""
    from memctl.settings import resolve
    from memctl.store import schema as store_schema
    from memctl.store.engine import make_engine

    url = sa.engine.make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        for suffix in ("", "-wal", "-shm"):
            Path(url.database + suffix).unlink(missing_ok=True)
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    elif schema:
        admin = sa.create_engine(db_url)
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()
    settings = resolve(flags={"db_url": db_url, "db_schema": schema, **settings_flags}, environ={})
    engine = make_engine(settings)
    store_schema.upgrade(engine, settings)
    return settings, engine


def main(argv: Optional[list[str]] = None) -> int:
    """Build a corpus into a fresh store and print what was planted."""
    parser = argparse.ArgumentParser(description="Build a deterministic memory store for benchmarks.")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--big-agent-notes", type=int, default=0, help="notes held by agent 0 (0: spread evenly)")
    parser.add_argument("--dim", type=int, default=384, help="stored vector dimension; 0 = text only (hashing embedder)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db-url", required=True, help="e.g. sqlite:///benchmarks/results/store.db (the file is replaced)")
    parser.add_argument("--schema", default=None, help="PostgreSQL schema (dropped and recreated)")
    args = parser.parse_args(argv)
    spec = CorpusSpec(notes=args.notes, agents=args.agents, big_agent_notes=args.big_agent_notes, dim=args.dim, seed=args.seed)
    _settings, engine = fresh_store(args.db_url, args.schema)
    manifest = build(engine, spec)
    engine.dispose()
    print(json.dumps(manifest.summary(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
