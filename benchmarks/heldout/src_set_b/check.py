"""Validate /work/heldout/set_b.jsonl (structure, counts, a few content sanity checks)."""
import collections
import json
import re
import sys

PATH = "/work/heldout/set_b.jsonl"
CATS = ["same_fact", "value_change", "different_subject", "complementary"]
ABBR = {"same_fact": "sf", "value_change": "vc", "different_subject": "ds", "complementary": "co"}
VARS = ["punctuation", "adverb", "filler", "word_order", "synonym", "paraphrase"]
KINDS = ["word", "name", "number", "negation"]

# relative time words that must not appear in any note (word-boundary match for
# space-separated languages, substring for zh/ja)
REL = {
    "en": r"\b(yesterday|today|tomorrow|tonight|now|recently|lately|last (week|month|year)|next (week|month|year)|ago|soon|currently)\b",
    "de": r"\b(gestern|heute|morgen|übermorgen|vorgestern|jetzt|neulich|kürzlich|letzte[nrs]? (Woche|Monat|Jahr)|nächste[nrs]? (Woche|Monat|Jahr)|bald|inzwischen|mittlerweile|derzeit|aktuell)\b",
    "es": r"\b(ayer|hoy|mañana|anoche|ahora|recientemente|la semana pasada|la semana que viene|el mes pasado|pronto|actualmente|hace \w+ días)\b",
    "fr": r"\b(hier|aujourd'hui|aujourd’hui|demain|maintenant|récemment|la semaine dernière|la semaine prochaine|le mois dernier|bientôt|actuellement|désormais|dorénavant)\b",
    "ru": r"(?i)\b(вчера|сегодня|завтра|сейчас|теперь|недавно|на прошлой неделе|на следующей неделе|в прошлом месяце|скоро|на днях|позавчера)\b",
    "ar": r"(أمس|الأمس|اليوم|غدا|غدًا|غداً|الآن|مؤخرا|مؤخرًا|مؤخراً|الأسبوع الماضي|الأسبوع القادم|الشهر الماضي|حاليا|حاليًا|حالياً|قريبا|قريبًا)",
    "zh": r"(昨天|今天|明天|现在|最近|上周|下周|上个月|下个月|刚才|目前|今后|以后|前天|后天|近期)",
    "ja": r"(昨日|今日|明日|今後|最近|先週|来週|先月|来月|さっき|現在|いま|今は|今月|今週|一昨日|明後日)",
}
SCRIPT = {
    "ar": r"[\u0600-\u06FF]", "ru": r"[\u0400-\u04FF]", "zh": r"[\u4E00-\u9FFF]",
    "ja": r"[\u3040-\u30FF]",
}
AR_DIGITS = re.compile(r"[\u0660-\u0669]")
FW_DIGITS = re.compile(r"[\uFF10-\uFF19]")
HEDGES = re.compile(r"(?i)\b(usually|sometimes|maybe|perhaps|probably|often|meist|manchmal|vielleicht|normalerweise|a veces|quizás|quizá|normalmente|parfois|peut-être|souvent|généralement|иногда|обычно|возможно|может быть)\b|(有时|可能|也许|通常|たまに|たぶん|多分|普段|ときどき|أحيانا|أحيانًا|ربما|عادة|عادةً)")


