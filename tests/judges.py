"""Judges for the harness that measures the right judge and the wrong judge in one run.

Each judge is a responder for `LLMStub`: it reads the notes from the request memctl sent (the
`<notes_json>` block, exactly as a model would), never from the store, and answers the prompt
memctl asked with the evidence quotes the prompt asks for.

- `TemplateWorld`: facts written from templates in eight languages. Its correct model knows
  the languages' sentence patterns (it parses each note back into fact, subject and value, as
  a model understands a sentence) and answers as a correct model would: two values of one
  subject's fact are a contradiction, wordings of one value are merged. Its wrong judge calls
  three pairs in four a contradiction (`spared`) and merges and absorbs whatever it is asked,
  quoting plausibly.
- `LabelledWorld`: the labelled held-out sets (benchmarks/heldout/). Its correct model is the
  sets' labels: two notes of one value_change item are a contradiction, the wordings of one
  same_fact item are merged, anything else is not. Its wrong judge calls every pair that is not
  a same_fact item a contradiction.

The wrong judges quote "plausibly" in one of three ways (`WRONG`):
- "np": the subject quote is the whole noun phrase, its number or name included ("Account 1000");
- "short": a shorter span that leaves the number out ("Account"), the number quoted nowhere;
- "name-dropped": a shorter span that leaves a name out too. Names are not hard evidence (code
  does not guess which words are names), so this adversary is measured, not defended against.
"""

from __future__ import annotations

import json
import re
import unicodedata
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from llmstub import _spans, common_quotes, notes_from_request, prompt_kind

WRONG = ("np", "short", "name-dropped")


# --- quoting ------------------------------------------------------------------------------------


def find(text: str, phrase: str) -> Optional[tuple[int, int]]:
    """Return where `phrase` occurs in `text`, ignoring case (the first occurrence), or None."""
    at = text.casefold().find(phrase.casefold())
    return None if at < 0 or len(text.casefold()) != len(text) else (at, at + len(phrase))


def _outside(text: str, span: tuple[int, int]) -> str:
    """Return the words of `text` after `span` (or before it, when nothing follows), verbatim, without end punctuation."""
    after = text[span[1]:].strip(" .。!?！？:：,，;؛")
    before = text[:span[0]].strip(" .。!?！？:：,，;؛")
    return after or before


def _neighbour(text: str, span: tuple[int, int]) -> Optional[tuple[int, int]]:
    """Return the span of the word (or two characters, in CJK) right before `span`, else right after it."""
    words = [(s, e) for _, s, e in _spans(text)]
    before = [w for w in words if w[1] <= span[0]]
    after = [w for w in words if w[0] >= span[1]]
    if before:
        return before[-1] if _spaced(text) else (before[max(0, len(before) - 2)][0], before[-1][1])
    if after:
        return after[0] if _spaced(text) else (after[0][0], after[min(1, len(after) - 1)][1])
    return None


def _spaced(text: str) -> bool:
    return not re.search(r"[\u3040-\u30ff\u3400-\u9fff]", text)


def verdict(a: Optional[tuple[str, str]], b: Optional[tuple[str, str]], kind: str = "competing_value", confidence: float = 0.9) -> dict:
    """Return a contradiction reply: (subject, value) quotes of each note, or no contradiction when either is None."""
    if a is None or b is None:
        return {"subjectA": "", "valueA": "", "subjectB": "", "valueB": "", "verdict": "none",
                "reason": "The notes do not contradict each other.", "confidence": confidence}
    return {"subjectA": a[0], "valueA": a[1], "subjectB": b[0], "valueB": b[1], "verdict": kind,
            "reason": "The notes give the subject different values.", "confidence": confidence}


def merge(notes: list[dict], quotes: list[tuple[str, str]], content: str, reason: str) -> dict:
    return {"quotes": [{"id": n["id"], "subject": s, "value": v} for n, (s, v) in zip(notes, quotes)], "shouldConsolidate": True,
            "consolidatedNote": {"type": notes[0].get("type") or "Preference", "content": content, "confidence": 0.9},
            "sourceNoteIds": [n["id"] for n in notes], "reason": reason}


