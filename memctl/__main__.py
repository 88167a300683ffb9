"""The `memctl` console script and `python -m memctl`: process-wide settings a run wants, then the CLI.

These belong to the process, so the library never changes them; only this entry point does:
- OpenBLAS on one thread, set before numpy loads. memctl's products are small (a user's notes
  against its company's); BLAS threads only spin-wait between them, and one thread gives results
  that do not depend on the machine's core count.
- Rarer cyclic collections: a dream creates millions of short-lived records that reference
  counting frees; the default thresholds walk the whole heap for them again and again.
"""

from __future__ import annotations

import gc
import os

#: the collector's thresholds while the CLI runs (generation 0, 1, 2)
CLI_GC_THRESHOLDS = (100_000, 50, 100)


def main() -> None:
    """Entry point of the `memctl` console script."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.set_threshold(*CLI_GC_THRESHOLDS)
    # imported here, not above: OpenBLAS reads its thread count when numpy loads, which the CLI's
    # imports do (no import cycle is involved)
    from memctl.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
