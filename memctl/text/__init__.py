"""Text and decisions, in any language: the low floor both LLM phases and the offline judge stand on.

- `tokens`: Unicode tokens (NFKC, digits of any script, CJK characters) and sentences;
- `lexicon`: the small word lists (filler, negations, cues, exclusive value sets) per language;
- `statement`: what one sentence states (content words, negations, hard evidence, names);
- `english`: the English attribute and quantifier-negation rules (tuned on SICK; measured there);
- `compare`: two sentences compared: what the second is to the first, and the evidence it rests on;
- `decide`: the decision layer (same fact / conflicting value / different subject / complementary),
  the guard on contradiction verdicts and the check of a merged note.

Nothing here imports the rest of memctl.
"""
