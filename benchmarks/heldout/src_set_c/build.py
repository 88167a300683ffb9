"""Build benchmarks/heldout/set_c.jsonl and README_set_c.md from the per-language sources.

Usage: python3 build.py            (all 8 languages, strict)
       python3 build.py en de      (only some languages; no files written)
"""
import importlib, json, os, re, sys, unicodedata
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.dirname(HERE)
sys.path.insert(0, HERE)

LANGS = ["en", "de", "es", "fr", "zh", "ja", "ru", "ar"]
CATS = ["same_fact", "value_change", "different_subject", "complementary"]
ABBR = {"same_fact": "sf", "value_change": "vc", "different_subject": "ds", "complementary": "co"}
VARIATIONS = {"punctuation": 5, "adverb": 5, "filler": 5, "word_order": 3, "synonym": 4, "paraphrase": 3}
VALUE_KINDS = {"word": 12, "name": 5, "number": 4, "negation": 4}
DS_KINDS = {"number", "id", "name", "company", "email", "url", "date"}
KEYS = ["id", "lang", "category", "notes", "variation", "slot", "values", "value_kind", "comment"]

# relative time words that must not appear (regex, case-insensitive)
REL = {
    "en": r"\b(yesterday|today|tomorrow|tonight|last (week|month|year)|next (week|month|year)|ago|recently|lately)\b",
    "de": r"\b(gestern|heute|vorgestern|übermorgen|letzte[nr]? (Woche|Monat)|nächste[nr]? (Woche|Monat)|kürzlich|neulich|vor kurzem)\b",
    "es": r"\b(ayer|hoy|anteayer|pasado mañana|la semana pasada|la próxima semana|el mes pasado|recientemente|hace poco)\b",
    "fr": r"(\bhier\b|aujourd|\bdemain\b|semaine dernière|semaine prochaine|mois dernier|récemment|avant-hier)",
    "zh": r"(昨天|今天|明天|前天|后天|上周|下周|上个月|下个月|最近|刚才|前几天)",
    "ja": r"(昨日|今日|明日|一昨日|おととい|あさって|先週|来週|先月|来月|最近|この前|さっき)",
    "ru": r"(вчера|сегодня|завтра|позавчера|послезавтра|на прошлой неделе|на следующей неделе|в прошлом месяце|недавно)",
    "ar": r"(?<!\w)(أمس|بالأمس|البارحة|اليوم|غدا|غدًا|غداً|الأسبوع الماضي|الأسبوع القادم|الشهر الماضي|مؤخرا|مؤخرًا|مؤخراً|حاليًا|حاليا|الآن)(?![\w\u064b-\u0652])",
}
SCRIPT = {
    "zh": re.compile(r"[\u4e00-\u9fff]"),
    "ja": re.compile(r"[\u3040-\u30ff]"),
    "ru": re.compile(r"[\u0400-\u04ff]"),
    "ar": re.compile(r"[\u0600-\u06ff]"),
}
ARABIC_INDIC = re.compile(r"[\u0660-\u0669]")
FULLWIDTH = re.compile(r"[\uff10-\uff19]")


def digits_of(text):
    """Digit runs normalised to ASCII (NFKC + Arabic-Indic), thousands separators removed."""
    t = unicodedata.normalize("NFKC", text)
    t = t.translate({0x0660 + i: 0x30 + i for i in range(10)})
    t = re.sub(r"(?<=\d)[,.\u066c\u066b](?=\d{3}\b)", "", t)
    return sorted(re.findall(r"\d+", t))


def tokens(text, lang):
    t = unicodedata.normalize("NFKC", text).lower()
    if lang in ("zh", "ja"):
        return [c for c in t if not c.isspace() and unicodedata.category(c)[0] in "LN"]
    return re.findall(r"\w+", t)


def overlap(a, b, lang):
    ta, tb = Counter(tokens(a, lang)), Counter(tokens(b, lang))
    inter = sum((ta & tb).values())
    return inter / max(1, min(sum(ta.values()), sum(tb.values())))


