"""Time consecutive dreams on a copy of one SQLite store, with this checkout or another one.

For A/B comparisons on a shared machine, where two harness runs minutes apart differ by more
than most changes do: build the store once, then alternate checkouts on identical copies.

    python benchmarks/corpus.py --notes 100000 --agents 50 --big-agent-notes 20000 --db-url sqlite:////tmp/base.db
    git worktree add /tmp/old <rev>
    python benchmarks/ab.py /tmp/base.db --root /tmp/old --dreams 3
    python benchmarks/ab.py /tmp/base.db --dreams 3

Each dream is `api.dream(force=True)` in this process with the benchmark's settings
(stored+compute embedder, zero-latency stub in its own process unless --latency, clock frozen at
the corpus's "now"); it prints wall seconds, CPU seconds of this process, and per phase the
seconds and the partitions skipped as settled.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a SQLite store built by benchmarks/corpus.py (left untouched: a copy is dreamt)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout whose memctl runs")
    parser.add_argument("--dreams", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--llm-concurrency", type=int, default=8)
    args = parser.parse_args(argv)

    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(args.root), str(here.parent)]  # the measured memctl first, this harness after it
    from benchmarks import run as harness  # noqa: E402 - after the path is set
    from memctl import api  # noqa: E402
    from memctl.settings import resolve  # noqa: E402

    import memctl  # noqa: E402

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "store.db"
        shutil.copyfile(args.store, copy)
        stub = harness.Stub(args.latency, 384)
        try:
            options = types.SimpleNamespace(llm_concurrency=args.llm_concurrency, max_pairs=100_000, prune_cap=200, embedder="stored+compute")
            flags = harness.settings_for(types.SimpleNamespace(url=f"sqlite:///{copy}", schema=None), stub, options)
            settings = resolve(flags=flags, environ={})
            engine = api.open_store(settings)
            print(f"memctl from {Path(memctl.__file__).parent}")
            for number in range(1, args.dreams + 1):
                cpu = resource.getrusage(resource.RUSAGE_SELF)
                started = time.monotonic()
                report = api.dream(settings, force=True, engine=engine)
                wall = time.monotonic() - started
                used = resource.getrusage(resource.RUSAGE_SELF)
                cpu_s = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
                phases = ", ".join(
                    f"{p.phase} {p.seconds:.2f}" + (f" ({p.input['partitionsSettled']} settled)" if "partitionsSettled" in p.input else "")
                    for p in report.phases
                )
                print(f"dream {number}: {wall:.2f} s wall, {cpu_s:.2f} s cpu, {report.status}; {phases}")
            engine.dispose()
        finally:
            stub.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
