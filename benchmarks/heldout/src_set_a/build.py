"""Build benchmarks/heldout/set_a.jsonl from the per-language item files and validate it."""
import collections
import importlib
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = os.path.join(os.path.dirname(HERE), "set_a.jsonl")

LANGS = ["en", "de", "es", "fr", "zh", "ja", "ru", "ar"]
CATS = {"same_fact": "sf", "value_change": "vc",
        "different_subject": "ds", "complementary": "co"}
VARIATIONS = {"punctuation", "adverb", "filler", "word_order", "synonym", "paraphrase"}
VALUE_KINDS = {"word", "name", "number", "negation"}
KEYS = ["id", "lang", "category", "notes", "variation", "slot", "values",
        "value_kind", "comment"]

# relative time words that must not appear in any note (lower-cased substring match)
RELATIVE = {
    "en": [r"\byesterday\b", r"\btoday\b", r"\btomorrow\b", r"\blast (week|month|year)\b",
           r"\bnext (week|month|year)\b", r"\brecently\b", r"\bago\b", r"\bnowadays\b"],
    "de": [r"\bgestern\b", r"\bheute\b", r"\bmorgen\b", r"\bletzte[nr]? woche\b",
           r"\bnächste[nr]? woche\b", r"\bvorige[nr]? woche\b", r"\bkürzlich\b", r"\bneulich\b"],
    "es": [r"\bayer\b", r"\bhoy\b", r"(?<!la )\bmañana\b", r"\bla semana pasada\b",
           r"\bla semana que viene\b", r"\bel mes pasado\b", r"\brecientemente\b", r"\bhace \w+ días\b"],
    "fr": [r"\bhier\b", r"\baujourd'hui\b", r"\baujourd’hui\b", r"\bdemain\b",
           r"\bla semaine dernière\b", r"\ble mois dernier\b", r"\brécemment\b"],
    "zh": ["昨天", "今天", "明天", "上周", "下周", "上个月", "下个月", "最近", "前天", "去年"],
    "ja": ["昨日", "今日", "明日", "先週", "来週", "先月", "来月", "最近", "去年", "おととい"],
    "ru": [r"\bвчера\b", r"\bсегодня\b", r"\bзавтра\b", r"на прошлой неделе",
           r"на следующей неделе", r"в прошлом месяце", r"\bнедавно\b", r"\bпозавчера\b"],
    "ar": [r"\bأمس\b", r"\bالبارحة\b", r"\bاليوم\b", r"\bغدًا", r"\bغدا\b",
           "الأسبوع الماضي", "الأسبوع القادم", "الشهر الماضي", r"\bمؤخرًا", r"\bمؤخرا\b"],
}
SCRIPT = {  # at least one char of the native script must be present in every note
    "zh": re.compile(r"[\u4e00-\u9fff]"),
    "ja": re.compile(r"[\u3040-\u30ff]"),
    "ru": re.compile(r"[\u0400-\u04ff]"),
    "ar": re.compile(r"[\u0600-\u06ff]"),
}


def ascii_digits(text):
    """Map every decimal digit (ASCII, full-width, Arabic-Indic...) to ASCII."""
    return "".join(str(unicodedata.digit(ch)) if ch.isdecimal() else ch for ch in text)


def load():
    items = []
    for lang in LANGS:
        mod = importlib.import_module(lang)
        items.extend(mod.ITEMS)
    return items


