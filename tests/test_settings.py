"""Settings resolve once: flag > MEMCTL_* environment > config file > default; bad input names the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from memctl.errors import ConfigError
from memctl.settings import mask_url, resolve


def test_defaults(tmp_path: Path) -> None:
    s = resolve(environ={}, cwd=tmp_path)
    assert s.db_url == f"sqlite:///{(tmp_path / 'memctl.db').as_posix()}"
    assert (s.gate_hours, s.prune_cap, s.max_pairs, s.cluster_min_size, s.cluster_max_size) == (24.0, 200, 50, 3, 7)
    assert s.embed_provider == "hashing" and not s.llm_configured


def test_precedence_flag_over_env_over_file_over_default(tmp_path: Path) -> None:
    (tmp_path / "memctl.toml").write_text('prune_cap = 10\ngate_hours = 5\n[llm]\nmodel = "file-model"\nbase_url = "http://file"\n')
    env = {"MEMCTL_PRUNE_CAP": "20", "MEMCTL_LLM_MODEL": "env-model"}
    s = resolve(flags={"prune_cap": 30, "gate_hours": None}, environ=env, cwd=tmp_path)
    assert s.prune_cap == 30  # flag
    assert s.llm_model == "env-model"  # env over file
    assert s.gate_hours == 5.0  # file over default (flag not given)
    assert s.llm_base_url == "http://file"
    assert resolve(environ=env, cwd=tmp_path).prune_cap == 20


def test_explicit_config_file_and_openai_key_fallback(tmp_path: Path) -> None:
    path = tmp_path / "other.toml"
    path.write_text('[db]\nurl = "sqlite:///x.db"\nschema = ""\n')
    s = resolve(config_file=path, environ={"OPENAI_API_KEY": "sk-openai"}, cwd=tmp_path)
    assert s.db_url == "sqlite:///x.db" and s.db_schema is None and s.llm_api_key == "sk-openai"
    assert resolve(config_file=path, environ={"OPENAI_API_KEY": "a", "MEMCTL_LLM_API_KEY": "b"}, cwd=tmp_path).llm_api_key == "b"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("bogus = 1\n", "unknown setting 'bogus'"),
        ("[nope]\nx = 1\n", "unknown section \\[nope\\]"),
        ("prune_cap = 'many'\n", "setting 'prune_cap' has an invalid value"),
        ("prune_cap = 1.5\n", "expected an integer"),
        ("absorb = 'maybe'\n", "expected true or false"),
        ("gate_hours = = 2\n", "invalid TOML"),
        ("cluster_min_size = 1\n", "cluster_min_size' must be at least 2"),
        ("confidence_floor = 3\n", "between 0 and 1"),
        ("embed_provider = 'magic'\n", "embed_provider must be one of"),
        ("db_schema = 'a;drop'\n", "not a plain identifier"),
        ("now = 'yesterday'\n", "ISO 8601"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "memctl.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message):
        resolve(environ={}, cwd=tmp_path)


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MEMCTL_MAX_PAIRS"):
        resolve(environ={"MEMCTL_MAX_PAIRS": "lots"}, cwd=tmp_path)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        resolve(config_file=tmp_path / "absent.toml", environ={}, cwd=tmp_path)


def test_secrets_are_masked_in_repr_and_urls(tmp_path: Path) -> None:
    s = resolve(flags={"db_url": "postgresql+psycopg://me:hunter2@db/x"}, environ={"MEMCTL_LLM_API_KEY": "sk-secret"}, cwd=tmp_path)
    assert "hunter2" not in repr(s) and "sk-secret" not in repr(s)
    assert s.masked_db_url == "postgresql+psycopg://me:***@db/x"
    assert set(s.secrets()) == {"hunter2", "sk-secret"}
    assert mask_url("sqlite:///a.db") == "sqlite:///a.db"
