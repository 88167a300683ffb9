"""Small helper used by the per-language files of held-out set A.

Each language file creates one Builder, calls sf()/vc()/ds()/co() once per item
(ids are numbered in order of appearance) and exposes ITEMS = b.items.
age_days / access_count are drawn from a RNG seeded with the item id, so the
file is deterministic; value_change items always get an older note first
(15-90 days) and a newer note second (0-6 days).
"""
import random
import zlib

ABBR = {"same_fact": "sf", "value_change": "vc",
        "different_subject": "ds", "complementary": "co"}


class Builder:
    def __init__(self, lang):
        self.lang = lang
        self.items = []
        self._n = {}

    def _id(self, cat):
        self._n[cat] = self._n.get(cat, 0) + 1
        return f"{self.lang}-{ABBR[cat]}-{self._n[cat]:03d}"

    @staticmethod
    def _rng(iid):
        return random.Random(zlib.crc32(iid.encode("utf-8")))

    def _add(self, iid, cat, notes, variation=None, slot=None, values=None,
             value_kind=None, comment=""):
        self.items.append({
            "id": iid, "lang": self.lang, "category": cat, "notes": notes,
            "variation": variation, "slot": slot, "values": values,
            "value_kind": value_kind, "comment": comment,
        })

    def sf(self, variation, *texts, comment=""):
        iid = self._id("same_fact")
        r = self._rng(iid)
        notes = [{"text": t, "age_days": r.randint(1, 180),
                  "access_count": r.randint(0, 14)} for t in texts]
        self._add(iid, "same_fact", notes, variation=variation, comment=comment)

    def vc(self, kind, slot, old, new, t_old, t_new, reworded=False, comment=""):
        iid = self._id("value_change")
        r = self._rng(iid)
        notes = [{"text": t_old, "age_days": r.randint(15, 90),
                  "access_count": r.randint(0, 12)},
                 {"text": t_new, "age_days": r.randint(0, 6),
                  "access_count": r.randint(0, 3)}]
        c = "reworded" if reworded else ""
        if comment:
            c = (c + "; " + comment) if c else comment
        self._add(iid, "value_change", notes, slot=slot, values=[old, new],
                  value_kind=kind, comment=c)

    def ds(self, slot, v1, v2, t1, t2, changed=False, comment=""):
        iid = self._id("different_subject")
        r = self._rng(iid)
        notes = [{"text": t, "age_days": r.randint(0, 150),
                  "access_count": r.randint(0, 10)} for t in (t1, t2)]
        c = "value also differs" if changed else "same value"
        if comment:
            c += "; " + comment
        self._add(iid, "different_subject", notes, slot=slot, values=[v1, v2],
                  comment=c)

    def co(self, slot, t1, t2, values=None, comment=""):
        iid = self._id("complementary")
        r = self._rng(iid)
        notes = [{"text": t, "age_days": r.randint(0, 150),
                  "access_count": r.randint(0, 10)} for t in (t1, t2)]
        c = "same template, one slot differs" if values else "different attributes"
        if comment:
            c += "; " + comment
        self._add(iid, "complementary", notes, slot=slot, values=values,
                  comment=c)
