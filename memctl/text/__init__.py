"""Text and decisions, in any language: the low floor both LLM phases and the offline judge stand on.

`tokens` (Unicode tokens and sentences), `lexicon` (small word lists per language), `statement`
(what one sentence states), `english` (English attribute and quantifier-negation rules),
`compare` (what one sentence is to another, and on what evidence) and `decide` (the decision
layer, the guard on contradiction verdicts, the check of a merged note). Nothing here imports
the rest of memctl.
"""

from functools import _lru_cache_wrapper
from importlib import import_module

#: the modules whose analyses are memoised (bounded caches; `forget` empties them)
_MEMOISED = ("tokens", "lexicon", "statement", "english", "compare", "decide")


def forget() -> None:
    """Empty the memoised analyses of every text seen so far.

    Their bounds are set for speed (a few hundred MB when full), so a large store read agent by
    agent (memctl/phases/slices.py) empties them between slices.
    """
    for name in _MEMOISED:
        module = import_module(f"{__name__}.{name}")
        for value in vars(module).values():
            if isinstance(value, _lru_cache_wrapper):
                value.cache_clear()
    import_module(f"{__name__}.decide").forget_decisions()
