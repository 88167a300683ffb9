"""Benchmark memctl's dream on generated stores, side by side with a MemberJunction-style baseline.

`make bench` runs the default suite (a few minutes on 2 cores):
  1k   1,000 notes, 5 agents, stub latency 300 ms: SC-004 (a full dream <= 15 s), a second dream
       over the unchanged store, and the baseline on an identical store.
  10k  10,000 notes, 10 agents, 300 ms: memctl twice, the baseline (>= 20x target), and two
       shard workers (two processes, --shard 0/2 and 1/2) against one worker.
`--suite scale` runs 10k / 30k / 100k notes over 50 agents (agent 0 holds a fifth), with a
zero-latency stub: wall time, peak RSS and growth (the 100k target is <= 60 s and <= 2 GiB).

For every run the table shows, per phase: wall and CPU seconds, LLM calls (HTTP requests,
retries included), prompt and completion tokens (the servers' usage), verdict-cache hits, SQL statements issued (one per cursor execute; an
executemany is one), and the peak resident memory of the process while the phase ran. Every
measured run is a fresh worker process (`run.py worker`), so peak RSS is that run's alone; the
stub LLM server (benchmarks/stub.py: tests/llmstub.py with corpus-aware embeddings) runs in its
own process on 127.0.0.1 with the configured per-call latency. benchmarks/README.md explains
every figure and holds the measured results.

Embedders (`--embedder`):
  stored          stored 384-d vectors, embed_provider=stored (memctl-created notes get no vector)
  stored+compute  the same stored vectors, plus the stub's /v1/embeddings standing in for the
                  store's model (embed_provider=openai, embed_model_id=the stored model), so the
                  notes memctl creates get a vector of the same model, as in production
  hashing         a text-only store and memctl's offline hashing embedder

Examples:
  .venv/bin/python benchmarks/run.py                         # the default suite
  .venv/bin/python benchmarks/run.py --suite scale --backend postgresql
  .venv/bin/python benchmarks/run.py --notes 10000 --agents 10 --latency 0.3 --shards 2
  .venv/bin/python benchmarks/run.py --json benchmarks/results/bench.json
  .venv/bin/python benchmarks/run.py report benchmarks/results/bench.json   # markdown tables
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.corpus import MODEL_ID, NOW, CorpusSpec, build, fresh_store  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PG_URL = os.environ.get("MEMCTL_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
PHASES = ("consolidate", "contradictions", "prune", "archive")
GIB = 2**30


@dataclass(frozen=True)
class Scenario:
    """One store size and shape, and what to run on it."""

    name: str
    notes: int
    agents: int = 5
    big_agent_notes: int = 0
    latency: float = 0.3
    baseline: bool = True
    baseline_sample: Optional[int] = None
    second: bool = True
    shards: int = 0


SUITES: dict[str, list[Scenario]] = {
    "default": [
        Scenario("1k", 1_000, agents=5, latency=0.3),
        Scenario("10k", 10_000, agents=10, latency=0.3, shards=2),
    ],
    "scale": [
        Scenario("scale-10k", 10_000, agents=50, big_agent_notes=2_000, latency=0.0, baseline=False),
        Scenario("scale-30k", 30_000, agents=50, big_agent_notes=6_000, latency=0.0, baseline=False),
        Scenario("scale-100k", 100_000, agents=50, big_agent_notes=20_000, latency=0.0, baseline=False, shards=2),
    ],
}
SUITES["all"] = SUITES["default"] + SUITES["scale"]


# --- the worker: one measured invocation in its own process ------------------------------------


def worker(config: dict[str, Any]) -> dict[str, Any]:
    """Run one dream (or the baseline) against a prepared store and return what was measured."""
    from benchmarks.meter import Meter, peak_rss_bytes
    from memctl import api
    from memctl.settings import resolve
    from memctl.store.engine import make_engine

    settings = resolve(flags=config["settings"], environ={})
    engine = make_engine(settings)
    out: dict[str, Any] = {
        "kind": config["kind"],
        "shard": config.get("shard"),
        "importSeconds": warm_imports(),
        "loadBefore": load_average(),
    }
    profiler = None
    if config.get("profile"):
        from pyinstrument import Profiler  # a measuring tool, not a memctl dependency: pip install pyinstrument

        profiler = Profiler(interval=0.002)
        profiler.start()
    with Meter(engine) as meter:
        started, wall_started = time.monotonic(), time.time()
        if config["kind"] == "baseline":
            from benchmarks.baseline import Baseline

            phases = Baseline(engine, settings, meter.phase, config.get("sample"), config.get("embedSample")).run()
            out["status"] = "completed"
        else:
            report = api.dream(settings, api.RunOptions(shard=config.get("shard")), force=True, engine=engine)
            out["status"] = report.status
            out["message"] = report.message
            phases = {}
            for p in report.phases:
                o = p.output
                phases[p.phase] = {
                    "seconds": round(p.seconds, 3),
                    "outcome": p.outcome,
                    "applied": p.applied,
                    "llmCalls": int(o.get("llmCalls", 0)),
                    "promptTokens": int(o.get("promptTokens", 0) or 0),
                    "completionTokens": int(o.get("completionTokens", 0) or 0),
                    "cacheHits": int(o.get("cacheHits", o.get("cached", 0)) or 0),
                    "error": p.error,
                    "output": {k: v for k, v in o.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
                    "input": {k: v for k, v in p.input.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
                }
        out["seconds"] = round(time.monotonic() - started, 3)
        out["startedAt"], out["endedAt"] = wall_started, time.time()
    if profiler is not None:
        profiler.stop()
        Path(config["profile"]).write_text(profiler.output_text(unicode=False, color=False, show_all=False), encoding="utf-8")
        out["profile"] = config["profile"]
    out["loadAfter"] = load_average()
    metered = meter.as_dict()
    for name, figures in phases.items():
        figures.update({k: v for k, v in metered.get(name, {}).items() if k != "meteredSeconds"})
    out["phases"] = phases
    out["overhead"] = {k: v for k, v in metered.items() if k not in phases}
    out["statements"] = sum(v["statements"] for v in metered.values())
    out["cpuSeconds"] = round(sum(v["cpuSeconds"] for v in metered.values()), 3)
    out["peakRssMiB"] = round(peak_rss_bytes() / 2**20, 1)
    engine.dispose()
    return out


def load_average() -> Optional[float]:
    """Return the 1-minute load average (other work on the machine skews every figure)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def warm_imports() -> float:
    """Import what a dream imports lazily (openai alone takes ~1 s), so the clock sees only the work.

    Process start and imports are a fixed cost of every invocation, the same for a first and a
    second dream and for the baseline; the JSON reports it as importSeconds.
    """
    import importlib

    started = time.monotonic()
    for module in (
        "openai",
        "memctl.llm.client",
        "memctl.llm.judge",
        "memctl.llm.factory",
        "memctl.embed.openai",
        "memctl.embed.hashing",
        "memctl.phases.consolidate",
        "memctl.phases.contradictions",
        "memctl.phases.prune",
        "memctl.phases.archive",
        "memctl.temporal",
    ):
        importlib.import_module(module)
    return round(time.monotonic() - started, 3)


