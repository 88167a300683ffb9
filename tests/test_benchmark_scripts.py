"""Every benchmark script imports against this memctl: a refactor that moves a name they use fails here, not in the next benchmark run."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_benchmark_script_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.__file__ is not None and Path(module.__file__).parent == ROOT / "benchmarks"
    assert sys.modules[f"benchmarks.{name}"] is module
