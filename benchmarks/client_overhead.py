"""CPU that memctl's LLM client spends per request, against a zero-latency stub in its own process.

Times N sequential `LLMClient.complete_json` calls of one consolidation request of ten
questions (the size the consolidation phase sends), then the same request through the plain
`openai` client as floors: `chat.completions.create` (openai builds and validates its pydantic
`ChatCompletion`), `with_raw_response.create` + `json.loads` (no response model), and
`post("/chat/completions")` + `json.loads` (the documented raw request memctl makes: no walk of
the params against openai's TypedDicts either). memctl's own share is its figure minus the
last. CPU is `time.process_time()` of this process (all threads); the stub runs in another
process (tests/llmstub.py), so its work is not counted.

    .venv/bin/python benchmarks/client_overhead.py --requests 2000
    .venv/bin/python benchmarks/client_overhead.py --root /work/base-37f1651      # the client of another checkout
    .venv/bin/python benchmarks/client_overhead.py --only memctl --profile 25     # + cProfile's top 25 (cumulative)
    .venv/bin/python benchmarks/client_overhead.py --log /tmp/llm.jsonl            # with the JSON Lines call log on
    .venv/bin/python benchmarks/client_overhead.py --concurrency 8                 # 8 calls in flight, as a run sends them
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent.parent


def start_stub(root: Path) -> tuple[subprocess.Popen, str]:
    """Start tests/llmstub.py with zero latency on 127.0.0.1; return the process and its base URL."""
    process = subprocess.Popen(
        [sys.executable, str(root / "tests" / "llmstub.py"), "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    line = process.stdout.readline() if process.stdout else ""
    if "listening on" not in line:
        process.terminate()
        raise RuntimeError(f"the stub did not start: {line!r}")
    return process, line.split()[-1]


def consolidation_request(questions: int, notes_per_cluster: int) -> tuple[str, str, int]:
    """Return (system, user, max_tokens) of a consolidation request of `questions` clusters."""
    from memctl.llm.judge import LLMJudge
    from memctl.llm.questions import question_data
    from memctl.records import NoteRecord

    class _NoClient:
        model = "stub-model"
        response_format_mode = "json_schema"

    judge = LLMJudge(_NoClient())  # type: ignore[arg-type]  # only renders
    created = datetime(2026, 3, 1, tzinfo=timezone.utc)
    items = []
    for c in range(questions):
        notes = []
        for k in range(notes_per_cluster):
            text = (
                f"User {c} prefers the quarterly report in PDF format, sent to finance by Friday noon; "
                f"variant {k}: attach the spreadsheet, keep the summary under one page and cc the team lead."
            )
            notes.append(
                NoteRecord(
                    id=f"{c:04d}{k:04d}-0000-4000-8000-{c * 100 + k:012d}", agent_id="agent", company_id=None,
                    user_id=None, primary_scope_entity_id=None, primary_scope_record_id=None, secondary_scopes=None,
                    type="Preference", note=text, is_auto_generated=True, status="Active", protection_tier="Standard",
                    access_count=k, last_accessed_at=None, created_at=created - timedelta(days=k), updated_at=created,
                )
            )
        items.append(question_data("consolidate", notes))
    system, user = judge._render_many("consolidate", items, "2026-03-01")
    return system, user, judge.batch_reply_tokens("consolidate", items)


def measure(name: str, fn: Callable[[], Any], n: int, warmup: int, profile: int, concurrency: int = 1) -> dict[str, Any]:
    pool = ThreadPoolExecutor(concurrency) if concurrency > 1 else None

    def calls(k: int) -> None:
        if pool is None:
            for _ in range(k):
                fn()
        else:
            for future in [pool.submit(fn) for _ in range(k)]:
                future.result()

    calls(warmup)
    profiler = cProfile.Profile() if profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    calls(n)
    if profiler:
        profiler.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if pool is not None:
        pool.shutdown()
    result = {"name": name, "requests": n, "concurrency": concurrency, "cpu_ms": 1000 * cpu / n, "wall_ms": 1000 * wall / n}
    print(f"{name:<28} {n:>6} requests {concurrency:>2} at once  cpu {result['cpu_ms']:6.3f} ms/request  wall {result['wall_ms']:6.3f} ms/request", flush=True)
    if profiler:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(profile)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(profile)
        print(out.getvalue())
    return result


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--questions", type=int, default=10, help="clusters per request")
    parser.add_argument("--notes", type=int, default=4, help="notes per cluster")
    parser.add_argument("--root", type=Path, default=HERE, help="the checkout whose memctl is measured")
    parser.add_argument("--only", choices=("memctl", "openai", "openai-raw", "openai-post"), action="append")
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight at once (threads calling the client)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print cProfile's top N functions")
    parser.add_argument("--log", type=Path, help="turn memctl's JSON Lines call log on (llm_log)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    sys.path.insert(0, str(root))

    import openai

    try:  # the HTTP library under `openai`, as memctl/llm/client.py picks it
        import httpx2 as _http
    except ImportError:
        import httpx as _http  # type: ignore[no-redef]

    import memctl
    from memctl.llm.client import LLMClient
    from memctl.llm.replies import BatchReply, ConsolidationBatch
    from memctl.llm.schema import strict_schema

    system, user, max_tokens = consolidation_request(args.questions, args.notes)
    process, base_url = start_stub(HERE)
    load = Path("/proc/loadavg").read_text().strip() if os.path.exists("/proc/loadavg") else "?"
    print(f"memctl from {Path(memctl.__file__).parent}; openai {openai.__version__}; prompt {len(system) + len(user)} chars; "
          f"load {load}", flush=True)
    results = []
    only = args.only or ["memctl", "openai", "openai-raw", "openai-post"]
    try:
        if "memctl" in only:
            client = LLMClient(
                base_url, "sk-bench-secret", "stub-model", timeout=30, concurrency=max(1, args.concurrency), log_path=args.log
            )
            fetch_profiles: list[cProfile.Profile] = []
            if args.profile and hasattr(client, "_fetch"):
                # cProfile sees only the thread that enables it: the HTTP exchange runs in a reader thread
                fetch = client._fetch

                def profiled_fetch(*a: Any, **kw: Any) -> Any:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    try:
                        return fetch(*a, **kw)
                    finally:
                        profiler.disable()
                        fetch_profiles.append(profiler)

                client._fetch = profiled_fetch  # type: ignore[method-assign]

            def memctl_call() -> None:
                result = client.complete_json(
                    system, user, BatchReply, "consolidation_batch", max_tokens=max_tokens, schema_model=ConsolidationBatch
                )
                assert result.reply is not None, result.error

            results.append(measure("memctl complete_json", memctl_call, args.requests, args.warmup, args.profile, args.concurrency))
            if fetch_profiles:
                out = io.StringIO()
                stats = pstats.Stats(fetch_profiles[0], stream=out)
                for profiler in fetch_profiles[1:]:
                    stats.add(profiler)
                print("-- the reader thread (_fetch), warm-up included --")
                stats.sort_stats("cumulative").print_stats(args.profile)
                print(out.getvalue())
            assert client.counters()["requests"] == args.requests + args.warmup, client.counters()
            client.close()
        params = {
            "model": "stub-model",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "max_tokens": max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "consolidation_batch", "strict": True, "schema": strict_schema(ConsolidationBatch)},
            },
        }
        plain = openai.OpenAI(base_url=base_url, api_key="sk-bench-secret", timeout=30, max_retries=0)
        if "openai" in only:

            def openai_call() -> None:
                completion = plain.chat.completions.create(**params)
                json.loads(completion.choices[0].message.content)

            results.append(measure("openai create (floor)", openai_call, args.requests, args.warmup, args.profile, args.concurrency))
        if "openai-raw" in only:

            def raw_call() -> None:
                response = plain.chat.completions.with_raw_response.create(**params)
                data = json.loads(response.content)
                json.loads(data["choices"][0]["message"]["content"])

            results.append(measure("openai raw response (floor)", raw_call, args.requests, args.warmup, args.profile, args.concurrency))
        if "openai-post" in only:

            def post_call() -> None:
                response = plain.post("/chat/completions", cast_to=_http.Response, body=params)
                data = json.loads(response.content)
                json.loads(data["choices"][0]["message"]["content"])

            results.append(measure("openai post (floor)", post_call, args.requests, args.warmup, args.profile, args.concurrency))
        plain.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    if args.json:
        args.json.write_text(json.dumps({"load": load, "root": str(root), "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