def validate(lang, items):
    errs, warns = [], []
    E = lambda m: errs.append(f"{lang}: {m}")
    W = lambda m: warns.append(f"{lang}: {m}")
    cat_count = Counter(it["category"] for it in items)
    for c in CATS:
        if cat_count[c] != 25:
            E(f"{c} has {cat_count[c]} items, expected 25")
    var = Counter(it["variation"] for it in items if it["category"] == "same_fact")
    if dict(var) != VARIATIONS:
        E(f"same_fact variations {dict(var)} != {VARIATIONS}")
    vk = Counter(it["value_kind"] for it in items if it["category"] == "value_change")
    if dict(vk) != VALUE_KINDS:
        E(f"value_change kinds {dict(vk)} != {VALUE_KINDS}")
    three = sum(1 for it in items if it["category"] == "same_fact" and len(it["notes"]) == 3)
    if not 6 <= three <= 11:
        E(f"{three} same_fact items with 3 notes (want about a third)")
    rew = sum(1 for it in items if it["category"] == "value_change" and "reworded" in it["comment"])
    if not 5 <= rew <= 9:
        E(f"{rew} reworded value_change items (want about 7)")
    same = sum(1 for it in items if it["category"] == "different_subject" and it["comment"].startswith("same value"))
    if not 10 <= same <= 15:
        E(f"{same} different_subject items with same value (want about half)")
    tmpl = sum(1 for it in items if it["category"] == "complementary" and it["comment"].startswith("template"))
    if not 10 <= tmpl <= 14:
        E(f"{tmpl} template complementary items (want about 12)")
    if lang == "ar":
        n = sum(1 for it in items if it["category"] == "different_subject"
                and any(ARABIC_INDIC.search(x["text"]) for x in it["notes"]))
        if not 10 <= n <= 16:
            E(f"{n} ar different_subject items use Arabic-Indic digits (want about half)")
    if lang in ("zh", "ja"):
        n = sum(1 for it in items if it["category"] == "different_subject"
                and any(FULLWIDTH.search(x["text"]) for x in it["notes"]))
        if not 2 <= n <= 8:
            E(f"{n} {lang} different_subject items use full-width digits (want a few)")

    seen_texts = Counter()
    rel = re.compile(REL[lang], re.I)
    for it in items:
        iid = it["id"]
        if list(it.keys()) != KEYS:
            E(f"{iid}: keys {list(it.keys())}")
        if not re.fullmatch(rf"{lang}-{ABBR[it['category']]}-\d{{3}}", iid):
            E(f"{iid}: bad id")
        if it["lang"] != lang:
            E(f"{iid}: lang mismatch")
        notes = it["notes"]
        texts = [n["text"] for n in notes]
        for n in notes:
            if set(n) != {"text", "age_days", "access_count"}:
                E(f"{iid}: note keys {set(n)}")
            if not isinstance(n["age_days"], int) or not isinstance(n["access_count"], int):
                E(f"{iid}: age/access not int")
            t = n["text"]
            if t != t.strip() or not t:
                E(f"{iid}: whitespace/empty text")
            seen_texts[t] += 1
            m = rel.search(t)
            if m:
                E(f"{iid}: relative time word {m.group(0)!r} in {t!r}")
            if lang in SCRIPT and not SCRIPT[lang].search(t):
                E(f"{iid}: no native script in {t!r}")
            nw = len(tokens(t, lang)) if lang not in ("zh", "ja") else len(tokens(t, lang)) / 1.6
            if nw < 3 or nw > 40:
                W(f"{iid}: length {nw:.0f} words-ish: {t!r}")
        if len(set(texts)) != len(texts):
            E(f"{iid}: duplicate texts within item")
        cat = it["category"]
        if cat == "same_fact":
            if len(notes) not in (2, 3):
                E(f"{iid}: same_fact needs 2-3 notes")
            d0 = digits_of(texts[0])
            for t in texts[1:]:
                if digits_of(t) != d0:
                    E(f"{iid}: numbers differ {d0} vs {digits_of(t)}")
            if it["slot"] is not None or it["values"] is not None or it["value_kind"] is not None:
                E(f"{iid}: same_fact must have null slot/values/value_kind")
        else:
            if len(notes) != 2:
                E(f"{iid}: needs exactly 2 notes")
            if it["variation"] is not None:
                E(f"{iid}: variation must be null")
        if cat == "value_change":
            o, n = notes
            if not (15 <= o["age_days"] <= 120 and 0 <= n["age_days"] <= 6 and o["age_days"] > n["age_days"]):
                E(f"{iid}: ages not older-first {o['age_days']} {n['age_days']}")
            if not it["slot"] or len(it["values"]) != 2:
                E(f"{iid}: slot/values missing")
            for v, t in zip(it["values"], texts):
                if v not in t:
                    E(f"{iid}: value {v!r} not in {t!r}")
            if it["values"][0] == it["values"][1]:
                E(f"{iid}: values equal")
        if cat == "different_subject":
            if it["value_kind"] not in DS_KINDS:
                E(f"{iid}: ds value_kind {it['value_kind']}")
            v1, v2 = it["values"]
            if v1 == v2:
                E(f"{iid}: identifiers equal")
            if v1 not in texts[0] or v2 not in texts[1]:
                E(f"{iid}: identifier not in text")
            if overlap(*texts, lang) < 0.5:
                W(f"{iid}: low overlap {overlap(*texts, lang):.2f}")
        if cat == "complementary":
            if it["values"] is not None:
                for v, t in zip(it["values"], texts):
                    if v not in t:
                        E(f"{iid}: value {v!r} not in {t!r}")
    for t, c in seen_texts.items():
        if c > 1:
            W(f"text used {c} times: {t!r}")
    return errs, warns