def main():
    errors, warns = [], []
    rows = []
    with open(PATH, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except Exception as e:  # noqa
                errors.append(f"line {n}: bad json {e}")
    ids = collections.Counter(r["id"] for r in rows)
    for i, c in ids.items():
        if c > 1:
            errors.append(f"duplicate id {i}")
    langs = sorted({r["lang"] for r in rows}, key=lambda l: "en de es fr zh ja ru ar".split().index(l))
    table = collections.Counter((r["lang"], r["category"]) for r in rows)
    stats = collections.defaultdict(collections.Counter)
    for r in rows:
        lang, cat, notes = r["lang"], r["category"], r["notes"]
        iid = r["id"]
        if not re.fullmatch(rf"{lang}-{ABBR[cat]}-\d{{3}}", iid):
            errors.append(f"{iid}: id format")
        texts = [n["text"] for n in notes]
        if len(set(texts)) != len(texts):
            errors.append(f"{iid}: identical note texts")
        for n in notes:
            if not isinstance(n.get("age_days"), int) or not isinstance(n.get("access_count"), int):
                errors.append(f"{iid}: age/access missing")
            t = n["text"]
            if re.search(REL[lang], t):
                errors.append(f"{iid}: relative time word in {t!r}")
            if lang in SCRIPT and not re.search(SCRIPT[lang], t):
                errors.append(f"{iid}: no native script in {t!r}")
            if lang in ("zh", "ja"):
                ln = len(t)
                if ln < 5 or ln > 70:
                    warns.append(f"{iid}: length {ln} chars: {t}")
            else:
                ln = len(t.split())
                if ln < 3 or ln > 28:
                    warns.append(f"{iid}: length {ln} words: {t}")
            if "  " in t or t != t.strip():
                warns.append(f"{iid}: odd spacing {t!r}")
        if cat == "same_fact":
            if len(notes) not in (2, 3):
                errors.append(f"{iid}: sf needs 2-3 notes")
            if r["variation"] not in VARS:
                errors.append(f"{iid}: bad variation")
            stats[lang]["var_" + r["variation"]] += 1
            stats[lang]["sf_3notes"] += len(notes) == 3
            if r["variation"] == "adverb" and any(HEDGES.search(t) for t in texts):
                errors.append(f"{iid}: hedge in adverb item")
            if r["variation"] == "punctuation":
                norm = {re.sub(r"[\W_]+", "", t, flags=re.UNICODE).lower() for t in texts}
                if len(norm) != 1:
                    warns.append(f"{iid}: punctuation item differs beyond punctuation/case: {texts}")
        else:
            if len(notes) != 2:
                errors.append(f"{iid}: needs exactly 2 notes")
        if cat == "value_change":
            a, b = notes
            if not (15 <= a["age_days"] <= 120 and 0 <= b["age_days"] <= 6):
                errors.append(f"{iid}: vc ages")
            if r["value_kind"] not in KINDS:
                errors.append(f"{iid}: bad value_kind")
            stats[lang]["kind_" + r["value_kind"]] += 1
            stats[lang]["vc_reworded"] += "reworded" in r["comment"]
            old, new = r["values"]
            if r["value_kind"] != "negation":
                if old not in a["text"] or new not in b["text"]:
                    warns.append(f"{iid}: values not verbatim in notes {r['values']}")
                if old in b["text"] and old not in new:
                    warns.append(f"{iid}: old value also in new note")
            else:
                if old not in a["text"] or new not in b["text"]:
                    warns.append(f"{iid}: negation values not verbatim {r['values']}")
        if cat == "different_subject":
            v1, v2 = r["values"]
            if v1 not in notes[0]["text"] or v2 not in notes[1]["text"]:
                errors.append(f"{iid}: identifiers not verbatim {r['values']}")
            if v1 == v2:
                errors.append(f"{iid}: identical identifiers")
            stats[lang]["ds_same_value"] += r["comment"].startswith("same value")
            stats[lang]["ds_ar_indic"] += any(AR_DIGITS.search(t) for t in texts)
            stats[lang]["ds_fullwidth"] += any(FW_DIGITS.search(t) for t in texts)
        if cat == "complementary":
            stats[lang]["co_template"] += r["comment"].startswith("shared template")
            if r["values"] and not (r["values"][0] in texts[0] and r["values"][1] in texts[1]):
                warns.append(f"{iid}: complementary values not verbatim/aligned {r['values']}")
    for lang in langs:
        for cat in CATS:
            if table[(lang, cat)] != 25:
                errors.append(f"{lang}/{cat}: {table[(lang, cat)]} items, want 25")
    print(f"{len(rows)} rows, {len(ids)} unique ids")
    hdr = "lang  " + "  ".join(f"{ABBR[c]:>3}" for c in CATS)
    print(hdr)
    for lang in langs:
        print(f"{lang:4}  " + "  ".join(f"{table[(lang, c)]:>3}" for c in CATS))
    for lang in langs:
        print(lang, dict(sorted(stats[lang].items())))
    for w in warns:
        print("WARN", w)
    for e in errors:
        print("ERROR", e)
    print("OK" if not errors else f"{len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
