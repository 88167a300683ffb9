"""Token budgets: how long a reply may be, and whether a question fits the model's context.

Prompt sizes are estimated from characters, on the safe side (no tokenizer for an arbitrary
server's model). A question whose estimate plus reply budget exceeds `llm_context_tokens` is never
sent: a cluster is split into parts that fit, and what cannot fit is reported.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence, TypeVar

from memctl.similarity import GUID

T = TypeVar("T")

#: a contradiction or absorption verdict: an enum, a sentence, a number
VERDICT_REPLY_TOKENS = 256
#: fixed part of a consolidation reply (keys, type, confidence, reason) and the part per source ID
CONSOLIDATION_BASE_TOKENS = 256
PER_SOURCE_TOKENS = 40


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 3) + 16 * len(GUID.findall(text))


def consolidation_reply_tokens(contents: Sequence[str], max_note_chars: int) -> int:
    """Return the max_tokens of a consolidation reply: room for every fact of the sources, once."""
    note = min(sum(len(c) for c in contents), max_note_chars)
    return CONSOLIDATION_BASE_TOKENS + PER_SOURCE_TOKENS * len(contents) + math.ceil(note / 3)


def split_to_fit(items: Sequence[T], fits: Callable[[Sequence[T]], bool], min_size: int) -> Optional[list[list[T]]]:
    """Return `items` cut into as few consecutive parts that each fit as possible, or None.

    Every part has at least `min_size` items; a smaller remainder is left out, as in clustering.
    """
    if fits(items):
        return [list(items)]
    for size in range(len(items) - 1, min_size - 1, -1):
        parts = [list(items[i : i + size]) for i in range(0, len(items), size)]
        parts = [p for p in parts if len(p) >= min_size]
        if parts and all(fits(p) for p in parts):
            return parts
    return None
