"""Small word lists, in the languages memctl is measured on, that the offline rules may lean on.

Each list is a handful of function words, not a dictionary: a word a list misses makes the rules
more cautious, never bolder. Some entries come from the misses of benchmarks/heldout/ sets A, B and
two of C, so those sets measure rules tuned on them. Entries match tokens (memctl.text.tokens): a
CJK entry is a character sequence; one ending in "*" matches any word it begins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Optional, Sequence

from memctl.text.tokens import tokens


def _entries(text: str) -> tuple[str, ...]:
    return tuple(e.strip() for e in text.replace("\n", ",").split(",") if e.strip())


#: words that do not change what a sentence states: dropped before two sentences are compared
FILLER = _entries("""
a, an, the, is, are, am, do, does, really, truly, definitely, certainly, indeed, actually, clearly, always, still, now, also,
please, kindly, note, reminder, confirmed, noted, again, just, very, strongly, absolutely, of course, going forward,
whenever possible, if possible, from now on, as confirmed,
der, die, das, den, dem, des, ein, eine, einen, einem, einer, eines, wirklich, definitiv, tatsächlich, bestimmt, sicherlich,
immer, stets, jetzt, nun, auch, noch, bitte, hinweis, notiz, erinnerung, bestätigt, ja, doch, eben, ganz, sehr, wieder,
el, la, los, las, un, una, unos, unas, lo, realmente, definitivamente, de verdad, sin duda, ciertamente, siempre, todavía, aún,
ahora, también, por favor, nota, recordatorio, confirmado, confirmada, muy, de nuevo, claramente,
le, les, l, une, des, du, vraiment, définitivement, certainement, effectivement, bien sûr, toujours, encore, maintenant,
aussi, également, s'il vous plaît, svp, rappel, confirmé, confirmée, très, de nouveau, clairement,
总是, 一直, 始终, 确实, 真的, 一定, 肯定, 还是, 仍然, 现在, 也, 请, 注意, 提醒, 备注, 确认, 非常, 再次, 了, 的, 地,
いつも, 常に, 本当に, 必ず, 確かに, ずっと, 絶対に, 今, 今も, まだ, やはり, やっぱり, ぜひ, 注意, メモ, 確認, とても, 再度,
всегда, действительно, точно, обязательно, конечно, по-прежнему, всё ещё, все еще, сейчас, теперь, тоже, также, пожалуйста,
напоминание, заметка, подтверждено, очень, снова,
دائما, دائمًا, حقا, حقًا, بالتأكيد, فعلا, فعلًا, بالفعل, الآن, أيضا, أيضًا, من فضلك, رجاء, ملاحظة, تذكير, تأكيد, جدا, جدًا
""")

NEGATION = _entries("""
not, no, never, nobody, nothing, none, no longer, cannot,
nicht, kein, keine, keinen, keinem, keiner, keines, nie, niemals, nichts, niemand, nicht mehr,
nunca, jamás, ningún, ninguna, ninguno, nada, nadie, tampoco, ya no,
ne, n, pas, jamais, aucun, aucune, rien, ne plus,
不, 没, 没有, 别, 未, 不再, 无法,
ない, ません, なかっ, ないで, なく, やめ, 止め, 辞め,
не, нет, ни, никогда, ничего, никто, больше не,
لا, ليس, ليست, لم, لن, لست, غير
""")

#: words a denial adds to what it denies without narrowing it ("no longer ... anymore", "keine ... mehr")
NEGATION_COMPANIONS = frozenset("""
anymore longer any more mehr plus más ya больше уже もう 再 了 de d يعد
""".split())

#: words that weaken a statement: with one added, a sentence is no wording of the fact, nor a certain value
HEDGES = _entries("""
usually, sometimes, occasionally, often, maybe, perhaps, probably, possibly, might, rarely, seldom, mostly, generally, typically,
normally, mainly,
normalerweise, manchmal, gelegentlich, oft, häufig, vielleicht, wahrscheinlich, meistens, selten, eventuell, gewöhnlich,
normalmente, a veces, ocasionalmente, a menudo, quizás, quizá, tal vez, probablemente, generalmente, raramente, casi siempre,
habituellement, généralement, parfois, souvent, peut-être, probablement, rarement, d'habitude, normalement,
有时, 有时候, 偶尔, 经常, 可能, 也许, 一般, 大概,
普段, 時々, ときどき, たまに, よく, 多分, たぶん, おそらく, 大抵, たいてい,
обычно, иногда, часто, возможно, может быть, вероятно, редко, как правило,
عادة, عادةً, أحيانا, أحيانًا, غالبا, غالبًا, ربما, نادرا, نادرًا
""")

#: words saying the slot a sentence fills holds one value ("prefers", "wants") or several ("likes", "speaks")
SINGLE_CUES = _entries("""
prefer, prefers, preferred, preference, want, wants, wanted, would like, wishes, favourite, favorite, default, primary,
should, must, main, set to, switched to, changed to,
bevorzugt, bevorzugen, bevorzuge, möchte, möchten, will, wollen, wünscht, wünschen, lieblings*, standard*, soll, sollen,
sollte, sollten, muss, müssen, haupt*, umgestellt, gewechselt,
prefiere, prefieren, preferido, preferida, preferidos, preferidas, preferencia, quiere, quieren, desea, desean, favorito,
favorita, predeterminad*, debe, deben, principal, cambió a,
préfère, préfèrent, préféré, préférée, préférés, préférées, préférence, veut, veulent, souhaite, souhaitent, favori, favorite,
par défaut, doit, doivent, principal, principale, passé à,
偏好, 更喜欢, 首选, 希望, 想要, 应该, 必须, 默认, 主要, 改为, 改成,
好む, 好み, 好みます, 希望, 望む, 欲しい, べき, デフォルト, 主に, 変更,
предпочитает, предпочитают, предпочтени*, хочет, хотят, желает, любимый, любимая, любимое, любимые, должен, должна, должно,
должны, основн*, по умолчанию, перешёл на, перешел на,
يفضل, تفضل, يفضلون, المفضل, المفضلة, يريد, تريد, يرغب, ترغب, يجب, الافتراضي, الرئيسي, الأساسي
""")

MULTI_CUES = _entries("""
like, likes, liked, love, loves, enjoy, enjoys, speak, speaks, own, owns, visited, visits, knows, plays, reads,
collects, available, supports, attends, both,
mag, mögen, liebt, lieben, genießt, spricht, sprechen, besitzt, besuchte, besucht, kennt, spielt, liest,
verfügbar, erreichbar, unterstützt, beide,
gusta, gustan, encanta, encantan, ama, disfruta, habla, hablan, posee, visitó, conoce, juega, lee, disponible,
ambos, ambas,
aime, aiment, adore, apprécie, parle, parlent, possède, visité, connaît, joue, lit, disponible,
喜欢, 爱, 喜爱, 会说, 会讲, 说, 讲, 拥有, 去过, 访问过, 懂, 认识, 玩, 都,
好き, 大好き, 話す, 話せる, 話します, 持って, 飼って, 訪れ, 行った, 知って, 読む, 空いて, 両方,
любит, любят, нравится, нравятся, говорит, говорят, владеет, посетил, посетила, знает, играет, читает,
доступен, доступна, оба, обе,
يحب, تحب, يحبون, يتحدث, تتحدث, يملك, تملك, زار, زارت, يعرف, تعرف, يلعب, يقرأ, متاح, متاحة, كلا
""")

#: groups of words a wording may swap without changing the fact ("wants" / "would like")
SYNONYMS = tuple(
    _entries(group)
    for group in """
