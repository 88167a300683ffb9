"""Shared helpers for the hand-written held-out set C.

Each language file writes its items with SF / VC / DS / CO and calls
finalize(lang, RAW) to obtain ITEMS (a list of plain dicts).  finalize only
assigns ids (in order of appearance) and deterministic age_days /
access_count values; all texts, slots and values are written by hand.
"""
import random

ABBR = {"same_fact": "sf", "value_change": "vc",
        "different_subject": "ds", "complementary": "co"}


def SF(variation, texts, comment=""):
    return {"category": "same_fact", "variation": variation,
            "texts": list(texts), "slot": None, "values": None,
            "value_kind": None, "comment": comment}


def VC(kind, slot, old, new, t_old, t_new, reworded=False, comment=""):
    c = "reworded" if reworded else ""
    if comment:
        c = (c + "; " if c else "") + comment
    return {"category": "value_change", "variation": None,
            "texts": [t_old, t_new], "slot": slot, "values": [old, new],
            "value_kind": kind, "comment": c}


def DS(kind, slot, v1, v2, t1, t2, same_value, comment=""):
    """kind = type of the identifier (number, id, name, company, email, url, date).
    same_value: True if the rest of the note (the attribute value) is identical."""
    c = "same value" if same_value else "value also differs"
    if comment:
        c += "; " + comment
    return {"category": "different_subject", "variation": None,
            "texts": [t1, t2], "slot": slot, "values": [v1, v2],
            "value_kind": kind, "comment": c}


def CO(slot, t1, t2, template, values=None, comment=""):
    c = "template: multi-valued slot" if template else "different attributes"
    if comment:
        c += "; " + comment
    return {"category": "complementary", "variation": None,
            "texts": [t1, t2], "slot": slot, "values": values,
            "value_kind": None, "comment": c}


def finalize(lang, raw):
    counters = {}
    items = []
    for r in raw:
        cat = r["category"]
        counters[cat] = counters.get(cat, 0) + 1
        iid = f"{lang}-{ABBR[cat]}-{counters[cat]:03d}"
        rng = random.Random(iid)
        notes = []
        n = len(r["texts"])
        for i, t in enumerate(r["texts"]):
            if cat == "value_change":
                if i == 0:
                    age, acc = rng.randint(15, 120), rng.randint(1, 9)
                else:
                    age, acc = rng.randint(0, 6), rng.randint(0, 3)
            else:
                age, acc = rng.randint(0, 180), rng.randint(0, 12)
            notes.append({"text": t, "age_days": age, "access_count": acc})
        items.append({"id": iid, "lang": lang, "category": cat,
                      "notes": notes, "variation": r["variation"],
                      "slot": r["slot"], "values": r["values"],
                      "value_kind": r["value_kind"], "comment": r["comment"]})
    return items