@dataclass
class Worker:
    """A running worker process and the file its JSON result goes to."""

    process: subprocess.Popen
    result: Path


def run_worker(config: dict[str, Any], prefix: Sequence[str] = ()) -> Worker:
    """Start a worker process for `config` (optionally under a profiler given by `prefix`)."""
    handle = tempfile.NamedTemporaryFile(prefix="memctl-bench-", suffix=".json", delete=False)
    handle.close()
    config = {**config, "result": handle.name}
    process = subprocess.Popen(
        [*prefix, sys.executable, str(Path(__file__).resolve()), "worker", json.dumps(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    return Worker(process, Path(handle.name))


def collect(worker: Worker) -> dict[str, Any]:
    """Wait for a worker and return its result."""
    _stdout, stderr = worker.process.communicate()
    try:
        if worker.process.returncode != 0:
            raise RuntimeError(f"benchmark worker failed (exit {worker.process.returncode}):\n{stderr[-4000:]}")
        return json.loads(worker.result.read_text(encoding="utf-8"))
    finally:
        worker.result.unlink(missing_ok=True)


# --- the stub LLM server ---------------------------------------------------------------------


class Stub:
    """The stub LLM server (benchmarks/stub.py over tests/llmstub.py) in its own process.

    The LLM is remote in real life: the stub must not share the measured process's GIL.
    """

    def __init__(self, latency: float, dim: int, seed: int = 7, slots: Optional[int] = None) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "stub.py"),
                "--latency",
                str(latency),
                "--dim",
                str(max(dim, 16)),
                "--seed",
                str(seed),
                *(["--slots", str(slots)] if slots else []),
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        line = self.process.stdout.readline() if self.process.stdout else ""
        if "listening on" not in line:
            self.stop()
            raise RuntimeError(f"the stub LLM server did not start: {line!r}")
        self.base_url = line.split()[-1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


# --- stores ----------------------------------------------------------------------------------


@dataclass
class Store:
    """One copy of a scenario's corpus."""

    url: str
    schema: Optional[str]


class Stores:
    """Identical copies of one corpus: a SQLite file copied, or a PostgreSQL schema rebuilt (same seed)."""

    def __init__(self, backend: str, spec: CorpusSpec, label: str) -> None:
        self.backend = backend
        self.spec = spec
        self.label = label.replace("-", "_").replace(".", "_")
        self.made: list[Store] = []
        self.manifest: Optional[dict[str, Any]] = None
        self.build_seconds = 0.0
        self._base: Optional[Path] = None

    def copy(self, name: str) -> Store:
        started = time.monotonic()
        if self.backend == "sqlite":
            folder = RESULTS / "db"
            folder.mkdir(parents=True, exist_ok=True)
            if self._base is None:
                self._base = folder / f"{self.label}-base.db"
                _settings, engine = fresh_store(f"sqlite:///{self._base}")
                self.manifest = build(engine, self.spec).summary()
                engine.dispose()  # the last connection closing checkpoints the WAL into the file
            target = folder / f"{self.label}-{name}.db"
            for suffix in ("-wal", "-shm"):
                Path(str(target) + suffix).unlink(missing_ok=True)
            shutil.copyfile(self._base, target)
            store = Store(f"sqlite:///{target}", None)
        else:
            schema = re.sub(r"\W", "_", f"bench_{self.label}_{name}")[:63]
            _settings, engine = fresh_store(PG_URL, schema)
            manifest = build(engine, self.spec).summary()
            engine.dispose()
            self.manifest = self.manifest or manifest
            store = Store(PG_URL, schema)
        self.build_seconds += time.monotonic() - started
        self.made.append(store)
        return store

    def drop(self) -> None:
        import sqlalchemy as sa

        for store in self.made:
            if store.schema:
                engine = sa.create_engine(store.url)
                with engine.begin() as conn:
                    conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{store.schema}" CASCADE')
                engine.dispose()
            else:
                path = Path(store.url.removeprefix("sqlite:///"))
                for suffix in ("", "-wal", "-shm"):
                    Path(str(path) + suffix).unlink(missing_ok=True)
        if self._base is not None:
            self._base.unlink(missing_ok=True)


# --- the orchestration -----------------------------------------------------------------------


def settings_for(store: Store, stub: Stub, args: argparse.Namespace) -> dict[str, Any]:
    """Return the setting flags of a measured run (resolved by the worker)."""
    flags: dict[str, Any] = {
        "db_url": store.url,
        "db_schema": store.schema,
        "now": NOW.isoformat(),
        "llm_base_url": stub.base_url,
        "llm_model": "stub-model",
        "llm_api_key": "benchmark",
        "llm_concurrency": args.llm_concurrency,
        "max_pairs": args.max_pairs,
        "prune_cap": args.prune_cap,
    }
    if args.embedder == "stored":
        flags.update(embed_provider="stored", embed_model=MODEL_ID)
    elif args.embedder == "stored+compute":
        flags.update(embed_provider="openai", embed_model="stub-embedding", embed_model_id=MODEL_ID, embed_base_url=stub.base_url)
    else:
        flags.update(embed_provider="hashing")
    return flags


def run_scenario(scenario: Scenario, args: argparse.Namespace, say: Any) -> dict[str, Any]:
    dim = 0 if args.embedder == "hashing" else args.dim
    spec = CorpusSpec(notes=scenario.notes, agents=scenario.agents, big_agent_notes=scenario.big_agent_notes, dim=dim, seed=args.seed)
    stores = Stores(args.backend, spec, f"{scenario.name}-{spec.label()}")
    stub = Stub(scenario.latency, dim or args.dim, args.seed)
    result: dict[str, Any] = {
        "scenario": asdict(scenario),
        "corpus": spec.label(),
        "embedder": args.embedder,
        "backend": args.backend,
        "runs": {},
    }
    try:
        say(f"[{scenario.name}] building {scenario.notes:,} notes over {scenario.agents} agents on {args.backend}...")
        memctl_store = stores.copy("memctl")
        result["manifest"] = stores.manifest
        say(f"[{scenario.name}] memctl dream (first)...")
        result["runs"]["memctl"] = collect(
            run_worker({"kind": "dream", "settings": settings_for(memctl_store, stub, args), "profile": profile(args, scenario, "first")})
        )
        if scenario.second:
            say(f"[{scenario.name}] memctl dream (second, unchanged store)...")
            result["runs"]["memctl-second"] = collect(
                run_worker(
                    {"kind": "dream", "settings": settings_for(memctl_store, stub, args), "profile": profile(args, scenario, "second")}
                )
            )
            # The nightly steady state: nothing changed since the last dream, neither by the
            # application nor by that dream (the second one changes what the first left to do).
            say(f"[{scenario.name}] memctl dream (third, nothing changed since the second)...")
            result["runs"]["memctl-third"] = collect(
                run_worker(
                    {"kind": "dream", "settings": settings_for(memctl_store, stub, args), "profile": profile(args, scenario, "third")}
                )
            )
        if scenario.baseline and not args.no_baseline:
            sample = args.baseline_sample or scenario.baseline_sample
            say(f"[{scenario.name}] baseline (MJ cost structure{f', sample {sample} notes' if sample else ''})...")
            store = stores.copy("baseline")
            result["runs"]["baseline"] = collect(
                run_worker({"kind": "baseline", "settings": settings_for(store, stub, args), "sample": sample})
            )
            if args.baseline_embed_sample:
                say(
                    f"[{scenario.name}] baseline embedding each note's text ({args.baseline_embed_sample} calls per loop measured, the rest charged)..."
                )
                store = stores.copy("baseline-embed")
                result["runs"]["baseline-embed"] = collect(
                    run_worker(
                        {
                            "kind": "baseline",
                            "settings": settings_for(store, stub, args),
                            "sample": sample,
                            "embedSample": args.baseline_embed_sample,
                        }
                    )
                )
        shards = args.shards if args.shards is not None else scenario.shards
        if shards > 1:
            say(f"[{scenario.name}] {shards} shard workers in parallel...")
            store = stores.copy("shards")
            processes = [
                run_worker({"kind": "dream", "settings": settings_for(store, stub, args), "shard": f"{i}/{shards}"}) for i in range(shards)
            ]
            workers = [collect(p) for p in processes]
            result["runs"]["shards"] = {
                "workers": workers,
                "seconds": round(max(w["endedAt"] for w in workers) - min(w["startedAt"] for w in workers), 3),
                "llmCalls": sum(_calls(w) for w in workers),
                "statuses": [w["status"] for w in workers],
            }
        result["buildSeconds"] = round(stores.build_seconds, 2)
    finally:
        stub.stop()
        if not args.keep:
            stores.drop()
    result["targets"] = targets(scenario, result)
    return result


def profile(args: argparse.Namespace, scenario: Scenario, run: str) -> Optional[str]:
    """Return where a run's pyinstrument profile goes (with --profile), else None."""
    if not args.profile:
        return None
    args.profile.mkdir(parents=True, exist_ok=True)
    return str((args.profile / f"{scenario.name}-{run}.txt").resolve())


def _calls(run: dict[str, Any]) -> int:
    return sum(p.get("llmCalls", 0) for p in run["phases"].values())


def _tokens(run: dict[str, Any], kind: str) -> int:
    return sum(int(p.get(kind, 0) or 0) for p in run["phases"].values())


def _hits(run: dict[str, Any]) -> int:
    return sum(p.get("cacheHits", 0) for p in run["phases"].values())


def targets(scenario: Scenario, result: dict[str, Any]) -> list[dict[str, Any]]:
    """Check the issue's targets that this scenario measures."""
    runs = result["runs"]
    first = runs["memctl"]
    found: list[dict[str, Any]] = []

    def add(name: str, measured: str, ok: bool) -> None:
        found.append({"target": name, "measured": measured, "met": ok})

    if scenario.notes == 1_000 and scenario.latency == 0.3:
        add("SC-004: 1,000 notes, 300 ms stub, full dream <= 15 s", f"{first['seconds']:.2f} s", first["seconds"] <= 15)
    if scenario.notes == 100_000 and scenario.latency == 0.0:
        add("100k notes, zero-latency stub: <= 60 s", f"{first['seconds']:.1f} s", first["seconds"] <= 60)
        add("100k notes: peak RSS <= 2 GiB", f"{first['peakRssMiB']:.0f} MiB", first["peakRssMiB"] * 2**20 <= 2 * GIB)
    if "memctl-second" in runs:
        second = runs["memctl-second"]
        calls = _calls(second)
        add(f"{scenario.name}: second dream makes 0 LLM calls", f"{calls} calls ({_hits(second)} cache hits)", calls == 0)
        add(
            f"{scenario.name}: second dream <= 1/5 of the first",
            f"{second['seconds']:.2f} s vs {first['seconds']:.2f} s ({second['seconds'] / max(first['seconds'], 1e-9):.2f}x)",
            second["seconds"] * 5 <= first["seconds"],
        )
    if "memctl-third" in runs:
        third = runs["memctl-third"]
        add(
            f"{scenario.name}: third dream (nothing changed since the second) <= 1/5 of the first",
            f"{third['seconds']:.2f} s vs {first['seconds']:.2f} s ({third['seconds'] / max(first['seconds'], 1e-9):.2f}x), {_calls(third)} LLM calls",
            third["seconds"] * 5 <= first["seconds"] and _calls(third) == 0,
        )
    if "baseline" in runs:
        ratio = _baseline_seconds(runs["baseline"]) / max(first["seconds"], 1e-9)
        extrapolated = any(p.get("extrapolated") for p in runs["baseline"]["phases"].values())
        wanted = scenario.notes == 10_000 and scenario.latency == 0.3
        add(
            f"{scenario.name}: memctl vs MJ-style baseline" + (" >= 20x" if wanted else ""),
            f"{ratio:.1f}x ({_baseline_seconds(runs['baseline']):.1f} s{' extrapolated' if extrapolated else ''} vs {first['seconds']:.2f} s)",
            ratio >= 20 if wanted else True,
        )
    if "baseline-embed" in runs:
        seconds = _baseline_seconds(runs["baseline-embed"])
        add(
            f"{scenario.name}: memctl vs baseline embedding each note (extrapolated)",
            f"{seconds / max(first['seconds'], 1e-9):.1f}x ({seconds:.0f} s vs {first['seconds']:.2f} s)",
            True,
        )
    if "shards" in runs:
        shards = runs["shards"]
        add(
            f"{scenario.name}: {len(shards['workers'])} shard workers vs one worker",
            f"{shards['seconds']:.2f} s vs {first['seconds']:.2f} s ({first['seconds'] / max(shards['seconds'], 1e-9):.2f}x)",
            all(s == "completed" for s in shards["statuses"]),
        )
    return found


def _baseline_seconds(run: dict[str, Any]) -> float:
    return sum(p["seconds"] for p in run["phases"].values())


# --- rendering -------------------------------------------------------------------------------


def rows_of(result: dict[str, Any]) -> list[list[str]]:
    """Return table rows: one per run and phase, plus a total per run."""
    rows: list[list[str]] = []

    def add_run(label: str, run: dict[str, Any]) -> None:
        for phase in PHASES:
            p = run["phases"].get(phase)
            if p is None:
                continue
            cpu = f"{p['cpuSeconds']:.2f}" if "cpuSeconds" in p and not p.get("extrapolated") else "-"
            rows.append(
                [
                    label,
                    phase,
                    f"{p['seconds']:.2f}",
                    cpu,
                    str(p.get("llmCalls", 0)),
                    f"{p.get('promptTokens', 0):,}" if "promptTokens" in p else "-",
                    f"{p.get('completionTokens', 0):,}" if "completionTokens" in p else "-",
                    str(p.get("cacheHits", "-")),
                    str(p.get("statements", "-")),
                    f"{p.get('peakRssMiB', 0):.0f}",
                    str(p.get("applied", p.get("changed", ""))),
                ]
            )
        total = _baseline_seconds(run) if run["kind"] == "baseline" else run["seconds"]
        rows.append(
            [
                label,
                "TOTAL",
                f"{total:.2f}",
                f"{run['cpuSeconds']:.2f}",
                str(_calls(run)),
                f"{_tokens(run, 'promptTokens'):,}",
                f"{_tokens(run, 'completionTokens'):,}",
                str(_hits(run)),
                str(run["statements"]),
                f"{run['peakRssMiB']:.0f}",
                "",
            ]
        )

    for name, run in result["runs"].items():
        if name == "shards":
            for worker in run["workers"]:
                add_run(f"shard {worker['shard']}", worker)
            rows.append(["shards", "COMBINED", f"{run['seconds']:.2f}", "", str(run["llmCalls"]), "", "", "", "", "", ""])
        else:
            add_run(name, run)
    return rows


HEADERS = ["run", "phase", "wall s", "cpu s", "LLM calls", "prompt tokens", "completion tokens", "cache hits", "statements", "peak RSS MiB", "changed"]


def title_of(result: dict[str, Any]) -> str:
    """Return a scenario's heading: corpus, embedder, backend, stub latency, load when it ran."""
    s = result["scenario"]
    load = max([run["loadBefore"] for run in result["runs"].values() if isinstance(run, dict) and run.get("loadBefore") is not None] or [0])
    return f"{s['name']}: {result['corpus']} ({result['embedder']}, {result['backend']}, stub latency {s['latency']} s, load avg {load:.1f})"


def render(results: list[dict[str, Any]], plain: bool) -> None:
    """Print each scenario's table (rich, or plain text) and its targets."""
    try:
        if plain:
            raise ImportError
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for result in results:
            print(f"\n== {title_of(result)}")
            widths = [max(len(h), *(len(r[i]) for r in rows_of(result))) for i, h in enumerate(HEADERS)]
            print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)))
            for row in rows_of(result):
                print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
            for t in result["targets"]:
                print(f"  [{'met' if t['met'] else 'MISSED'}] {t['target']}: {t['measured']}")
        return
    console = Console(width=max(120, shutil.get_terminal_size((120, 40)).columns))
    for result in results:
        table = Table(title=title_of(result))
        for h in HEADERS:
            table.add_column(h, justify="left" if h in ("run", "phase") else "right")
        previous = None
        for row in rows_of(result):
            if previous is not None and row[0] != previous:
                table.add_section()
            previous = row[0]
            table.add_row(*row, style="bold" if row[1] in ("TOTAL", "COMBINED") else None)
        console.print(table)
        for t in result["targets"]:
            console.print(f"  [{'green]met' if t['met'] else 'red]MISSED'}[/] {t['target']}: {t['measured']}")


