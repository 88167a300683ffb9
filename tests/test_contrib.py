"""contrib/: the scheduler files parse, and the memctl commands they run exist and work."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONTRIB = ROOT / "contrib"


def run_memctl(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """Run the memctl arguments a scheduler would, against a fresh SQLite store."""
    env = {"PATH": "/usr/bin:/bin", "MEMCTL_DB_URL": f"sqlite:///{tmp_path / 'store.db'}"}
    rewritten = [str(tmp_path / "memctl.prom") if a.endswith(".prom") else a for a in args]
    return subprocess.run([sys.executable, "-m", "memctl", *rewritten], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def memctl_args(command: str) -> list[str]:
    words = shlex.split(command)
    index = next(i for i, w in enumerate(words) if w.endswith("memctl"))
    return words[index + 1 :]


def ini(path: Path) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        assert current is not None, f"{path}: key outside a section"
        current[key.strip()] = value.strip()
    return sections


def test_systemd_units_are_well_formed_and_run_memctl(tmp_path: Path) -> None:
    service = ini(CONTRIB / "systemd" / "memctl-dream.service")
    timer = ini(CONTRIB / "systemd" / "memctl-dream.timer")
    assert service["Service"]["Type"] == "oneshot"
    assert timer["Timer"]["OnCalendar"] and timer["Timer"]["RandomizedDelaySec"] and timer["Timer"]["Unit"] == "memctl-dream.service"
    args = memctl_args(service["Service"]["ExecStart"])
    assert args[:2] == ["dream", "--quiet"]
    result = run_memctl(args, tmp_path)
    assert result.returncode == 0 and result.stdout == "", result.stderr
    assert (tmp_path / "memctl.prom").is_file()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verify_reports_nothing(tmp_path: Path) -> None:
    units = tmp_path / "units"
    units.mkdir()
    # verify checks that ExecStart's binary exists: point it at this environment's memctl
    memctl = Path(sys.executable).with_name("memctl")
    text = (CONTRIB / "systemd" / "memctl-dream.service").read_text().replace("/usr/local/bin/memctl", str(memctl))
    (units / "memctl-dream.service").write_text(text)
    shutil.copy(CONTRIB / "systemd" / "memctl-dream.timer", units / "memctl-dream.timer")
    result = subprocess.run(["systemd-analyze", "verify", str(units / "memctl-dream.service"), str(units / "memctl-dream.timer")], capture_output=True, text=True, timeout=120)
    problems = [line for line in (result.stdout + result.stderr).splitlines() if "memctl-dream" in line]
    assert result.returncode == 0 and problems == [], result.stdout + result.stderr


def test_crontab_line_runs_memctl(tmp_path: Path) -> None:
    lines = [line for line in (CONTRIB / "crontab").read_text().splitlines() if line and not line.startswith("#") and "=" not in line.split()[0]]
    assert len(lines) == 1
    fields = lines[0].split(None, 6)
    assert all(re.fullmatch(r"[\d*/,-]+", f) for f in fields[:5]) and fields[5] == "memctl"
    args = memctl_args(fields[6].split("&&")[-1])
    assert args == ["dream", "--quiet"]
    result = run_memctl(args, tmp_path)
    assert result.returncode == 0 and result.stdout == ""


def test_kubernetes_cronjob_and_indexed_job(tmp_path: Path) -> None:
    cronjob = yaml.safe_load((CONTRIB / "kubernetes" / "cronjob.yaml").read_text())
    assert cronjob["kind"] == "CronJob" and cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert run_memctl(container["command"][1:], tmp_path).returncode == 0

    job = yaml.safe_load((CONTRIB / "kubernetes" / "sharded-job.yaml").read_text())
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    script = spec["template"]["spec"]["containers"][0]["command"][-1]
    for index in range(spec["completions"]):
        args = memctl_args(script.replace("${JOB_COMPLETION_INDEX}", str(index)))
        assert args[-2:] == ["--shard", f"{index}/{spec['completions']}"]
        result = run_memctl(args, tmp_path)
        assert result.returncode == 0, result.stderr