def validate(items):
    errors = []
    seen = set()
    counts = collections.Counter()
    for it in items:
        iid = it.get("id")
        def err(msg):
            errors.append(f"{iid}: {msg}")
        if list(it.keys()) != KEYS:
            err(f"keys {list(it.keys())}")
        if iid in seen:
            err("duplicate id")
        seen.add(iid)
        lang, cat = it["lang"], it["category"]
        if lang not in LANGS or cat not in CATS:
            err("bad lang/category")
            continue
        if not re.fullmatch(rf"{lang}-{CATS[cat]}-\d{{3}}", iid):
            err("id does not match lang/category")
        counts[(lang, cat)] += 1
        notes = it["notes"]
        texts = [n["text"] for n in notes]
        for n in notes:
            if set(n) != {"text", "age_days", "access_count"}:
                err("note keys")
            if not isinstance(n["text"], str) or not n["text"].strip():
                err("empty text")
            if not (isinstance(n["age_days"], int) and n["age_days"] >= 0):
                err("age_days")
            if not (isinstance(n["access_count"], int) and n["access_count"] >= 0):
                err("access_count")
            low = n["text"].lower()
            for pat in RELATIVE[lang]:
                if re.search(pat, low):
                    err(f"relative time word {pat!r} in {n['text']!r}")
            if lang in SCRIPT and not SCRIPT[lang].search(n["text"]):
                err(f"no native script in {n['text']!r}")
        if len(set(texts)) != len(texts):
            err("identical note texts")
        if cat == "same_fact":
            if len(notes) not in (2, 3):
                err("same_fact needs 2 or 3 notes")
            if it["variation"] not in VARIATIONS:
                err("variation")
            # same numbers in every note (ASCII digits and full-width/Arabic-Indic runs)
            nums = [sorted(re.findall(r"\d+", ascii_digits(t))) for t in texts]
            if any(x != nums[0] for x in nums):
                err(f"numbers differ between notes: {nums}")
        else:
            if len(notes) != 2:
                err("needs exactly 2 notes")
            if it["variation"] is not None:
                err("variation must be null")
        if cat == "value_change":
            if it["value_kind"] not in VALUE_KINDS:
                err("value_kind")
            if not (15 <= notes[0]["age_days"] <= 90 and 0 <= notes[1]["age_days"] <= 6):
                err("value_change ages: older first (15-90), newer second (0-6)")
            if notes[0]["age_days"] <= notes[1]["age_days"]:
                err("older note must come first")
        if cat in ("value_change", "different_subject"):
            vals = it["values"]
            if not (isinstance(vals, list) and len(vals) == 2 and vals[0] != vals[1]):
                err("values must be two different strings")
            else:
                for v, t in zip(vals, texts):
                    if v not in t:
                        err(f"value {v!r} not written in {t!r}")
            if not it["slot"]:
                err("slot required")
        if cat == "complementary" and it["values"]:
            for v, t in zip(it["values"], texts):
                if v not in t:
                    err(f"value {v!r} not written in {t!r}")
    for lang in LANGS:
        for cat in CATS:
            if counts[(lang, cat)] != 25:
                errors.append(f"{lang}/{cat}: {counts[(lang, cat)]} items, want 25")
    return errors


def summary(items):
    c = collections.Counter()
    for it in items:
        c[(it["lang"], it["category"])] += 1
        if it["category"] == "same_fact":
            c[(it["lang"], "sf:" + it["variation"])] += 1
            c[(it["lang"], "sf:%d notes" % len(it["notes"]))] += 1
        if it["category"] == "value_change":
            c[(it["lang"], "vc:" + it["value_kind"])] += 1
            c[(it["lang"], "vc:reworded" if "reworded" in it["comment"] else "vc:identical")] += 1
        if it["category"] == "different_subject":
            c[(it["lang"], "ds:" + it["comment"].split(";")[0])] += 1
        if it["category"] == "complementary":
            c[(it["lang"], "co:" + it["comment"].split(";")[0])] += 1
    keys = sorted({k for _, k in c})
    for k in keys:
        print(f"{k:40s}", " ".join(f"{lang}={c[(lang, k)]:<3d}" for lang in LANGS))


def main():
    langs = sys.argv[1:]
    if langs:  # partial check while writing: validate only these languages
        global LANGS
        LANGS = langs
    items = load()
    errors = validate(items)
    summary(items)
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    if not langs:
        with open(OUT, "w", encoding="utf-8") as f:
            for it in items:
                f.write(json.dumps(it, ensure_ascii=False) + "\n")
        print(f"wrote {len(items)} items to {OUT}")


if __name__ == "__main__":
    main()