def main():
    langs = sys.argv[1:] or LANGS
    strict = langs == LANGS
    allitems, allerr, allwarn = [], [], []
    per_lang = {}
    for lang in langs:
        mod = importlib.import_module(lang)
        items = mod.ITEMS
        e, w = validate(lang, items)
        allerr += e
        allwarn += w
        per_lang[lang] = items
        allitems += items
    ids = Counter(it["id"] for it in allitems)
    allerr += [f"duplicate id {i}" for i, c in ids.items() if c > 1]
    # every item must round-trip through JSON
    for it in allitems:
        json.loads(json.dumps(it, ensure_ascii=False))
    for w in allwarn:
        print("WARN", w)
    for e in allerr:
        print("ERROR", e)
    print(f"{len(allitems)} items, {len(allerr)} errors, {len(allwarn)} warnings")
    if allerr:
        sys.exit(1)
    if not strict:
        print("partial run: nothing written")
        return
    order = {c: i for i, c in enumerate(CATS)}
    allitems.sort(key=lambda it: (LANGS.index(it["lang"]), order[it["category"]], it["id"]))
    with open(os.path.join(OUT_DIR, "set_c.jsonl"), "w", encoding="utf-8") as f:
        for it in allitems:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    write_readme(per_lang, allitems)
    print("wrote set_c.jsonl and README_set_c.md")


def write_readme(per_lang, allitems):
    tmpl = open(os.path.join(HERE, "README_template.md"), encoding="utf-8").read()
    rows = ["| lang | same_fact | value_change | different_subject | complementary | notes | 3-note sf | reworded vc | ds same value | co template |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for lang, items in per_lang.items():
        c = Counter(it["category"] for it in items)
        rows.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            lang, c["same_fact"], c["value_change"], c["different_subject"], c["complementary"],
            sum(len(it["notes"]) for it in items),
            sum(1 for it in items if it["category"] == "same_fact" and len(it["notes"]) == 3),
            sum(1 for it in items if it["category"] == "value_change" and "reworded" in it["comment"]),
            sum(1 for it in items if it["category"] == "different_subject" and it["comment"].startswith("same value")),
            sum(1 for it in items if it["category"] == "complementary" and it["comment"].startswith("template"))))
    amb = []
    for it in allitems:
        if "ambiguous" in it["comment"]:
            txt = " / ".join(n["text"] for n in it["notes"])
            amb.append(f"- `{it['id']}` ({it['category']}): {txt} — {it['comment']}")
    out = tmpl.replace("{{COUNTS}}", "\n".join(rows)).replace("{{TOTAL}}", str(len(allitems)))
    out = out.replace("{{AMBIGUOUS}}", "\n".join(amb) or "(none)")
    with open(os.path.join(OUT_DIR, "README_set_c.md"), "w", encoding="utf-8") as f:
        f.write(out)


if __name__ == "__main__":
    main()
