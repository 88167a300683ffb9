"""Run the stub LLM server of tests/llmstub.py for benchmarks, with corpus-aware embeddings.

Chat completions are exactly the stub's default responder (deterministic answers to memctl's
consolidation, contradiction and absorption prompts) after `--latency` seconds. Embeddings
(/v1/embeddings) come from `corpus.TextVectors`: the stub then plays the store's embedding model,
so a note memctl creates lands where a semantic model would put it, next to the facts it
states, instead of next to every text that shares the corpus's template words.

    python benchmarks/stub.py --latency 0.3 --dim 384 --seed 7
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import llmstub  # noqa: E402

from benchmarks.corpus import TextVectors  # noqa: E402


def main(argv: Optional[list[str]] = None) -> int:
    """Serve until SIGTERM; print the base URL on the first line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every call")
    parser.add_argument("--dim", type=int, default=384, help="embedding dimension")
    parser.add_argument("--seed", type=int, default=7, help="the corpus seed (its fact directions)")
    parser.add_argument("--slots", type=int, help="chat calls answered at once, the others queued (1: a one-slot local server)")
    args = parser.parse_args(argv)
    vectors = TextVectors(args.seed, args.dim)
    # the stub computes each embedding with this module-level function
    llmstub.hash_embedding = lambda text, dim: vectors(text).tolist()
    slots = ["--slots", str(args.slots)] if args.slots else []
    return llmstub.main(["--latency", str(args.latency), "--dim", str(args.dim), *slots])


if __name__ == "__main__":
    sys.exit(main())
