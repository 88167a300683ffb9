"""The wheel carries the migrations and prompts: installed into a fresh venv, memctl works from it."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    wheel = next(dist.glob("memctl-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "memctl/_alembic/env.py" in names
    assert any(n.startswith("memctl/_alembic/versions/0001") for n in names)
    assert {"memctl/_prompts/consolidate-notes.md", "memctl/_prompts/detect-contradictions.md", "memctl/_prompts/absorb-note.md"} <= set(names)

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    memctl = env_dir / "bin" / "memctl"
    work = tmp_path / "elsewhere"  # no checkout here: migrations and prompts must come from the wheel
    work.mkdir()
    helped = subprocess.run([str(memctl), "--help"], capture_output=True, text=True, cwd=work, timeout=120)
    assert helped.returncode == 0 and "dream" in helped.stdout
    demo = subprocess.run([str(memctl), "demo", "--dir", str(work / "demo")], capture_output=True, text=True, cwd=work, timeout=600)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "verify: ok" in demo.stdout
    located = subprocess.run(
        [str(python), "-c", "from memctl.store.schema import script_location; from memctl.llm.prompts import load_prompt; print(script_location()); print(load_prompt('consolidate-notes').path)"],
        capture_output=True, text=True, cwd=work, timeout=120,
    )
    assert located.returncode == 0, located.stderr
    assert all(str(env_dir) in line for line in located.stdout.splitlines())
