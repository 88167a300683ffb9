"""`memctl` as a subprocess that SIGKILLs itself inside a write transaction holding several units.

The crash test starts this instead of `python -m memctl` for its mid-batch kills: a SQLAlchemy
event listener watches every change-log INSERT, and at the first one carrying at least
MEMCTL_TEST_KILL_ROWS rows (a batch of several units: all its rows are written, its COMMIT is not)
and more than two distinct reasons (one unit's rows carry at most two: its created note's and its
sources'), it writes the row count to MEMCTL_TEST_KILL_FILE and kills its own process with SIGKILL. Nothing in
memctl knows about it; the kill is as real as one from outside, only its moment is exact.
"""

from __future__ import annotations

import os
import signal
import sys

import sqlalchemy as sa


def _listen() -> None:
    rows_needed = int(os.environ["MEMCTL_TEST_KILL_ROWS"])
    path = os.environ["MEMCTL_TEST_KILL_FILE"]

    def after(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if not statement.lstrip().upper().startswith("INSERT") or "memctl_change" not in statement:
            return
        params = context.compiled_parameters or ()
        rows, reasons = len(params), len({p.get("Reason") for p in params})
        if rows >= rows_needed and reasons > 2:
            with open(path, "w", encoding="utf-8") as out:
                out.write(str(rows))
            os.kill(os.getpid(), signal.SIGKILL)

    sa.event.listen(sa.engine.Engine, "after_cursor_execute", after)


if __name__ == "__main__":
    _listen()
    from memctl.cli import main

    sys.argv[0] = "memctl"
    main()