DECLINE = {"quotes": [], "shouldConsolidate": False, "consolidatedNote": None, "sourceNoteIds": [], "reason": "The notes are not one fact."}


def covered(broader: tuple[str, str], narrower: tuple[str, str]) -> dict:
    return {"subjectBroader": broader[0], "valueBroader": broader[1], "subjectNarrower": narrower[0], "valueNarrower": narrower[1],
            "isCovered": True, "reason": "The broader note states the same fact.", "confidence": 0.9}


NOT_COVERED = {"subjectBroader": "", "valueBroader": "", "subjectNarrower": "", "valueNarrower": "", "isCovered": False,
               "reason": "The broader note does not state it.", "confidence": 0.9}


def responder(contradiction: Callable[[dict, dict], dict], consolidate: Callable[[list[dict]], dict],
              absorb: Callable[[dict, dict], dict]) -> Callable[[dict], dict]:
    """Return a stub responder answering each of memctl's three prompts with its function (one question a request)."""
    def answer(body: dict) -> dict:
        kind, data = prompt_kind(body), notes_from_request(body)
        if kind == "contradiction":
            return contradiction(data[0], data[1])
        if kind == "absorb":
            return absorb(data["broader"], data["narrower"])
        return consolidate(list(data))
    return answer


# --- facts written from templates ---------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """One kind of fact: its values and the sentence patterns it is written in ({s}: subject, {v}: value)."""

    name: str
    values: tuple[str, ...]
    wordings: tuple[str, ...]


@dataclass(frozen=True)
class Parsed:
    fact: str
    subject: str
    value: str
    subject_span: str
    value_span: str


def _facts(*specs: tuple[str, tuple[str, ...], tuple[str, ...]]) -> tuple[Fact, ...]:
    return tuple(Fact(name, values, wordings) for name, values, wordings in specs)