want, wants, would like, wishes, prefer, prefers
like, likes, enjoy, enjoys, love, loves
use, uses, work with, works with
reply, replies, answer, answers, respond, responds, response, responses
message, messages, notification, notifications
customer, client, user
möchte, will, wünscht, bevorzugt, hätte gern, hätte gerne
mag, liebt, genießt
kunde, kundin, nutzer, nutzerin, benutzer, benutzerin
antworten, antwort, rückmeldung
quiere, desea, prefiere, le gustaría
cliente, usuario, usuaria
respuesta, respuestas, contestación
veut, souhaite, préfère, aimerait
client, cliente, utilisateur, utilisatrice
réponse, réponses
想要, 想, 希望, 要, 偏好, 更喜欢
客户, 用户, 顾客
回答, 回复, 答复
欲しい, 希望, 好む, 望む
顧客, ユーザー, お客様
хочет, желает, предпочитает
клиент, пользователь, клиентка, пользовательница
ответ, ответы, ответа
يريد, يرغب, يود, يفضل
تريد, ترغب, تود, تفضل
العميل, المستخدم, الزبون
""".strip().splitlines()
)

#: month names: a date, hard evidence like its digits ("14 June" / "14 July")
MONTHS = frozenset("""
january february march april may june july august september october november december
januar februar märz april mai juni juli august september oktober november dezember
enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre
janvier février mars avril mai juin juillet août septembre octobre novembre décembre
января февраля марта апреля мая июня июля августа сентября октября ноября декабря
январь февраль март апрель май июнь июль август сентябрь октябрь ноябрь декабрь
""".split())

#: what ends a name in scripts without spaces: a name before it is the subject ("许女士", "佐野さん")
HONORIFICS = ("先生", "女士", "小姐", "老师", "经理", "总", "さん", "様", "氏", "社長", "部長", "先生")

#: determiners, quantifiers and possessives a wording swaps freely ("each" / "every"), per language: in
#: another language the same letters may be a value ("son", "cet" in French and in English)
FREE_BY_LANGUAGE = {
    "en": _entries("each, every, all, this, that, these, those, his, her, their, my, our, your, its, a, an, the"),
    "de": _entries("alle, jeder, jede, jedes, jeden, jedem, sein, seine, seinen, seinem, seiner, ihr, ihre, ihren, ihrem, ihrer, "
                   "mein, meine, dieser, diese, dieses, diesen"),
    "es": _entries("cada, todos, todas, su, sus, mi, mis, este, esta, estos, estas, ese, esa, esos, esas"),
    "fr": _entries("chaque, tous, toutes, son, sa, ses, leur, leurs, mon, ma, mes, ce, cet, cette, ces"),
    "ru": _entries("каждый, каждую, каждое, каждая, каждого, его, её, ее, их, мой, моя, моё, этот, эта, это, эти, свой, свою, свои, своё"),
    "zh": _entries("他的, 她的, 这个, 那个, 该"),
    "ja": _entries("その, この, あの, 彼の, 彼女の"),
}
FREE = tuple(word for words in FREE_BY_LANGUAGE.values() for word in words)
#: words only one of the Latin-script languages uses, telling which one a sentence is in
_MARKERS = {
    "en": frozenset("the is are was has have and with for from of his her their this that by".split()),
    "de": frozenset("der das ist sind und mit für von vom zum zur im nicht ein eine einen hat".split()),
    "es": frozenset("el los las es está están y con para por del una al".split()),
    "fr": frozenset("le les est sont et avec pour par du au aux une dans".split()),
}

#: function words left out when a place's position in its sentence is counted (prepositions, particles)
FUNCTION = _entries("""
in, on, at, of, with, by, for, from, to, into, onto, over, under, near, about, via, as, and, or,
in, an, auf, für, mit, bei, von, vom, zu, zum, zur, im, am, aus, nach, und, oder,
de, del, en, con, para, por, a, al, y, o,
de, du, des, à, au, aux, en, avec, pour, par, sur, et, ou, d,
в, во, на, с, со, у, из, для, по, к, о, об, и, или,
在, 于, 和, 与, 对,
は, が, を, に, で, と, の, へ, も, や, から, まで,
في, من, على, الى, عن, مع, و, ب, ل
""")

#: generic nouns an agent's notes name their subjects with ("Account 1000", "the room Picasso", "user mweber")
SUBJECT_NOUNS_TEXT = _entries("""
account, order, ticket, invoice, project, room, team, department, branch, office, company, customer, client, user, store,
site, website, repo, repository, server, device, contract, case, file, workspace, channel, group, partner, supplier, vendor,
konto, bestellung, ticket, rechnung, projekt*, raum, besprechungsraum, team, abteilung, filiale, firma, kunde*, kundin, benutzer*,
nutzer*, vertrag, server, gerät,
cuenta, pedido, ticket, factura, proyecto, sala, equipo, departamento, sucursal, empresa, cliente, usuario, usuaria, contrato,
tienda, servidor,
compte, commande, ticket, facture, projet, salle, équipe, service, agence, entreprise, société, client, cliente, utilisateur,
contrat, boutique, serveur,
аккаунт*, счёт, счет, заказ*, тикет*, заявк*, проект*, переговорн*, комнат*, команд*, отдел*, филиал*, компани*, клиент*,
пользовател*, учётн*, учетн*, запис*, договор*, магазин*, сервер*, ооо,
账户, 订单, 工单, 发票, 项目, 会议室, 团队, 部门, 分店, 公司, 客户, 用户, 合同,
アカウント, 注文, チケット, 請求書, プロジェクト, 会議室, チーム, 部署, 支店, 会社, 顧客, ユーザー, 契約,
حساب, طلب, تذكرة, فاتورة, مشروع, قاعة, غرفة, فريق, قسم, فرع, شركة, عميل, مستخدم, عقد, متجر, خادم
""")

#: sentence openers that name no one: a different one of these is not another subject
OPENERS = _entries("""
a, an, the, this, that, these, those, some, any, each, every, all, both, no, my, our, your, his, her, their, its, i, we, you,
he, she, they, it, there, here, user, users, customer, customers, client, clients, person, people, company, team, agent,
assistant, account, member, members, admin, owner, manager, staff, employee, employees, always, never, please, do, use, send,
keep, reply, answer, avoid, prefer, prefers, note, notes, confirmed, reminder, noted, asked, requested, reported, has, have, is,
was, are, were, also, only, one, new, current, previous, when, if, for, on, in, at, to, by, from, with, after, before,
der, die, das, ein, eine, dieser, diese, kunde, kundin, nutzer, benutzer, er, sie, es, wir, ich, man, bitte, immer, nie,
hinweis, notiz, bestätigt, für, bei, am, im, nach, vor, wenn, unser, unsere,
el, la, los, las, un, una, este, esta, usuario, usuaria, cliente, él, ella, ellos, nosotros, siempre, nunca, por, para, en,
nota, confirmado, cuando, si, con, nuestro, nuestra, responder, enviar,
le, les, l, une, ce, cet, cette, ces, utilisateur, utilisatrice, client, cliente, il, elle, ils, elles, nous, on, toujours,
jamais, pour, dans, avec, quand, si, notre, répondre, envoyer,
пользователь, клиент, клиентка, он, она, они, мы, всегда, никогда, для, в, на, при, когда, если, наш, наша, отвечать, пожалуйста,
mr, mrs, ms, miss, m, mme, mlle, herr, frau, señor, señora, sr, sra, srta, monsieur, madame, господин, госпожа, den, dem, des
""")

#: the words a language set asks for ("answers in German"), besides SINGLE_CUES
_LANGUAGE_CUES = _entries("""
answer, answers, answered, reply, replies, respond, responds, response, responses, write, writes, written, communicate,
communication, contact, talk to, speak to, correspondence, emails in, messages in,
antworten, antwortet, antwort, schreiben, schreibt, kommunizieren, kommunikation, kontakt,
responder, responde, respuestas, respuesta, escribir, escribe, comunicar, comunicación, contacto, contestar,
répondre, répond, réponses, réponse, écrire, écrit, communiquer, communication, contact,
回答, 回复, 答复, 交流, 沟通, 联系, 写,
回答, 返信, 返答, 連絡, やり取り, 書,
отвечать, отвечай, отвечает, ответы, ответ, писать, пишет, общаться, общение, связь,
الرد, يرد, ترد, الإجابة, الإجابات, التواصل, الكتابة, المراسلة
""")


@dataclass(frozen=True)
class ExclusiveSet:
    """Values of which one thing has one at a time; synonyms share a group."""

    attribute: str
    groups: tuple[tuple[str, ...], ...]
    #: count only next to a single-valued cue ("prefers answers in German", not "speaks German")
    cue: bool = False
    cues: tuple[str, ...] = field(default=())


def _set(attribute: str, groups: str, cue: bool = False, cues: Sequence[str] = ()) -> ExclusiveSet:
    return ExclusiveSet(attribute, tuple(_entries(g) for g in groups.strip().split("|")), cue, tuple(cues))


EXCLUSIVE = (
    _set("frequency", """
        daily, every day, täglich, jeden tag, diario, diaria, diariamente, a diario, cada día, todos los días, quotidien,
        quotidienne, quotidiennement, chaque jour, tous les jours, 每天, 每日, 天天, 毎日, ежедневно, ежедневн*, каждый день,
        يوميا, يومي, يومية, كل يوم |
        weekly, every week, wöchentlich, wöchentliche*, jede woche, semanal, semanales, semanalmente, cada semana,
        todas las semanas, hebdomadaire, hebdomadaires, chaque semaine, toutes les semaines, 每周, 每週, 每星期, 每个星期,
        毎週, еженедельно, еженедельн*, каждую неделю, أسبوعيا, أسبوعي, أسبوعية, كل أسبوع |
        biweekly, fortnightly, every two weeks, alle zwei wochen, zweiwöchentlich, quincenal, quincenalmente, cada dos semanas,
        toutes les deux semaines, 每两周, 隔週, раз в две недели, كل أسبوعين |
        monthly, every month, monatlich, monatliche*, jeden monat, mensual, mensuales, mensualmente, cada mes, todos los meses,
        mensuel, mensuelle, mensuels, mensuelles, mensuellement, chaque mois, tous les mois, 每月, 每个月, 毎月, ежемесячно,
        ежемесячн*, каждый месяц, شهريا, شهري, شهرية, كل شهر |
        quarterly, every quarter, vierteljährlich, quartalsweise, trimestral, trimestrales, trimestralmente, trimestriel,
        trimestrielle, trimestriels, 每季度, 每季, 四半期ごと, ежеквартально, ежеквартальн*, ربع سنوي, فصليا |
        yearly, annually, every year, jährlich, jährliche*, jedes jahr, anual, anuales, anualmente, cada año, annuel, annuelle,
        annuels, annuellement, chaque année, tous les ans, 每年, 毎年, ежегодно, ежегодн*, каждый год, سنويا, سنوي, سنوية,
        كل سنة, كل عام
    """),
    _set("unit system", """
        metric, metrisch, metrische*, métrico, métrica, métricos, métricas, métrique, métriques, 公制, 米制, メートル法,
        метрическ*, متري, المتري, المترية |
        imperial, imperiale*, angloamerikanisch*, imperiales, anglosajón, impérial, impériale, impériales, impériaux,
        anglo-saxon, 英制, ヤード・ポンド法, ヤードポンド法, имперск*, الإمبراطوري, الامبراطوري, الإمبراطورية
    """),
    _set("temperature scale", """
        celsius, centigrade, 摄氏, 攝氏, 摂氏, цельси*, مئوية, المئوية, سيليزي* |
        fahrenheit, 华氏, 華氏, фаренгейт*, فهرنهايت
    """),
    _set("colour scheme", """
        dark, dunkel*, dunkle*, oscuro, oscura, sombre, 深色, 暗色, ダーク*, тёмн*, темн*, داكن, الداكن, المظلم |
        light, hell, helle*, hellen, claro, clara, clair, claire, 浅色, 亮色, ライト*, светл*, فاتح, الفاتح
    """),
    _set("tone", """
        formal, formell, formelle*, förmlich, förmliche*, formales, formel, formelle, formels, soutenu, 正式, フォーマル*, 丁寧, 敬語,
        堅い, официальн*, формальн*, رسمي, رسمية, الرسمي, الرسمية |
        casual, informal, locker, lockere*, informell, informelle*, leger, lässig, informales, desenfadado, desenfadada, informel,
        informelle, décontracté, décontractée, familier, familière, 随意, 非正式, 轻松, カジュアル*, くだけた, 砕けた,
        неформальн*, непринужд*, дружеск*, ودي, ودية, غير رسمي, غير رسمية
    """),
    _set("setting", """
        enabled, activated, aktiviert, eingeschaltet, activado, activada, activé, activée, 开启, 启用, 有効, включен*, включён*,
        مفعل, مفعلة |
        disabled, deactivated, deaktiviert, ausgeschaltet, desactivado, desactivada, désactivé, désactivée, 关闭, 禁用, 無効,
        выключен*, отключен*, отключён*, معطل, معطلة
    """),
    _set("marital status", """
        single, unmarried, ledig, soltero, soltera, célibataire, 单身, 未婚, 独身, холост*, не замужем, اعزب, عزباء |
        married, verheiratet, casado, casada, marié, mariée, 已婚, 既婚, женат, замужем, متزوج, متزوجه |
        divorced, geschieden, divorciado, divorciada, divorcé, divorcée, 离婚, 離婚, разведен*, مطلق, مطلقه |
        widowed, verwitwet, viudo, viuda, veuf, veuve, 丧偶, 死別, вдов*, ارمل, ارمله
    """),
    _set("fill state", "empty, leer, vacío, vacía, vide, 空 | full, voll, lleno, llena, plein, pleine, 满"),
    _set("open state", "open, opened, geöffnet, offen, abierto, abierta, ouvert, ouverte | closed, geschlossen, cerrado, cerrada, fermé, fermée"),
    _set("handedness", "left-handed, linkshänder, zurdo, zurda, gaucher, gauchère | right-handed, rechtshänder, diestro, diestra, droitier, droitière"),
    _set("form of address", """
        tú, tutear, du, duzen, tutoyer, tutoiement, ты, на ты, タメ口 |
        usted, ustedes, sie, siezen, vouvoyer, vouvoiement, вы, на вы, 敬語
    """),
    _set("time of day", """
        morning, in the morning, morgens, vormittags, vormittag, por la mañana, matin, le matin, matinée, 早上, 上午, 早晨, 朝,
        午前, утром, утро, صباحا, الصباح, صباح |
        afternoon, in the afternoon, nachmittags, nachmittag, por la tarde, après-midi, 下午, 午後, днём, днем,
        بعد الظهر, الظهيرة |
        evening, in the evening, abends, abend, por la noche, soir, le soir, soirée, 晚上, 傍晚, 夕方, 晩, вечером, вечер,
        مساء, المساء, مساءً |
        night, at night, nachts, de noche, la nuit, nuit, 夜里, 夜间, 夜, ночью, ليلا, الليل
    """, cue=True),
    _set("answer length", """
        short, brief, concise, kurz, kurze, kurzen, knapp, knappe, knappen, corto, corta, cortas, cortos, breve, breves, concisa,
        concisas, conciso, court, courte, courtes, brève, brèves, concis, concise, concises, 简短, 简洁, 简明, 短い, 簡潔,
        кратк*, коротк*, مختصر, مختصرة, قصير, قصيرة |
        long, detailed, lengthy, verbose, thorough, lang, lange, langen, ausführlich, ausführliche*, detailliert*, largo, larga,
        largas, largos, detallado, detallada, detalladas, detallados, extenso, extensa, longue, longues, détaillé, détaillée,
        détaillées, 详细, 冗长, 長い, 詳しい, 詳細, подробн*, длинн*, развёрнут*, развернут*, مفصل, مفصلة, طويل, طويلة
    """, cue=True),
    _set("language", """
        english, englisch, inglés, ingles, anglais, 英语, 英文, 英語, английск*, الإنجليزية, الانجليزية, بالإنجليزية |
        german, deutsch, deutsche, alemán, aleman, allemand, 德语, 德文, ドイツ語, немецк*, الألمانية, بالألمانية |
        spanish, spanisch, español, espanol, castellano, espagnol, 西班牙语, 西语, スペイン語, испанск*, الإسبانية, بالإسبانية |
        french, französisch, francés, frances, français, 法语, 法文, フランス語, французск*, الفرنسية, بالفرنسية |
        chinese, chinesisch, chino, chinois, 中文, 汉语, 中国語, китайск*, الصينية, بالصينية |
        japanese, japanisch, japonés, japonais, 日语, 日文, 日本語, японск*, اليابانية, باليابانية |
        russian, russisch, ruso, russe, 俄语, 俄文, ロシア語, русск*, الروسية, بالروسية |
        arabic, arabisch, árabe, arabe, 阿拉伯语, アラビア語, арабск*, العربية, بالعربية |
        italian, italienisch, italiano, italien, 意大利语, イタリア語, итальянск*, الإيطالية |
        portuguese, portugiesisch, portugués, portugais, 葡萄牙语, ポルトガル語, португальск*, البرتغالية
    """, cue=True, cues=_LANGUAGE_CUES),
    _set("contact channel", """
        email, e-mail, mail, e-mails, emails, correo, correo electrónico, courriel, 邮件, 电子邮件, 邮箱, メール, eメール,
        почт*, имейл, email, البريد, البريد الإلكتروني, الإيميل |
        phone, telephone, call, calls, phone call, phone calls, telefon, telefonisch, anruf, anrufe, teléfono, llamada, llamadas,
        telefónicamente, téléphone, appel, appels, 电话, 電話, телефон*, звонок, звонки, звонком, الهاتف, هاتفيا, مكالمة,
        مكالمات |
        sms, text message, text messages, textnachricht, mensaje de texto, texto, 短信, ショートメール, смс, رسائل نصية,
        الرسائل النصية |
        chat, live chat, 聊天, チャット, чат, الدردشة
    """, cue=True),
)


# --- matching ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One lexicon entry as comparison-form tokens; `prefix` when it ended in "*"."""

    words: tuple[str, ...]
    prefix: bool = False
    #: what the entry stands for (an exclusive set and group, a synonym group), when that matters
    tag: Any = None