def markdown(document: dict[str, Any]) -> str:
    """Render a results file as markdown tables (for the README)."""
    out = []
    for result in document["results"]:
        out.append(f"**{title_of(result)}**, {document['date']}\n")
        out.append("| " + " | ".join(HEADERS) + " |")
        out.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(HEADERS))) + "|")
        for row in rows_of(result):
            cells = [f"**{c}**" if row[1] in ("TOTAL", "COMBINED") and c else c for c in row]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        for t in result["targets"]:
            out.append(f"- {'met' if t['met'] else '**missed**'}: {t['target']}: {t['measured']}")
        out.append("")
    return "\n".join(out)


def machine() -> dict[str, Any]:
    import numpy
    import sqlalchemy

    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": numpy.__version__,
        "sqlalchemy": sqlalchemy.__version__,
    }
    try:
        with open("/proc/meminfo") as handle:
            info["memTotalGiB"] = round(int(handle.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        config = json.loads(argv[1])
        Path(config["result"]).write_text(json.dumps(worker(config)), encoding="utf-8")
        return 0
    if argv[:1] == ["report"]:
        for path in argv[1:]:
            print(markdown(json.loads(Path(path).read_text(encoding="utf-8"))))
        return 0
    parser = argparse.ArgumentParser(
        description="Benchmark memctl against a MemberJunction-style baseline.",
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--suite", choices=sorted(SUITES), default="default")
    parser.add_argument("--notes", type=int, help="run one scenario of this many notes instead of a suite")
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--big-agent-notes", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.3, help="stub seconds per call (with --notes)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--embedder", choices=("stored", "stored+compute", "hashing"), default="stored+compute")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--llm-concurrency",
        help="auto or a number (default: the measured memctl's own default: auto since issue 25, 8 before)",
    )
    parser.add_argument(
        "--max-pairs",
        type=int,
        default=100_000,
        help="LLM calls per run for contradictions/absorption (memctl's default is 50; high so one run judges every pair)",
    )
    parser.add_argument("--prune-cap", type=int, default=200)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-second", action="store_true")
    parser.add_argument("--baseline-sample", type=int, help="extrapolate the baseline from its first N notes per loop")
    parser.add_argument(
        "--baseline-embed-sample",
        type=int,
        help="also run the baseline paying one /v1/embeddings call per note, as MJ does: N calls per loop made, the rest charged at their mean",
    )
    parser.add_argument("--shards", type=int, help="shard workers to run in parallel (0: none)")
    parser.add_argument("--json", type=Path, help="write the results here (default: benchmarks/results/bench-<time>.json)")
    parser.add_argument("--plain", action="store_true", help="plain text tables instead of rich")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark stores")
    parser.add_argument(
        "--profile", type=Path, help="profile each memctl run with pyinstrument into this folder (pip install pyinstrument)"
    )
    args = parser.parse_args(argv)

    if args.notes:
        scenarios = [
            Scenario(
                f"{args.notes // 1000}k" if args.notes >= 1000 else str(args.notes),
                args.notes,
                args.agents,
                args.big_agent_notes,
                args.latency,
            )
        ]
    else:
        scenarios = SUITES[args.suite]
    if args.no_second:
        scenarios = [replace(s, second=False) for s in scenarios]

    # a SIGTERM (timeout, CI) must still stop the stub and drop the stores in the finally blocks
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = datetime.now(timezone.utc)
    results = []
    for scenario in scenarios:
        results.append(run_scenario(scenario, args, say))
        render(results[-1:], args.plain)
    document = {"date": started.isoformat(timespec="seconds"), "machine": machine(), "argv": argv, "results": results}
    target = args.json or RESULTS / f"bench-{started.strftime('%Y%m%dT%H%M%S')}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    say(f"results: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
