"""Every benchmark script imports against this memctl (a refactor that moves a name they use fails
here, not in the next benchmark run), and importing one leaves the process's settings alone."""

from __future__ import annotations

import gc
import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_benchmark_script_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    thresholds, blas = gc.get_threshold(), os.environ.get("OPENBLAS_NUM_THREADS")
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.__file__ is not None and Path(module.__file__).parent == ROOT / "benchmarks"
    # ab.py applies the console script's GC and BLAS settings in main(), never on import
    assert gc.get_threshold() == thresholds and os.environ.get("OPENBLAS_NUM_THREADS") == blas
