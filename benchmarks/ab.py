"""Time consecutive dreams on a copy of one store (SQLite or PostgreSQL), with this checkout or another one.

For A/B comparisons on a shared machine, where two harness runs minutes apart differ by more
than most changes do: build the store once, then alternate checkouts on identical copies.

    python benchmarks/corpus.py --notes 100000 --agents 50 --big-agent-notes 20000 --db-url sqlite:////tmp/base.db
    git worktree add /tmp/old <rev>
    python benchmarks/ab.py /tmp/base.db --root /tmp/old --dreams 3
    python benchmarks/ab.py /tmp/base.db --dreams 3

PostgreSQL: build the corpus once into a schema, and give that schema instead of a file; each
run copies it (in the server: INSERT ... SELECT per table) into a scratch schema it drops after.

    python benchmarks/corpus.py --notes 100000 --agents 50 --big-agent-notes 20000 \
        --db-url postgresql+psycopg://postgres@127.0.0.1:5432/test --schema ab_base
    python benchmarks/ab.py --pg-schema ab_base --root /tmp/old
    python benchmarks/ab.py --pg-schema ab_base

Each dream is `api.dream(force=True)` in this process with the benchmark's settings
(stored+compute embedder, zero-latency stub in its own process unless --latency, clock frozen at
the corpus's "now"); it prints wall seconds, CPU seconds of this process, per phase the seconds,
the changes applied and the partitions skipped as settled, the SQL statements the dream's engine
executed (an executemany is one; each is at least one round trip on PostgreSQL), the process's
peak RSS, and after
the last dream a digest of the resulting notes (ID, Status, ConsolidatedIntoNoteID, Note), so
two checkouts can be shown to make the same changes. `--profile FILE` runs the first dream
under cProfile and writes its stats to FILE (read them with `python -m pstats FILE`);
`--llm-log FILE` writes every LLM request (when its reply came, how long it took) and prints
each dream's start time, to place the LLM rounds on the dream's clock.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import resource
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any, Optional

PG_URL = os.environ.get("MEMCTL_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def copy_schema(url: str, base: str, target: str, fresh_store: Any) -> None:
    """Make `target` an identical copy of the memctl store in PostgreSQL schema `base`."""
    _settings, engine = fresh_store(url, target)  # the measured checkout's migration: same tables
    with engine.begin() as conn:
        tables = [
            name
            for (name,) in conn.exec_driver_sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %(s)s AND table_type = 'BASE TABLE'", {"s": base}
            )
            if not name.endswith("alembic_version")  # the migration wrote it
        ]
        conn.exec_driver_sql("SET LOCAL session_replication_role = replica")  # foreign keys are checked by the original
        for name in tables:
            columns = ", ".join(
                f'"{c}"'
                for (c,) in conn.exec_driver_sql(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = %(s)s AND table_name = %(t)s ORDER BY ordinal_position",
                    {"s": base, "t": name},
                )
            )
            conn.exec_driver_sql(f'INSERT INTO "{target}"."{name}" ({columns}) SELECT {columns} FROM "{base}"."{name}"')
        # identity / serial columns continue after the copied rows
        for (sequence_of,) in conn.exec_driver_sql(
            "SELECT format('SELECT setval(%%L, COALESCE(MAX(%%I), 0) + 1, false) FROM %%I.%%I', pg_get_serial_sequence(format('%%I.%%I', table_schema, table_name), column_name), column_name, table_schema, table_name) "
            "FROM information_schema.columns WHERE table_schema = %(s)s AND pg_get_serial_sequence(format('%%I.%%I', table_schema, table_name), column_name) IS NOT NULL",
            {"s": target},
        ):
            conn.exec_driver_sql(sequence_of)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for name in tables:
            # VACUUM too: a long-lived store's rows have their hint bits and visibility map set; a
            # fresh copy's are set by the dream's own reads, and autovacuum wakes during the run
            conn.exec_driver_sql(f'VACUUM (ANALYZE) "{target}"."{name}"')
    engine.dispose()


def notes_digest(engine: Any) -> tuple[str, dict[str, int]]:
    """Return a digest of every note's (ID, Status, ConsolidatedIntoNoteID, Note) and the count per Status."""
    from memctl.store import models as m

    t = m.note
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    with engine.connect() as conn:
        rows = conn.execute(t.select().with_only_columns(t.c.ID, t.c.Status, t.c.ConsolidatedIntoNoteID, t.c.Note))
        for note_id, status, into, text in sorted((str(a).lower(), b, str(c).lower() if c else "", d) for a, b, c, d in rows):
            digest.update(f"{note_id}\t{status}\t{into}\t{text}\n".encode())
            counts[status] = counts.get(status, 0) + 1
    return digest.hexdigest()[:16], counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, nargs="?", help="a SQLite store built by benchmarks/corpus.py (left untouched: a copy is dreamt)")
    parser.add_argument("--pg-schema", help="instead of a SQLite file: a PostgreSQL schema built by corpus.py (MEMCTL_BENCH_PG_URL), copied per run")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout whose memctl runs")
    parser.add_argument("--dreams", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument(
        "--llm-concurrency",
        help="auto or a number (default: the measured memctl's own default)",
    )
    parser.add_argument("--slots", type=int, help="the stub answers this many chat calls at once and queues the rest, as a local server does")
    parser.add_argument("--llm-timeout", type=float, help="the llm_timeout setting, seconds per call (default: memctl's own)")
    parser.add_argument(
        "--slice-notes", type=int, default=None,
        help="the slice_notes setting (a scope of more notes is read agent by agent; 0 = at once); default: memctl's own",
    )
    parser.add_argument("--profile", type=Path, help="run the first dream under cProfile and write the stats here")
    parser.add_argument(
        "--llm-log", type=Path,
        help="write every LLM request of the dreams here (the llm_log setting: JSON lines with the time each reply came and its seconds)",
    )
    args = parser.parse_args(argv)
    if (args.store is None) == (args.pg_schema is None):
        parser.error("give a SQLite store file or --pg-schema")
    # The process settings of the memctl console script (memctl/__main__.py), before numpy loads:
    # a dream measured here runs as `memctl dream` would. MEMCTL_BENCH_DEFAULTS=1 keeps Python's
    # and OpenBLAS's defaults instead, to measure what those settings gain.
    if os.environ.get("MEMCTL_BENCH_DEFAULTS") != "1":
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        gc.set_threshold(100_000, 50, 100)

    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(args.root), str(here.parent)]  # the measured memctl first, this harness after it
    from benchmarks import run as harness  # noqa: E402 - after the path is set

    harness.ROOT = here.parent  # one stub server for every checkout measured: this harness's
    from benchmarks.corpus import fresh_store  # noqa: E402
    from memctl import api  # noqa: E402
    from memctl.settings import resolve  # noqa: E402

    import memctl  # noqa: E402
    from sqlalchemy import event as sa_event  # noqa: E402

    with tempfile.TemporaryDirectory() as scratch:
        schema: Optional[str] = None
        if args.pg_schema:
            schema = f"ab_{os.getpid()}"
            started = time.monotonic()
            copy_schema(PG_URL, args.pg_schema, schema, fresh_store)
            print(f"copied schema {args.pg_schema} -> {schema} in {time.monotonic() - started:.1f} s")
            store = types.SimpleNamespace(url=PG_URL, schema=schema)
        else:
            copy = Path(scratch) / "store.db"
            shutil.copyfile(args.store, copy)
            store = types.SimpleNamespace(url=f"sqlite:///{copy}", schema=None)
        stub = harness.Stub(args.latency, 384, slots=args.slots)
        engine = None
        try:
            options = types.SimpleNamespace(llm_concurrency=args.llm_concurrency, max_pairs=100_000, prune_cap=200, embedder="stored+compute")
            flags = harness.settings_for(store, stub, options)
            if args.slice_notes is not None:
                flags["slice_notes"] = args.slice_notes
            if args.llm_log is not None:
                flags["llm_log"] = str(args.llm_log)
            if args.llm_timeout is not None:
                flags["llm_timeout"] = args.llm_timeout
            settings = resolve(flags=flags, environ={})
            engine = api.open_store(settings)
            statements = [0]
            sa_event.listen(engine, "before_cursor_execute", lambda *_: statements.__setitem__(0, statements[0] + 1))
            print(f"memctl from {Path(memctl.__file__).parent}; {engine.dialect.name}; load {os.getloadavg()[0]:.2f}")
            for number in range(1, args.dreams + 1):
                profiler = None
                if args.profile and number == 1:
                    import cProfile

                    profiler = cProfile.Profile()
                cpu = resource.getrusage(resource.RUSAGE_SELF)
                statements[0] = 0
                if args.llm_log is not None:  # to place the log's requests on the dream's clock
                    print(f"dream {number} starts at {time.time():.3f} (epoch seconds)", flush=True)
                started = time.monotonic()
                if profiler is not None:
                    profiler.enable()
                report = api.dream(settings, force=True, engine=engine)
                if profiler is not None:
                    profiler.disable()
                wall = time.monotonic() - started
                used = resource.getrusage(resource.RUSAGE_SELF)
                cpu_s = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
                phases = ", ".join(
                    f"{p.phase} {p.seconds:.2f} [{p.applied} applied"
                    + (f", {p.output['llmCalls']} calls" if "llmCalls" in p.output else "")
                    + "]"
                    + (f" ({p.input['partitionsSettled']} settled)" if "partitionsSettled" in p.input else "")
                    for p in report.phases
                )
                print(
                    f"dream {number}: {wall:.2f} s wall, {cpu_s:.2f} s cpu, {report.status}; {phases}; "
                    f"{statements[0]} SQL statements; peak RSS {used.ru_maxrss / 1024:.0f} MiB; load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
                if profiler is not None:
                    profiler.dump_stats(str(args.profile))
            digest, counts = notes_digest(engine)
            print(f"notes after: {digest} {dict(sorted(counts.items()))}")
        finally:
            if engine is not None:
                engine.dispose()
            stub.stop()
            if schema:
                import sqlalchemy as sa

                dropper = sa.create_engine(PG_URL)
                with dropper.begin() as conn:
                    conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                dropper.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