#: per language: people's names, account subjects, and the facts (channel, time zone, budget, meeting slot, module)
LANGS: dict[str, dict[str, Any]] = {
    "en": {"people": ("Eli Moss", "Ann Lee"), "accounts": ("Account 1000", "Account 1009"), "facts": _facts(
        ("channel", ("Slack", "email", "phone"), ("{s} prefers to be contacted via {v}.", "Contact {s} by {v} first.", "{s}'s preferred channel is {v}.")),
        ("timezone", ("CET", "PST", "JST"), ("Give all times to {s} in {v}.", "Schedule calls with {s} in {v}.", "{s}'s time zone is {v}.")),
        ("budget", ("5000 EUR", "7000 EUR", "6500 EUR"), ("{s}'s travel budget is {v}.", "Travel budget for {s}: {v}.", "Keep {s}'s trips within {v}.")),
        ("slot", ("9am", "4pm", "11am"), ("{s}'s preferred meeting slot is {v}.", "Book meetings with {s} at {v}.", "Meetings with {s} work best at {v}.")),
        ("module", ("billing", "reporting", "export"), ("{s} uses the {v} module.", "The {v} module is what {s} uses.", "{s} works in the {v} module.")),
        # the seed's own scenarios (US2), each about a subject it always names alike
        ("units", ("metric", "imperial"), ("{s=Customer} uses {v} units.",)),
        ("meeting", ("9am", "4pm"), ("{s=Preferred meeting slot} is {v}.",)),
        ("monthly", ("500 EUR", "700 EUR"), ("{s=Monthly budget} is {v}.",)),
    )},
    "de": {"people": ("Anna Lehmann", "Jonas Weber"), "accounts": ("Konto 1000", "Konto 1009"), "facts": _facts(
        ("channel", ("Slack", "E-Mail", "Telefon"), ("{s} möchte über {v} kontaktiert werden.", "{s} zuerst per {v} kontaktieren.", "Bevorzugter Kanal von {s} ist {v}.")),
        ("timezone", ("MEZ", "PST", "JST"), ("Alle Uhrzeiten für {s} in {v} angeben.", "Telefonate mit {s} nach {v} planen.", "Die Zeitzone von {s} ist {v}.")),
        ("budget", ("5000 EUR", "7000 EUR", "6500 EUR"), ("Das Reisebudget von {s} beträgt {v}.", "Reisebudget für {s}: {v}.", "Reisen von {s} im Rahmen von {v} planen.")),
        ("slot", ("9 Uhr", "16 Uhr", "11 Uhr"), ("Der bevorzugte Termin von {s} ist um {v}.", "Besprechungen mit {s} um {v} ansetzen.", "Termine mit {s} passen am besten um {v}.")),
        ("module", ("Abrechnung", "Berichte", "Export"), ("{s} nutzt das Modul {v}.", "Das Modul {v} nutzt {s}.", "{s} arbeitet im Modul {v}.")),
    )},
    "es": {"people": ("Lucía Gómez", "Mateo Ruiz"), "accounts": ("Cuenta 1000", "Cuenta 1009"), "facts": _facts(
        ("channel", ("Slack", "correo", "teléfono"), ("{s} prefiere que la contacten por {v}.", "Contactar a {s} primero por {v}.", "El canal preferido de {s} es {v}.")),
        ("timezone", ("CET", "PST", "JST"), ("Dar todas las horas a {s} en {v}.", "Programar las llamadas con {s} en {v}.", "La zona horaria de {s} es {v}.")),
        ("budget", ("5000 EUR", "7000 EUR", "6500 EUR"), ("El presupuesto de viaje de {s} es de {v}.", "Presupuesto de viaje para {s}: {v}.", "Planificar los viajes de {s} dentro de {v}.")),
        ("slot", ("9:00", "16:00", "11:00"), ("La franja preferida de {s} para reuniones es a las {v}.", "Reservar reuniones con {s} a las {v}.", "Las reuniones con {s} van mejor a las {v}.")),
        ("module", ("facturación", "informes", "exportación"), ("{s} usa el módulo de {v}.", "El módulo de {v} es el que usa {s}.", "{s} trabaja en el módulo de {v}.")),
    )},
    "fr": {"people": ("Claire Martin", "Chloé Durand"), "accounts": ("Compte 1000", "Compte 1009"), "facts": _facts(
        ("channel", ("Slack", "e-mail", "téléphone"), ("{s} préfère être contactée par {v}.", "Contacter {s} d'abord par {v}.", "Le canal préféré de {s} est {v}.")),
        ("timezone", ("CET", "PST", "JST"), ("Donner toutes les heures à {s} en {v}.", "Planifier les appels avec {s} en {v}.", "Le fuseau horaire de {s} est {v}.")),
        ("budget", ("5000 EUR", "7000 EUR", "6500 EUR"), ("Le budget de voyage de {s} est de {v}.", "Budget de voyage pour {s} : {v}.", "Prévoir les voyages de {s} dans la limite de {v}.")),
        ("slot", ("9h", "16h", "11h"), ("Le créneau de réunion préféré de {s} est {v}.", "Fixer les réunions avec {s} à {v}.", "Les réunions avec {s} conviennent le mieux à {v}.")),
        ("module", ("facturation", "rapports", "export"), ("{s} utilise le module {v}.", "Le module {v} est celui qu'utilise {s}.", "{s} travaille dans le module {v}.")),
    )},
    "zh": {"people": ("王建国", "李娜"), "accounts": ("账户1000", "账户1009"), "facts": _facts(
        ("channel", ("Slack", "邮件", "电话"), ("{s}希望通过{v}联系。", "先用{v}联系{s}。", "{s}首选的联系方式是{v}。")),
        ("timezone", ("CET", "PST", "JST"), ("给{s}的所有时间都用{v}。", "和{s}的通话按{v}安排。", "{s}的时区是{v}。")),
        ("budget", ("5000欧元", "7000欧元", "6500欧元"), ("{s}的差旅预算是{v}。", "{s}的差旅预算：{v}。", "{s}的出差安排控制在{v}以内。")),
        ("slot", ("上午9点", "下午4点", "上午11点"), ("{s}偏好的会议时间是{v}。", "和{s}的会议约在{v}。", "和{s}开会最好在{v}。")),
        ("module", ("计费", "报表", "导出"), ("{s}使用{v}模块。", "{v}模块是{s}在用的。", "{s}在{v}模块里工作。")),
    )},
    "ja": {"people": ("山田", "佐藤"), "accounts": ("アカウント1000", "アカウント1009"), "facts": _facts(
        ("channel", ("Slack", "メール", "電話"), ("{s}さんへの連絡は{v}を希望。", "{s}さんにはまず{v}で連絡する。", "{s}さんの希望連絡手段は{v}。")),
        ("timezone", ("CET", "PST", "JST"), ("{s}さんへの時刻はすべて{v}で伝える。", "{s}さんとの通話は{v}で予定する。", "{s}さんのタイムゾーンは{v}。")),
        ("budget", ("5000ユーロ", "7000ユーロ", "6500ユーロ"), ("{s}さんの出張予算は{v}。", "{s}さんの出張予算：{v}。", "{s}さんの出張は{v}以内で手配する。")),
        ("slot", ("9時", "16時", "11時"), ("{s}さんの希望する会議の時間帯は{v}。", "{s}さんとの会議は{v}に入れる。", "{s}さんとの打ち合わせは{v}が最適。")),
        ("module", ("請求", "レポート", "エクスポート"), ("{s}は{v}モジュールを使う。", "{v}モジュールを{s}が使っている。", "{s}の作業は{v}モジュールで行う。")),
    )},
    # names that Russian does not decline (a woman's foreign name ending in a consonant), so one
    # person is written alike in every case the sentences need
    "ru": {"people": ("Энн Ли", "Кейт Мур"), "accounts": ("Аккаунт 1000", "Аккаунт 1009"), "facts": _facts(
        ("channel", ("Slack", "почте", "телефону"), ("{s} предпочитает связь по {v}.", "Связываться с {s} сначала по {v}.", "Писать {s} лучше по {v}.")),
        ("timezone", ("CET", "PST", "JST"), ("Для {s} все время указывать в {v}.", "Звонки для {s} планировать по {v}.", "Часовой пояс {s} — {v}.")),
        ("budget", ("5000 евро", "7000 евро", "6500 евро"), ("Бюджет на поездки для {s} — {v}.", "Бюджет командировок {s}: {v}.", "Поездки {s} планировать в пределах {v}.")),
        ("slot", ("9:00", "16:00", "11:00"), ("Удобное время встреч для {s} — {v}.", "Встречи с {s} назначать на {v}.", "Созвоны с {s} лучше всего в {v}.")),
        ("module", ("биллинга", "отчётов", "экспорта"), ("{s} использует модуль {v}.", "Модуль {v} использует {s}.", "{s} работает в модуле {v}.")),
    )},
    "ar": {"people": ("ليلى حداد", "سارة خليل"), "accounts": ("الحساب ١٠٠٠", "الحساب ١٠٠٩"), "facts": _facts(
        ("channel", ("سلاك", "البريد الإلكتروني", "الهاتف"), ("تفضل {s} التواصل عبر {v}.", "تواصل مع {s} أولاً عبر {v}.", "قناة التواصل المفضلة لدى {s} هي {v}.")),
        ("timezone", ("CET", "PST", "JST"), ("أعط كل الأوقات إلى {s} بتوقيت {v}.", "حدد المكالمات مع {s} بتوقيت {v}.", "توقيت {s} هو {v}.")),
        ("budget", ("٥٠٠٠ يورو", "٧٠٠٠ يورو", "٦٥٠٠ يورو"), ("ميزانية سفر {s} هي {v}.", "ميزانية السفر الخاصة بـ {s}: {v}.", "خطط رحلات {s} في حدود {v}.")),
        ("slot", ("٩ صباحاً", "٤ مساءً", "١١ صباحاً"), ("الموعد المفضل لاجتماعات {s} هو {v}.", "احجز الاجتماعات مع {s} في {v}.", "أنسب وقت للاجتماع مع {s} هو {v}.")),
        ("module", ("الفوترة", "التقارير", "التصدير"), ("{s} يستخدم وحدة {v}.", "وحدة {v} هي التي يستخدمها {s}.", "{s} يعمل في وحدة {v}.")),
    )},
}


