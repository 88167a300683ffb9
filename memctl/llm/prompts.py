"""Load the prompt templates and render them with notes passed as data.

A template has a `---system---` and a `---user---` part; `{{name}}` placeholders are replaced in
one pass, so no rendered value can change the template. Notes appear only inside `{{notes_json}}`,
with `<` and `>` escaped, so no note can close the `</notes_json>` tag.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Union

from memctl.errors import ConfigError

SYSTEM_MARKER = "---system---"
USER_MARKER = "---user---"
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


class PromptError(ConfigError):
    """A prompt template is missing or malformed (an installation or configuration error)."""


@dataclass(frozen=True)
class Prompt:
    """A loaded template: its two parts and the sha256 of the file it came from."""

    name: str
    system: str
    user_template: str
    sha256: str
    path: Path

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(_PLACEHOLDER.findall(self.system + self.user_template))

    def render(self, **values: str) -> tuple[str, str]:
        """Return (system, user) with every `{{name}}` replaced by `values[name]`."""
        missing = self.placeholders - values.keys()
        if missing:
            raise PromptError(f"prompt {self.name!r} needs values for: {', '.join(sorted(missing))}")
        fill = lambda m: values[m.group(1)]  # noqa: E731
        return _PLACEHOLDER.sub(fill, self.system), _PLACEHOLDER.sub(fill, self.user_template)


def notes_json(data: Any) -> str:
    """Serialise `data` as JSON that is safe to embed between `<notes_json>` tags."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))  # compact: indentation is paid for in tokens
    # '<' and '>' occur only inside JSON strings, where their \\u escapes mean the same characters.
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def prompts_dirs(prompts_dir: Union[str, Path, None] = None) -> list[Path]:
    """Return the directories searched for templates, most specific first."""
    if prompts_dir is not None:
        return [Path(prompts_dir)]
    env = os.environ.get("MEMCTL_PROMPTS_DIR")
    if env:
        return [Path(env)]
    found: list[Path] = []
    try:
        packaged = resources.files("memctl") / "_prompts"
        if packaged.is_dir():
            found.append(Path(str(packaged)))
    except (ModuleNotFoundError, TypeError):
        pass
    found.append(Path(__file__).resolve().parents[2] / "prompts")
    return found


def parse_template(name: str, text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    markers = [i for i, line in enumerate(lines) if line.strip() in (SYSTEM_MARKER, USER_MARKER)]
    kinds = [lines[i].strip() for i in markers]
    if kinds != [SYSTEM_MARKER, USER_MARKER]:
        raise PromptError(f"prompt {name!r} must contain one {SYSTEM_MARKER!r} line followed by one {USER_MARKER!r} line")
    s, u = markers
    system = "".join(lines[s + 1 : u]).strip()
    user = "".join(lines[u + 1 :]).strip()
    if not system or not user:
        raise PromptError(f"prompt {name!r} has an empty system or user part")
    return system, user


def load_prompt(name: str, prompts_dir: Union[str, Path, None] = None) -> Prompt:
    """Load template `name` (e.g. "consolidate-notes") from the first directory that has it."""
    filename = name if name.endswith(".md") else f"{name}.md"
    searched = prompts_dirs(prompts_dir)
    for directory in searched:
        path = directory / filename
        if path.is_file():
            data = path.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise PromptError(f"prompt {path} is not UTF-8: {exc}") from exc
            system, user = parse_template(filename, text)
            return Prompt(filename[:-3], system, user, hashlib.sha256(data).hexdigest(), path)
    where = ", ".join(str(d) for d in searched)
    raise PromptError(f"prompt template {filename!r} not found (searched: {where}); set MEMCTL_PROMPTS_DIR")
