"""The `memctl` command: parse options, resolve settings once, call one library function, render.

Exit codes: 0 done (a gate or lock skip included), 1 a phase failed, `verify` found a breach, the
run reached its deadline, or the store is locked by a run past its deadline, 2 usage or
configuration error (a read-only store included), 3 unexpected error (the traceback only with
--traceback), 130 / 143 interrupted by SIGINT / SIGTERM (the run closed Failed, the lock released).
"""

from __future__ import annotations

# isort: off
# each module registers its commands (and store then review their sub-apps) on the app: `memctl
# --help` lists them in the order of these imports
from memctl.cli import maintenance, views, records, trials, store, runs, review  # noqa: F401
# isort: on
from memctl.cli.shell import app


def main() -> None:
    """Entry point of the `memctl` console script."""
    app()