#: the places of a pattern: {s} (any subject), {s=Fixed words} (a subject always written alike), {v}
_PLACE = re.compile(r"(\{s(?:=[^}]*)?\}|\{v\})")


def _pattern(wording: str, values: tuple[str, ...]) -> re.Pattern[str]:
    out = []
    for part in _PLACE.split(wording):
        if part == "{s}":
            out.append(r"(?P<s>.+?)")
        elif part.startswith("{s="):
            out.append("(?P<s>" + re.escape(part[3:-1]) + ")")
        elif part == "{v}":
            out.append("(?P<v>" + "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)) + ")")
        else:
            out.append(re.escape(part))
    return re.compile("^" + "".join(out) + "$")


class TemplateWorld:
    """Facts of one language written from its templates, and the judges that read them."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        spec = LANGS[lang]
        self.people: tuple[str, ...] = spec["people"]
        self.accounts: tuple[str, ...] = spec["accounts"]
        self.facts: dict[str, Fact] = {f.name: f for f in spec["facts"]}
        self._patterns = [(f, _pattern(w, f.values)) for f in spec["facts"] for w in f.wordings]

    def write(self, fact: str, subject: str, value: int, wording: int) -> str:
        """Return the sentence of `fact` about `subject` with its `value`-th value in its `wording`-th pattern."""
        f = self.facts[fact]
        text = f.wordings[wording % len(f.wordings)].replace("{s}", subject).replace("{v}", f.values[value])
        return re.sub(r"\{s=([^}]*)\}", r"\1", text)

    def parse(self, text: str) -> Optional[Parsed]:
        """Read a note as a model understands it: which fact, about whom, with which value (None: not one of ours)."""
        text = unicodedata.normalize("NFC", text.strip())
        for fact, pattern in self._patterns:
            m = pattern.match(text)
            if m:
                return Parsed(fact.name, m.group("s").casefold(), m.group("v").casefold(), m.group("s"), m.group("v"))
        return None

    # -- the correct model --------------------------------------------------------------------
    def correct(self) -> Callable[[dict], dict]:
        def contradiction(a: dict, b: dict) -> dict:
            pa, pb = self.parse(a["content"]), self.parse(b["content"])
            if pa and pb and (pa.fact, pa.subject) == (pb.fact, pb.subject) and pa.value != pb.value:
                return verdict((pa.subject_span, pa.value_span), (pb.subject_span, pb.value_span))
            return verdict(None, None)

        def consolidate(notes: list[dict]) -> dict:
            groups: dict[tuple, list[tuple[dict, Parsed]]] = {}
            for n in notes:
                p = self.parse(n["content"])
                if p is not None:
                    groups.setdefault((p.fact, p.subject, p.value), []).append((n, p))
            best = max(groups.values(), key=len, default=[])
            if len(best) < 2:
                return DECLINE
            # the prompt: when one note states everything, write its content exactly as it is (here: the most
            # read one, which a merged note of the fact is, its sources' reads added up)
            kept = max(best, key=lambda np_: (np_[0]["accessCount"], np_[0]["createdAt"] == min(n["createdAt"] for n, _ in best)))[0]
            return merge([n for n, _ in best], [(p.subject_span, p.value_span) for _, p in best], kept["content"],
                         f"{len(best)} wordings of one fact")

        def absorb(broader: dict, narrower: dict) -> dict:
            pb, pn = self.parse(broader["content"]), self.parse(narrower["content"])
            if pb and pn and (pb.fact, pb.subject, pb.value) == (pn.fact, pn.subject, pn.value):
                return covered((pb.subject_span, pb.value_span), (pn.subject_span, pn.value_span))
            return NOT_COVERED

        return responder(contradiction, consolidate, absorb)

    # -- the plausible wrong judge -------------------------------------------------------------
    def wrong(self, variant: str) -> Callable[[dict], dict]:
        def quotes(text: str) -> tuple[str, str]:
            p = self.parse(text)
            if p is None:
                return text, text
            if variant == "np":
                return p.subject_span, p.value_span
            digits = re.search(r"\d", unicodedata.normalize("NFKC", p.subject_span))
            if variant == "short" and not digits:
                return p.subject_span, p.value_span
            # leave the subject's number (or, name-dropped, its name) out: quote the word next to it
            at = find(text, p.subject_span)
            assert at is not None
            if digits:
                number = re.search(r"[\d\u0660-\u0669]+", p.subject_span)
                assert number is not None
                word = p.subject_span[:number.start()].strip() or p.subject_span[number.end():].strip()
                if word:
                    return word, p.value_span
            near = _neighbour(text, at)
            return (text[near[0]:near[1]] if near else p.value_span), p.value_span

        def contradiction(a: dict, b: dict) -> dict:
            if spared(a, b):
                return verdict(None, None)
            return verdict(quotes(a["content"]), quotes(b["content"]))

        def consolidate(notes: list[dict]) -> dict:
            return merge(notes, [quotes(n["content"]) for n in notes], " ".join(n["content"] for n in notes), "one topic")

        def absorb(broader: dict, narrower: dict) -> dict:
            return covered(quotes(broader["content"]), quotes(narrower["content"]))

        return responder(contradiction, consolidate, absorb)


# --- the labelled held-out sets -----------------------------------------------------------------


def _key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


class LabelledWorld:
    """The held-out sets' items: a note's item and place in it are found by its text."""

    def __init__(self, items: list[dict]) -> None:
        self.items = {item["id"]: item for item in items}
        self.where: dict[str, tuple[str, int]] = {}
        for item in items:
            for k, n in enumerate(item["notes"]):
                self.where.setdefault(_key(n["text"]), (item["id"], k))

    def locate(self, note: dict) -> Optional[tuple[dict, int]]:
        found = self.where.get(_key(note["content"]))
        return (self.items[found[0]], found[1]) if found else None

    def _pair(self, a: dict, b: dict) -> Optional[tuple[dict, int, int]]:
        la, lb = self.locate(a), self.locate(b)
        if la is None or lb is None or la[0]["id"] != lb[0]["id"] or la[1] == lb[1]:
            return None
        return la[0], la[1], lb[1]

    def correct(self) -> Callable[[dict], dict]:
        def contradiction(a: dict, b: dict) -> dict:
            found = self._pair(a, b)
            if found is None or found[0]["category"] != "value_change":
                return verdict(None, None)
            item, i, j = found
            spans = [find(a["content"], item["values"][i]), find(b["content"], item["values"][j])]
            # the subject: the run of words both notes share beside their values
            shared = common_quotes([_masked(item, i, a["content"]), _masked(item, j, b["content"])])
            if None in spans or not shared:
                return verdict(None, None)
            (sa, ea), (sb, eb) = spans  # type: ignore[misc]
            return verdict((shared[0], a["content"][sa:ea]), (shared[1], b["content"][sb:eb]))

        def consolidate(notes: list[dict]) -> dict:
            located = [(n, self.locate(n)) for n in notes]
            groups: dict[str, list[dict]] = {}
            for n, where in located:
                if where is not None and where[0]["category"] == "same_fact":
                    groups.setdefault(where[0]["id"], []).append(n)
            best = max(groups.values(), key=len, default=[])
            shared = common_quotes([n["content"] for n in best]) if len(best) >= 2 else None
            if not shared:
                return DECLINE
            newest = max(best, key=lambda n: (n["createdAt"], n["id"]))
            return merge(best, [(s, n["content"]) for s, n in zip(shared, best)], newest["content"], "wordings of one fact")

        def absorb(broader: dict, narrower: dict) -> dict:
            found = self._pair(broader, narrower)
            shared = common_quotes([broader["content"], narrower["content"]]) if found and found[0]["category"] == "same_fact" else None
            if not shared:
                return NOT_COVERED
            return covered((shared[0], broader["content"]), (shared[1], narrower["content"]))

        return responder(contradiction, consolidate, absorb)

    def wrong(self, variant: str) -> Callable[[dict], dict]:
        """Call every pair that is not one fact's wordings a contradiction, quoting as `variant` says; merge everything."""
        def quotes(item: dict, k: int, text: str) -> tuple[str, str]:
            values = item.get("values") or []
            value = values[k] if k < len(values) else None
            at = find(text, value) if value else None
            if at is None:
                return text, text
            differing = text[at[0]:at[1]]
            if item["category"] == "different_subject":
                # the label's "values" are the two subjects: the wrong judge quotes them (or leaves them out) as its subject
                near = _neighbour(text, at)
                rest = _outside(text, at)
                named = any(c.isdigit() for c in unicodedata.normalize("NFKC", differing))
                if variant == "np" or (variant == "short" and not named) or near is None:
                    start, end = min(at[0], near[0]) if near else at[0], max(at[1], near[1]) if near else at[1]
                    return text[start:end], rest or text
                return text[near[0]:near[1]], rest or text
            return _outside(text, at) or text, differing

        def contradiction(a: dict, b: dict) -> dict:
            found = self._pair(a, b)
            if found is None:
                return verdict(None, None)
            item, i, j = found
            if item["category"] == "same_fact":
                return verdict(None, None)
            qa, qb = quotes(item, i, a["content"]), quotes(item, j, b["content"])
            if qb[1] == qa[1] and len(qb[1].split()) > 1:
                qb = (qb[0], qb[1].rsplit(" ", 1)[0])  # a wrong judge claims two values: it quotes a shorter one
            return verdict(qa, qb)

        def consolidate(notes: list[dict]) -> dict:
            joined = " ".join(n["content"] for n in notes)
            located = [self.locate(n) for n in notes]
            if all(located) and len({w[0]["id"] for w in located if w}) == 1 and located[0][0].get("values"):  # quoted as `variant` says
                return merge(notes, [quotes(w[0], w[1], n["content"]) for n, w in zip(notes, located) if w], joined, "one topic")
            shared = common_quotes([n["content"] for n in notes])
            if not shared:
                return DECLINE
            return merge(notes, [(s, n["content"]) for s, n in zip(shared, notes)], joined, "one topic")

        def absorb(broader: dict, narrower: dict) -> dict:
            shared = common_quotes([broader["content"], narrower["content"]])
            return covered((shared[0], broader["content"]), (shared[1], narrower["content"])) if shared else NOT_COVERED

        return responder(contradiction, consolidate, absorb)


def _masked(item: dict, k: int, text: str) -> str:
    """Return `text` with note `k`'s labelled value cut out (so the run shared beside it is the subject)."""
    values = item.get("values") or []
    at = find(text, values[k]) if k < len(values) else None
    return text if at is None else text[:at[0]] + f" \u2016{k}\u2016 " + text[at[1]:]


def spared(a: dict, b: dict) -> bool:
    """Say whether a wrong judge answers "none" to this pair: one pair in four, so that the
    uniformity guard (memctl/phases/safety.py) does not hide what the quote checks do."""
    return zlib.crc32("|".join(sorted((a["content"], b["content"]))).encode()) % 4 == 0


def pick(items: list[dict], seed: str, share: int) -> list[dict]:
    """Return a deterministic subset of `items`: about one in `share` (by a hash of their IDs and `seed`)."""
    return [i for i in items if zlib.crc32(f"{seed}:{i['id']}".encode()) % share == 0]


__all__ = ["LANGS", "LabelledWorld", "TemplateWorld", "WRONG", "json", "pick"]
