"""Reply schemas for providers that enforce one and for those that do not: a pydantic model's
schema in OpenAI strict form, the same schema in words for the prompt, and a fenced reply unwrapped."""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import Any, Optional

from pydantic import BaseModel

_FENCE = re.compile(r"^\s*```[\w-]*[ \t]*\n?(.*?)\n?[ \t]*```\s*$", re.DOTALL)
# JSON-schema keywords kept in a strict schema: what OpenAI's structured outputs and the common
# local servers (vLLM, llama.cpp, Ollama) all accept; pydantic checks every bound again on parsing.
_KEPT_KEYWORDS = {"type", "properties", "required", "items", "enum", "const", "anyOf", "$ref", "$defs", "minimum", "maximum"}
_KIND_WORDS = {"string": "a string", "boolean": "true or false", "number": "a number", "integer": "an integer", "null": "null"}


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Return `model`'s JSON schema in OpenAI strict form (every key required, no extra keys).

    A fresh copy each time (callers put it into a request); the form is computed once per model.
    """
    return copy.deepcopy(_strict_schema(model))


@lru_cache(maxsize=64)
def _strict_schema(model: type[BaseModel]) -> dict[str, Any]:

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {
            key: {name: walk(sub) for name, sub in value.items()} if key in ("properties", "$defs") else walk(value)
            for key, value in node.items() if key in _KEPT_KEYWORDS
        }
        if out.get("type") == "object" or "properties" in out:
            out["type"] = "object"
            out.setdefault("properties", {})
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    return walk(model.model_json_schema())


def strip_fences(text: str) -> str:
    """Return the inside of a ```json ... ``` fence, or `text` stripped when it has none."""
    match = _FENCE.match(text)
    return (match.group(1) if match else text).strip()


def describe_schema(node: dict[str, Any], defs: Optional[dict[str, Any]] = None) -> str:
    """Return a strict schema in words: what each key must hold.

    Small models copy a JSON-schema document they are shown instead of answering with an
    instance of it, so the prompt states the schema in words.
    """
    defs = node.get("$defs", {}) if defs is None else defs
    if "$ref" in node:
        return describe_schema(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in node:
        return " or ".join(describe_schema(option, defs) for option in node["anyOf"])
    if "enum" in node:
        return "exactly one of " + ", ".join(json.dumps(v) for v in node["enum"])
    kind = node.get("type")
    if kind == "object":
        keys = "; ".join(f'"{name}": {describe_schema(sub, defs)}' for name, sub in node.get("properties", {}).items())
        return f"a JSON object with exactly these keys ({keys})"
    if kind == "array":
        inner = describe_schema(node.get("items", {}), defs)
        if inner == "a string":
            return "a list of strings"
        if inner.startswith("a JSON object with "):
            return "a list of JSON objects, each with " + inner[len("a JSON object with ") :]
        return "a list of " + inner
    if kind == "number" and "minimum" in node and "maximum" in node:
        return f"a number from {node['minimum']:g} to {node['maximum']:g}"
    return _KIND_WORDS.get(str(kind), "a JSON value")


@lru_cache(maxsize=64)
def schema_instructions(reply_model: type[BaseModel], mode: str) -> str:
    """Return what is appended to the user message when the server cannot enforce the schema (one text per model and mode)."""
    text = f"\n\nYour reply must be {describe_schema(strict_schema(reply_model))}."
    if mode == "text":
        text += "\nReply with that JSON object only: no markdown fences, no text before or after it."
    return text
