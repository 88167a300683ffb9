"""Offline embedder: signed feature hashing of words, word bigrams and character n-grams.

Deterministic, no fitted vocabulary, and its cosine tracks lexical overlap.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

import numpy as np

#: keys the embedding cache, so any change to the features below needs a new version
NAME = "memctl-hashing-v2"
DEFAULT_DIM = 1024

_TOKEN = re.compile(r"[^\W_]+")
#: a Han or hiragana character, or a katakana run: one word each (memctl.text.tokens cuts the same way)
_SPACELESS = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u309f]|[\u30a0-\u30ff\u31f0-\u31ff]+)")
_APOSTROPHES = re.compile(r"['\u2019\u2018`]")

# Function words that carry no topic. Negations are kept so "I eat meat" / "I never eat meat" stay
# similar enough to be checked for contradiction; "user" is the subject of nearly every note.
STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as into onto about than then
    is am are was were be been being do does did doing have has had having will would shall
    should can could may might must i im ive id ill me my mine myself we us our ours you your
    yours he him his she her hers it its they them their theirs this that these those there
    here so very just also too some any all s t d ll m re ve user users
    の は が を に で と も へ や か ね よ な だ 的 了 是 在 和 也 都""".split()  # noqa: SIM905
)

_GROUP_WORD, _GROUP_BIGRAM, _GROUP_CHAR = 0, 1, 2
# Relative weight of each feature group (the n-grams of one word are many, so each counts less).
_GROUP_WEIGHTS = np.array([1.0, 0.8, 0.35], dtype=np.float64)
_CHAR_NGRAMS = (3, 4, 5)
_CHUNK = 4096
_CACHE_LIMIT = 200_000

_MIX_A = np.uint64(0x9E3779B97F4A7C15)
_MIX_B = np.uint64(0xBF58476D1CE4E5B9)
_MIX_C = np.uint64(0x94D049BB133111EB)


def _h64(data: str) -> int:
    return int.from_bytes(hashlib.blake2b(data.encode("utf-8"), digest_size=8).digest(), "little")


def _mix(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Combine two uint64 hash arrays into one (splitmix64 finaliser over a keyed sum)."""
    z = left * _MIX_A + right
    z = (z ^ (z >> np.uint64(30))) * _MIX_B
    z = (z ^ (z >> np.uint64(27))) * _MIX_C
    return z ^ (z >> np.uint64(31))


_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def stem(word: str) -> str:
    """Strip one common English suffix (crude, but "cats"/"cat" and "moved"/"moving" then match)."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    """Split text into stemmed lowercase content words (NFKC, apostrophes joined, no stopwords, spaceless scripts per `_SPACELESS`)."""
    text = _APOSTROPHES.sub("", unicodedata.normalize("NFKC", text).lower())
    out: list[str] = []
    for token in _TOKEN.findall(text):
        pieces = _SPACELESS.split(token) if _SPACELESS.search(token) else (token,)
        out.extend(stem(p) for p in pieces if p and p not in STOPWORDS)
    return out


def _char_ngrams(word: str) -> list[str]:
    marked = f"<{word}>"
    return [marked[i : i + n] for n in _CHAR_NGRAMS for i in range(len(marked) - n + 1)]


class HashingEmbedder:
    """Embed texts by signed feature hashing; deterministic across processes and machines."""

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 16:
            raise ValueError(f"hashing dimension must be at least 16, got {dim}")
        self.dim = dim
        self.name = NAME if dim == DEFAULT_DIM else f"{NAME}:{dim}"
        # word -> (unigram hash, n-gram hashes); words recur across notes, so this pays off
        self._words: dict[str, tuple[int, np.ndarray]] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a (len(texts), dim) float32 array of unit rows (zero rows for empty text)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), _CHUNK):
            self._embed_chunk(texts[start : start + _CHUNK], out[start : start + _CHUNK])
        return out

    def _word(self, word: str) -> tuple[int, np.ndarray]:
        entry = self._words.get(word)
        if entry is None:
            if len(self._words) >= _CACHE_LIMIT:
                self._words.clear()
            grams = np.fromiter((_h64("c" + g) for g in _char_ngrams(word)), dtype=np.uint64)
            entry = (_h64("w" + word), grams)
            self._words[word] = entry
        return entry

    def _embed_chunk(self, texts: Sequence[str], out: np.ndarray) -> None:
        """Write the unit vectors of texts into out, a zeroed (len(texts), dim) view."""
        n = len(texts)
        vocab: dict[str, int] = {}
        token_ids: list[int] = []
        token_rows: list[int] = []
        for row, text in enumerate(texts):
            for word in tokens(text or ""):
                token_ids.append(vocab.setdefault(word, len(vocab)))
                token_rows.append(row)
        if not token_ids:
            return

        entries = [self._word(w) for w in vocab]
        word_hash = np.fromiter((e[0] for e in entries), dtype=np.uint64, count=len(entries))
        gram_counts = np.fromiter((len(e[1]) for e in entries), dtype=np.int64, count=len(entries))
        gram_flat = np.concatenate([e[1] for e in entries])
        gram_start = np.concatenate(([0], np.cumsum(gram_counts)[:-1]))

        ids = np.asarray(token_ids, dtype=np.int64)
        rows = np.asarray(token_rows, dtype=np.int64)

        h_word = word_hash[ids]
        # bigrams of adjacent content words in the same text
        adjacent = np.flatnonzero(rows[1:] == rows[:-1])
        h_bigram = _mix(h_word[adjacent], h_word[adjacent + 1])
        # character n-grams of every token: gather each token's slice of gram_flat
        lengths = gram_counts[ids]
        total = int(lengths.sum())
        offsets = np.repeat(gram_start[ids] - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        h_char = gram_flat[np.arange(total, dtype=np.int64) + offsets]

        hashes = np.concatenate((h_word, h_bigram, h_char))
        feat_rows = np.concatenate((rows, rows[adjacent], np.repeat(rows, lengths)))
        groups = np.repeat(np.array([_GROUP_WORD, _GROUP_BIGRAM, _GROUP_CHAR], dtype=np.int64), [len(h_word), len(h_bigram), total])
        buckets = (hashes % np.uint64(self.dim)).astype(np.int64)
        negative = (hashes >> np.uint64(63)).astype(np.int64)

        # sublinear tf (1 + log count) per (text, bucket, group, sign); the key sorts by (text, bucket)
        # first, so equal cells end up adjacent for reduceat
        key = ((feat_rows * self.dim + buckets) * 3 + groups) * 2 + negative
        key, counts = np.unique(key, return_counts=True)
        values = (1.0 + np.log(counts)) * _GROUP_WEIGHTS[(key >> 1) % 3] * (1 - 2 * (key & 1))
        cell = key // 6
        starts = np.flatnonzero(np.concatenate(([True], cell[1:] != cell[:-1])))
        sums = np.add.reduceat(values, starts)
        cells = cell[starts]
        cell_rows = cells // self.dim
        norms = np.sqrt(np.bincount(cell_rows, weights=sums * sums, minlength=n))
        nonzero = norms[cell_rows] > 0
        out[cell_rows[nonzero], cells[nonzero] % self.dim] = sums[nonzero] / norms[cell_rows[nonzero]]
