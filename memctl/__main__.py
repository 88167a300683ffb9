"""The `memctl` console script and `python -m memctl`: process-wide settings, then the CLI.

They belong to the process, so only this entry point sets them, never the library:
- OpenBLAS on one thread, before numpy loads: the products are small, extra BLAS threads only
  spin-wait, and one thread makes results independent of the machine's core count.
- Rarer cyclic collections: a dream creates millions of short-lived records that reference
  counting frees; the default thresholds rescan the whole heap for them again and again.
"""

from __future__ import annotations

import gc
import os

#: gc thresholds while the CLI runs (generations 0, 1, 2)
CLI_GC_THRESHOLDS = (100_000, 50, 100)


def main() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.set_threshold(*CLI_GC_THRESHOLDS)
    # imported late, not for a cycle: OpenBLAS reads its thread count when the CLI imports numpy
    from memctl.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