def entry(text: str, tag: Any = None) -> Entry:
    prefix = text.endswith("*")
    words = tuple(t.norm for t in tokens(text.rstrip("*")))
    return Entry(words, prefix, tag)


#: prefix entries are looked up by this many first characters
_PREFIX_KEY = 3


class Matcher:
    """Find a list's entries in a word sequence: exact entries by their first word, prefix entries by their first characters."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self.entries = tuple(sorted({e for e in entries if e.words}, key=lambda e: (-len(e.words), e.words, repr(e.tag))))
        self._first: dict[str, list[Entry]] = {}
        self._prefix: dict[str, list[Entry]] = {}
        for e in self.entries:
            if e.prefix and len(e.words) == 1:
                self._prefix.setdefault(e.words[0][:_PREFIX_KEY], []).append(e)
            else:
                self._first.setdefault(e.words[0], []).append(e)

    def at(self, words: Sequence[str], i: int) -> list[Entry]:
        """Return the entries that match at position i, longest first."""
        word = words[i]
        first, prefix = self._first.get(word), self._prefix.get(word[:_PREFIX_KEY])
        if first is None and prefix is None:  # most words of a sentence: no entry starts with them
            return []
        found = [e for e in first or () if _match_at(words, i, e)]
        found += [e for e in prefix or () if word.startswith(e.words[0])]
        return found

    def spans(self, words: Sequence[str]) -> list[tuple[int, int, Entry]]:
        """Return the non-overlapping (start, end, entry) matches in `words`, the longest at each place."""
        out: list[tuple[int, int, Entry]] = []
        i = 0
        while i < len(words):
            found = self.at(words, i)
            if found:
                best = max(found, key=lambda e: len(e.words))
                out.append((i, i + len(best.words), best))
                i += len(best.words)
            else:
                i += 1
        return out

    def has(self, words: Sequence[str]) -> bool:
        return any(self.at(words, i) for i in range(len(words)))

    def whole(self, words: tuple[str, ...]) -> list[Entry]:
        return [e for e in self.at(words, 0) if len(e.words) == len(words)] if words else []


def _compile(texts: Iterable[str], tag: Any = None) -> Matcher:
    return Matcher(entry(t, tag) for t in texts)


def _match_at(words: Sequence[str], i: int, e: Entry) -> bool:
    n = len(e.words)
    if i + n > len(words):
        return False
    for k in range(n - 1):
        if words[i + k] != e.words[k]:
            return False
    last = words[i + n - 1]
    return last.startswith(e.words[-1]) if e.prefix else last == e.words[-1]


FILLER_ENTRIES = _compile(FILLER)
HEDGE_ENTRIES = _compile(HEDGES)
SINGLE_ENTRIES = _compile(SINGLE_CUES)
MULTI_ENTRIES = _compile(MULTI_CUES)
#: the five lists a sentence is read with, in one matcher (one scan of the sentence, not five)
_KINDS = (("filler", FILLER), ("negation", NEGATION), ("hedge", HEDGES), ("single", SINGLE_CUES), ("multi", MULTI_CUES))
_READING = Matcher(entry(t, kind) for kind, texts in _KINDS for t in texts)


def read(words: Sequence[str]) -> dict[str, list[tuple[int, int]]]:
    """Return, per list (filler, negation, hedge, single, multi), its non-overlapping matches in `words`, longest first."""
    found: dict[str, list[tuple[int, int]]] = {kind: [] for kind, _ in _KINDS}
    reach = {kind: 0 for kind, _ in _KINDS}
    for i in range(len(words)):
        best: dict[str, int] = {}
        for e in _READING.at(words, i):
            if len(e.words) > best.get(e.tag, 0):
                best[e.tag] = len(e.words)
        for kind, length in best.items():
            if i >= reach[kind]:
                found[kind].append((i, i + length))
                reach[kind] = i + length
    return found
FREE_WORDS = frozenset(e.words[0] for e in _compile(FREE).entries if len(e.words) == 1)
_FREE_LATIN = {lang: frozenset(e.words[0] for e in _compile(FREE_BY_LANGUAGE[lang]).entries if len(e.words) == 1) for lang in _MARKERS}
_FREE_ELSEWHERE = FREE_WORDS - frozenset().union(*_FREE_LATIN.values())


def language_markers(language: str) -> frozenset[str]:
    """Return the function words that show a sentence is in `language` (en, de, es, fr)."""
    return _MARKERS[language]


@lru_cache(maxsize=65536)
def free_words(words: tuple[str, ...]) -> frozenset[str]:
    """Return the `FREE_BY_LANGUAGE` words of the languages `words`' function words show (all when
    none shows), so "son" and "cet" are free in French and values in English."""
    present = set(words)
    languages = [lang for lang, markers in _MARKERS.items() if markers & present]
    if not languages:
        return FREE_WORDS
    return _FREE_ELSEWHERE.union(*(_FREE_LATIN[lang] for lang in languages))
FUNCTION_WORDS = frozenset(e.words[0] for e in _compile(FUNCTION).entries if len(e.words) == 1)
_SUBJECT_NOUNS = _compile(SUBJECT_NOUNS_TEXT)


_CUES = Matcher(e for m in (SINGLE_ENTRIES, MULTI_ENTRIES, HEDGE_ENTRIES) for e in m.entries)


#: words saying that something changed ("moved to", "switched to", "now uses", "upgraded"): the statement supersedes an older one
CHANGES = _entries("""
moved, moves, relocated, switched, changed, upgraded, downgraded, replaced, transferred, took over, taken over, now, since,
instead, no longer, anymore, started, stopped, quit, became, has become, turned,
umgezogen, gezogen, gewechselt, geändert, umgestellt, ersetzt, übernommen, jetzt, nun, seit, inzwischen, stattdessen, mehr,
se mudó, mudó, cambió, cambiado, pasó, pasado, reemplazado, sustituido, ahora, desde, ya no, en cambio,
a déménagé, déménagé, a changé, changé, passé, remplacé, repris, désormais, maintenant, depuis, plus,
搬到, 搬家, 改成, 改为, 换成, 换到, 升级, 现在, 已经, 不再, 接手,
引っ越し, 引っ越した, 変更, 切り替え, 切り替えた, 移った, 引き継が, 今は, 現在, もう,
переехал, переехала, переехали, перешёл, перешла, перешел, сменил, сменила, заменил, теперь, больше не, уже,
انتقل, انتقلت, غير, غيرت, تحول, أصبح, أصبحت, الآن, لم يعد, بدلا
""")
_CHANGES = _compile(CHANGES)


def changes(words: Sequence[str]) -> bool:
    """Say whether a sentence says that something changed ("has moved to", "switched to", "ist umgezogen")."""
    return _CHANGES.has(words)


def ends_with_subject_noun(text: str) -> bool:
    """Say whether a run of characters (a script without spaces) ends in a generic subject noun ("账户", "注文")."""
    return any(text.endswith("".join(e.words)) for e in _SUBJECT_NOUNS.entries if not e.prefix)


#: the words of a "Label:" preamble that says who noted a fact or how, not what it is about
LABELS = frozenset(t.norm for text in _entries("""
note, notes, noted, reminder, confirmed, confirm, restated, repeated, again, update, updated, fyi, important, per, team, call,
source, via, from, according, to, on, a, the, by, as, said, reported, mentioned, heads-up, info, recap, passing, told, stated,
shortly, before, after, few, days, week, of, in,
hinweis, notiz, erinnerung, bestätigt, wichtig, laut, info, nochmals, erneut,
nota, recordatorio, confirmado, confirmada, actualización, importante, según, de nuevo, otra, vez,
rappel, confirmé, confirmée, mise à jour, important, selon, encore,
заметка, напоминание, подтверждено, важно, обновление, снова, по, словам,
备注, 提醒, 确认, 注意, 更新, 重要, 再次,
メモ, 注意, 確認, 更新, 重要, 再度,
ملاحظة, تذكير, تأكيد, مهم, تحديث
""") for t in tokens(text))


@lru_cache(maxsize=16384)
def label_word(word: str) -> bool:
    """Say whether a word may stand in a "Label:" preamble (who noted it, how), besides filler and function words."""
    return word in LABELS or word in FUNCTION_WORDS or word in FREE_WORDS or bool(FILLER_ENTRIES.whole((word,)))


def cue(word: str) -> bool:
    """Say whether a word is a cue (single- or multi-valued) or a hedge: it says how, not what."""
    return bool(_CUES.whole((word,)))


def subject_noun(word: str) -> bool:
    """Say whether a word is a generic noun notes name a subject with ("account", "Konto", "переговорной")."""
    return bool(_SUBJECT_NOUNS.whole((word,)))
OPENER_WORDS = frozenset(e.words[0] for e in _compile(OPENERS).entries if len(e.words) == 1)

#: each exclusive set's cues (`ExclusiveSet.cues`), compiled
_SET_CUES = tuple(_compile(s.cues) for s in EXCLUSIVE)
#: every member of every exclusive set, tagged (set, group)
_MEMBERS = Matcher(entry(t, (si, gi)) for si, s in enumerate(EXCLUSIVE) for gi, g in enumerate(s.groups) for t in g)
_SYNONYMS = Matcher(entry(t, gi) for gi, group in enumerate(SYNONYMS) for t in group)


@lru_cache(maxsize=65536)
def members(words: tuple[str, ...]) -> dict[tuple[int, int], str]:
    """Return the (exclusive set, group) pairs whose members occur in `words`, with the first member as written."""
    found: dict[tuple[int, int], str] = {}
    for start, end, e in _MEMBERS.spans(words):
        found.setdefault(e.tag, join(words[start:end]))
    return found


def synonyms(left: Sequence[str], right: Sequence[str]) -> bool:
    """Say whether two word sequences are members of one synonym group (or of one exclusive-set group)."""
    a, b = tuple(left), tuple(right)
    for matcher in (_SYNONYMS, _MEMBERS):
        tags = {e.tag for e in matcher.whole(a)}
        if tags and tags & {e.tag for e in matcher.whole(b)}:
            return True
    return False


def clash(a: tuple[str, ...], b: tuple[str, ...], cue_a: bool, cue_b: bool) -> Optional[tuple[str, str, str]]:
    """Return (attribute, value in a, value in b) when a and b hold different groups of one exclusive set, one on each side only.

    `cue_*`: the sentence holds a single-valued cue (a set marked `cue` counts only then).
    """
    ma, mb = members(a), members(b)
    only_a, only_b = ma.keys() - mb.keys(), mb.keys() - ma.keys()
    for s, ga in sorted(only_a):
        for s2, gb in sorted(only_b):
            if s != s2 or ga == gb:
                continue
            cues = _SET_CUES[s]
            if EXCLUSIVE[s].cue and not ((cue_a or cues.has(a)) and (cue_b or cues.has(b))):
                continue
            return EXCLUSIVE[s].attribute, ma[(s, ga)], mb[(s, gb)]
    return None


def join(words: Sequence[str]) -> str:
    """Join comparison-form words for a message: with spaces, but none between CJK characters."""
    out = ""
    for word in words:
        if out and not (_cjk(out[-1]) and _cjk(word[0])):
            out += " "
        out += word
    return out


def _cjk(char: str) -> bool:
    return "\u3040" <= char <= "\u30ff" or "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"
