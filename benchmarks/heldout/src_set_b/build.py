"""Assemble benchmarks/heldout/set_b.jsonl from the hand-written data_<lang>.py files.

Only age_days / access_count are generated (seeded, per item id); every text,
slot and value is hand-written in the data files.
"""
import importlib
import os
import json
import random
import sys

LANGS = ["en", "de", "es", "fr", "zh", "ja", "ru", "ar"]
CAT = {"sf": "same_fact", "vc": "value_change", "ds": "different_subject", "co": "complementary"}
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "set_b.jsonl")


def rng_for(item_id):
    return random.Random("set_b:" + item_id)


def notes_plain(texts, r, age_lo=1, age_hi=200, shuffle=True):
    ages = sorted(r.sample(range(age_lo, age_hi), len(texts)), reverse=True)
    out = []
    for t, a in zip(texts, ages):
        acc = r.choice([0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 11, 14])
        out.append({"text": t, "age_days": a, "access_count": acc})
    if shuffle:  # order carries no meaning outside value_change
        r.shuffle(out)
    return out


def notes_vc(t_old, t_new, r):
    a_old = r.randint(15, 120)
    a_new = r.randint(0, 6)
    acc_old = r.choice([1, 2, 3, 4, 5, 6, 7, 9, 12, 15])
    acc_new = r.choice([0, 0, 1, 1, 2, 3])
    if r.random() < 0.2:  # sometimes the newer note has already been read more often
        acc_old = r.randint(0, 2)
        acc_new = acc_old + r.randint(1, 3)
    return [{"text": t_old, "age_days": a_old, "access_count": acc_old},
            {"text": t_new, "age_days": a_new, "access_count": acc_new}]


def build_lang(lang):
    m = importlib.import_module("data_" + lang)
    rows = []
    for i, (variation, texts, *extra) in enumerate(m.SF, 1):
        iid = f"{lang}-sf-{i:03d}"
        r = rng_for(iid)
        rows.append({"id": iid, "lang": lang, "category": "same_fact",
                     "notes": notes_plain(texts, r), "variation": variation,
                     "slot": None, "values": None, "value_kind": None,
                     "comment": extra[0] if extra else ""})
    for i, (kind, slot, old, new, t_old, t_new, reworded, *extra) in enumerate(m.VC, 1):
        iid = f"{lang}-vc-{i:03d}"
        r = rng_for(iid)
        comment = "reworded" if reworded else ""
        if extra:
            comment = (comment + "; " if comment else "") + extra[0]
        rows.append({"id": iid, "lang": lang, "category": "value_change",
                     "notes": notes_vc(t_old, t_new, r), "variation": None,
                     "slot": slot, "values": [old, new], "value_kind": kind,
                     "comment": comment})
    for i, (slot, v1, v2, t1, t2, same, *extra) in enumerate(m.DS, 1):
        iid = f"{lang}-ds-{i:03d}"
        r = rng_for(iid)
        comment = "same value" if same else "value also differs"
        if extra:
            comment += "; " + extra[0]
        if r.random() < 0.5:  # present the pair in either order, identifiers aligned
            t1, t2, v1, v2 = t2, t1, v2, v1
        rows.append({"id": iid, "lang": lang, "category": "different_subject",
                     "notes": notes_plain([t1, t2], r, shuffle=False), "variation": None,
                     "slot": slot, "values": [v1, v2], "value_kind": None,
                     "comment": comment})
    for i, (kind, subject, vals, t1, t2, *extra) in enumerate(m.CO, 1):
        iid = f"{lang}-co-{i:03d}"
        r = rng_for(iid)
        comment = ("shared template, multi-valued slot" if kind == "template"
                   else "different attributes of one subject")
        if extra:
            comment += "; " + extra[0]
        if r.random() < 0.5:
            t1, t2 = t2, t1
            if vals:
                vals = [vals[1], vals[0]]
        rows.append({"id": iid, "lang": lang, "category": "complementary",
                     "notes": notes_plain([t1, t2], r, shuffle=False), "variation": None,
                     "slot": subject, "values": vals, "value_kind": None,
                     "comment": comment})
    return rows


def main():
    langs = sys.argv[1:] or LANGS
    rows = []
    for lang in langs:
        rows.extend(build_lang(lang))
    with open(OUT, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
