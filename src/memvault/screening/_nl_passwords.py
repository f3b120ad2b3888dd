"""Passwords told in prose: English, French, German, Spanish, Italian, Portuguese and Chinese.

"my password is ...", "mon mot de passe est ...", "das Kennwort lautet ...", 密码是..., and the
context detectors ("use the following password: <token>", `login("user", "pw")`). A lone word
after the keyword counts only where it is not a function word, a common adjective or prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.screening._model import Finding
from memvault.screening._secret_values import (
    CLAUSE_END,
    PASSWORD,
    is_placeholder,
    looks_like_token,
    words,
)

# -- natural-language passwords ---------------------------------------------------------------
_NL_PASSWORD = re.compile(
    r"\b(?P<kw>pass(?:word|phrase|code)|passwd|pwd|pw|wi-?fi\s+key|"
    r"(?P<numeric>pin(?:\s+code)?|(?:door|gate|alarm|safe|lock|entry|access)\s+code))"
    r"(?P<mid>\s+(?:for|of|to|on)\s+[^\n.!?]{1,50}?)?"
    r"\s+(?:(?:is|was|has\s+been|got)\s+(?:set|changed|reset)\s+to|(?:set|changed|reset)\s+to|"
    r"will\s+be|is\s+now|is\s+still|is|was)\s*[:\-]?\s*"
    r"(?:(?P<q>[\"'`“‘])(?P<qv>[^\"'`”’\n]{1,100})[\"'`”’]|(?P<v>[^\s]{1,100}))",
    re.IGNORECASE,
)
_NL_NOT_A_VALUE = words(
    """a an the my your his her their our its this that it not too very so still also now just
    really pretty quite same different strong weak long short secure insecure safe unsafe wrong
    right correct incorrect invalid valid expired old new changed reset required needed missing
    empty blank hidden encrypted hashed stored saved written sent set case in on at for with
    from by of to and or but somewhere there here secret private simple easy hard complicated
    complex unique random good bad fine ok okay great terrible weird known unknown forgotten lost
    gone taken what which something nothing anything none mandatory optional tricky impossible
    memorable obvious guessable unguessable different same changing updated written printed
    taped stuck kept located somewhere either neither both all any every each one two three
    only always never usually probably definitely actually literally supposed going being
    protected compromised leaked exposed working broken ready available active inactive
    locked unlocked shared personal temporary permanent mine yours his hers ours theirs"""
)


# the same, in French, German, Spanish, Italian and Portuguese (function words and common
# adjectives of "my password is too short / strong / wrong / forgotten")
_NL_NOT_A_VALUE_EU = words(
    """le la les un une des du de mon ma mes ton ta tes son sa ses notre votre leur ce cet cette
    ces il elle on ne pas plus très tres trop assez si aussi encore toujours jamais déjà deja
    maintenant désormais bien mal peu beaucoup vraiment tout toute tous toutes même meme
    différent différente court courte courts long longue longs faible faibles fort forte sûr sûre
    simple simples facile difficile nouveau nouvel nouvelle ancien ancienne vieux vieille mauvais
    mauvaise bon bonne juste faux fausse incorrect incorrecte valide invalide perdu perdue écrit
    écrite secret secrète obligatoire requis requise nécessaire vide inconnu inconnue pareil
    pareille quoi quel quelle où dans sur sous chez avec sans pour par en au aux et ou mais donc
    car que qui quelque rien personne unique aléatoire solide robuste complexe bizarre nul nulle
    celui celle dessus dessous ici là
    der die das den dem des ein eine einen einem einer mein meine meinen meiner dein deine sein
    seine ihr ihre unser unsere euer kein keine nicht nie noch schon jetzt nun immer wieder sehr
    zu viel ganz auch nur so ja nein gleich gleiche anders andere neu neue alt alte falsch
    richtig korrekt ungültig gültig abgelaufen vergessen verloren geheim sicher unsicher stark
    schwach kurz lang einfach leicht schwer schwierig kompliziert gut schlecht leer unbekannt
    bekannt derselbe dasselbe dieselbe identisch irgendwo hier dort da irgendwas etwas nichts was
    welches wo wie in im auf an am bei mit ohne für von vom zum zur und oder aber weil dass
    leider eigentlich wohl bestimmt total extrem ziemlich zufällig aktiv inaktiv gestern heute
    morgen bald hier demain aujourd'hui ayer hoy mañana ieri oggi domani ontem hoje amanhã
    el los las lo unos unas mi mis tu tus su sus nuestro nuestra muy demasiado demasiada bastante
    poco poca no ni ya aún aun todavía siempre nunca ahora también solo sólo igual diferente
    distinta distinto misma mismo corta corto larga largo débil debil fuerte segura seguro
    insegura inseguro fácil facil difícil dificil complicada complicado sencilla sencillo nueva
    nuevo vieja viejo antigua antiguo mala malo buena bueno correcta correcto incorrecta
    incorrecto inválida inválido válida válido caducada caducado secreta secreto obligatoria
    obligatorio necesaria necesario vacía vacío desconocida desconocido única único aleatoria
    qué cuál cual dónde donde en del con sin para por al y o pero que algo nada este esta esto
    il lo gli uno mio mia miei mie tuo tua suo sua nostra nostro troppo troppa molto molta non
    né già ancora sempre mai ora adesso anche uguale diverso diversa stessa stesso corta corto
    lunga lungo debole sicura sicuro insicura insicuro semplice nuova vecchia vecchio giusta
    giusto sbagliata sbagliato errata errato segreta obbligatoria necessaria vuota vuoto
    sconosciuta unica unico casuale che cosa quale dove di della dello delle degli con senza per
    ai ma qualcosa niente nulla questa questo quella quello
    os as um uma uns umas minha meu tua teu sua seu nossa nosso muito muita demais pouco pouca
    não nem já ainda sempre nunca agora também só igual mesma mesmo curta curto longa longo
    fraca fraco forte segura seguro insegura fácil difícil simples nova novo velha velho antiga
    antigo errada errado certa certo correta correto incorreta inválida válida secreta
    obrigatória necessária vazia desconhecida única aleatória qual onde em do da dos das com sem
    para por ao e ou mas algo nada esta este isso aquela"""
)
# word endings that mark adjectives, participles and adverbs, per language
_PROSE_SUFFIX: dict[str, re.Pattern[str]] = {
    "en": re.compile(r"(?:ly|ed|er|ing|able|ible|ous|ive|ful|less|ure|ent|ant)$"),
    "fr": re.compile(
        r"(?:é|ée|és|ées|ique|iques|able|ables|ible|ibles|eux|euse|euses|ment|if|ive|ives|ant|"
        r"ante|ants|antes|ent|ente|ents|entes)$"
    ),
    "de": re.compile(
        r"(?:ig|ige|igen|lich|liche|lichen|bar|los|lose|sam|isch|ische|haft|end|ende|iert|ierte)$|"
        r"^ge\w{2,}(?:t|en)$"
    ),
    "es": re.compile(
        r"(?:ado|ada|ados|adas|ido|ida|idos|idas|oso|osa|osos|osas|ble|bles|mente|ente|entes|"
        r"ante|antes|ivo|iva|ivos|ivas)$"
    ),
    "it": re.compile(
        r"(?:ato|ata|ati|ate|ito|ita|iti|ite|uto|uta|oso|osa|osi|ose|bile|bili|mente|ente|enti|"
        r"ante|anti|ivo|iva|ivi|ive)$"
    ),
    "pt": re.compile(
        r"(?:ado|ada|ados|adas|ido|ida|idos|idas|oso|osa|vel|veis|mente|ente|entes|ante|antes|"
        r"ivo|iva)$"
    ),
}
# "l'anniversaire de ma fille", "dell'ufficio": an elided article starts prose, not a value
_ELISION = re.compile(r"(?i)^(?:l|d|qu|c|j|m|t|s|n|dell|all|nell|sull|dall|un)['’]")
_CLAUSE_END_EU = re.compile(
    r"\s*(?:$|[.,;:!?)\]»“”]|\s(?:and|but|or|so|et|mais|ou|donc|und|aber|oder|doch|y|pero|o|"
    r"e|ma|mas|però)\b)",
    re.IGNORECASE,
)


def _nl_value_is_secret(value: str, after: str, quoted: bool, lang: str = "en") -> bool:
    if is_placeholder(value):
        return False
    if quoted:
        return True
    word = value.rstrip(".,;:!?)]\"'»”’")
    lowered = word.lower()
    if len(word) < 3 or lowered in _NL_NOT_A_VALUE:
        return False
    if lang != "en" and (lowered in _NL_NOT_A_VALUE_EU or _ELISION.match(word)):
        return False
    plain = word.replace("-", "").replace("'", "").replace("’", "")
    if any(ch.isdigit() for ch in word) or not plain.isalpha():
        return True
    if word[1:] != word[1:].lower():  # inner capitals: "hunTer", "CorrectHorse"
        return True
    if _PROSE_SUFFIX[lang].search(lowered):
        return False
    # a lone word that ends the clause is a value ("my password is swordfish.")
    trailing = value[len(word) :]
    clause_end = CLAUSE_END if lang == "en" else _CLAUSE_END_EU
    return bool(trailing) or bool(clause_end.match(after))


def _nl_finding(m: re.Match[str], text: str, lang: str = "en") -> Finding | None:
    """The value of one keyword match, if it is a secret.

    `numeric` keywords (PIN, door codes) need a digit in the value; `weak` ones need a quoted or
    made-up value.
    """
    quoted = m.group("qv") is not None
    group = "qv" if quoted else "v"
    value = m.group(group)
    if m.group("numeric") and not any(ch.isdigit() for ch in value):
        return None
    if m.groupdict().get("weak") and not quoted and not _looks_made_up(value):
        return None
    if not _nl_value_is_secret(value, text[m.end(group) :], quoted, lang):
        return None
    return Finding("natural_language_password", PASSWORD, m.start(group), m.end(group))


def nl_password_findings(text: str) -> Iterator[Finding]:
    """Passwords told in English prose: "my password is ...", "the door code is 4711"."""
    for m in _NL_PASSWORD.finditer(text):
        if (finding := _nl_finding(m, text)) is not None:
            yield finding


# European languages: keyword (+ optional "of the wifi" part) + verb or ':' + value.
# `numeric` keywords (PIN, door codes) need a digit in the value; `weak` ones (Spanish "clave",
# which is also "the key to success") need a value that looks machine-made or is quoted.
_EU_MID_GUARD = r"(?:(?!\s(?:et|und|y|e|ou|oder|o|and|or|mais|aber|pero|ma|mas)\s)[^\n.!?:=,;])"
_EU_VALUE = (
    r"(?:(?P<q>[\"'`“‘«„‚])\s*(?P<qv>[^\"'`”’»“\n]{1,100}?)\s*[\"'`”’»“]|(?P<v>[^\s]{1,100}))"
)


def _eu_pattern(keywords: str, mid: str, verbs: str, compound: str = "") -> re.Pattern[str]:
    """`compound`: keywords that may end a longer word ("WLAN-Passwort", "Routerkennwort")."""
    return re.compile(
        r"(?:(?<!\w)(?:" + keywords + r")" + (f"|{compound}" if compound else "") + ")"
        r"(?:\s+(?:" + mid + r")(?!\w)" + _EU_MID_GUARD + r"{0,40}?)?"
        r"(?:\s+(?:" + verbs + r")(?!\w)\s*[:\-]?\s*|\s*,?\s*c['’]est\s+|\s*[:=]\s*)" + _EU_VALUE,
        re.IGNORECASE,
    )


_PIN = r"(?-i:PIN)"
_NL_PASSWORD_EU: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "fr",
        _eu_pattern(
            r"(?P<numeric>code\s+(?:" + _PIN + r"|secret|d['’]acc[eè]s|de\s+(?:la\s+|l['’])?"
            r"(?:porte|portail|alarme|immeuble|entr[ée]e|cadenas|coffre))|digicode|" + _PIN + r")|"
            r"mot[\s\-_.]*de[\s\-_.]*passe|(?:mon|ton|son|le|votre|notre)\s+password",
            r"du|de\s+la|de\s+l['’]|des|de|d['’]|pour|sur",
            r"est(?:\s+(?:maintenant|désormais|toujours|encore))?|était|etait|sera|reste|"
            r"(?:a\s+été|est)\s+(?:chang|modifi|remplac|réinitialis|reinitialis|défini|mis)"
            r"(?:é|ée|e)?\s+(?:en|par|pour|à|a|sur)",
        ),
    ),
    (
        "de",
        _eu_pattern(
            r"(?P<numeric>" + _PIN + r"(?:-?(?:Code|Nummer))?|(?:haustür|tür|tor|alarm(?:anlagen)?"
            r"|zugangs|sicherheits|tresor|garagen|schloss)-?code|geheimzahl)|"
            r"(?:das|mein|dein|sein|ihr|unser|euer)\s+password",
            r"für|fürs|vom|von|des|der|zum|zur|bei|auf",
            r"lautet(?:\s+(?:jetzt|nun|immer\s+noch|weiterhin))?|"
            r"ist(?:\s+(?:jetzt|nun|immer\s+noch|weiterhin|noch))?|war|heißt|heisst|bleibt|"
            r"(?:wurde|ist)\s+(?:auf|in|zu)",
            compound=r"passwort|kennwort",
        ),
    ),
    (
        "es",
        _eu_pattern(
            r"(?P<numeric>c[óo]digo\s+(?:" + _PIN + r"|de\s+(?:acceso|seguridad|desbloqueo|la\s+"
            r"(?:puerta|alarma|caja))|del\s+(?:portal|port[óo]n|candado))|" + _PIN + r")|"
            r"contrase(?:ñ|n)a|(?:mi|tu|su|la|nuestra)\s+password|"
            r"(?P<weak>(?:mi|tu|su|la|nuestra)\s+clave)",
            r"del|de\s+la|de|para|en",
            r"es(?:\s+ahora)?|era|será|sera|sigue\s+siendo|"
            r"(?:se\s+)?(?:cambi[óo]|ha\s+cambiado|ha\s+sido\s+cambiada|fue\s+cambiada)"
            r"\s+(?:a|por)",
        ),
    ),
    (
        "it",
        _eu_pattern(
            r"(?P<numeric>codice\s+(?:" + _PIN + r"|segreto|di\s+accesso|d['’]accesso|della\s+"
            r"(?:porta|cassaforte)|dell['’](?:allarme|antifurto)|del\s+(?:portone|cancello|"
            r"lucchetto))|" + _PIN + r")|parola\s+d['’]ordine|"
            r"(?:(?:la|mia|tua|sua|nostra)\s+)+password",
            r"del|della|dello|dell['’]|di|per|su",
            r"è|e['’]|é|era|sarà|resta|rimane|"
            r"(?:è\s+stata\s+)?(?:cambiata|modificata|impostata|reimpostata)\s+(?:in|a|con)",
        ),
    ),
    (
        "pt",
        _eu_pattern(
            r"(?P<numeric>c[óo]digo\s+(?:" + _PIN + r"|de\s+(?:acesso|seguran[çc]a|desbloqueio)|"
            r"d[oa]\s+(?:port[ãa]o|porta|alarme|cadeado|cofre))|" + _PIN + r")|"
            r"senha|palavra[\s\-_.]*passe|(?:(?:a|minha|tua|sua|nossa)\s+)+password",
            r"do|da|de|para|no|na",
            r"é|e['’]|era|foi|será|sera|continua\s+(?:sendo|a\s+ser)|agora\s+é|"
            r"(?:foi\s+)?(?:alterada|mudada|trocada|definida|redefinida)\s+para",
        ),
    ),
)


def _looks_made_up(value: str) -> bool:
    """A value that is not a plain word: a digit, a symbol or inner capitals."""
    word = value.rstrip(".,;:!?)]\"'»”’")
    return (
        any(ch.isdigit() for ch in word)
        or not word.replace("-", "").isalpha()
        or word[1:] != word[1:].lower()
    )


# every European keyword above holds one of these (a cheap test before five long regexes)
_EU_STEMS = re.compile(
    r"pass|wort|contrase|senha|parola|pin|c[oó]d|clave|geheimzahl", re.IGNORECASE
)


def nl_password_eu_findings(text: str) -> Iterator[Finding]:
    """Passwords told in French, German, Spanish, Italian or Portuguese prose."""
    if _EU_STEMS.search(text) is None:
        return
    for lang, regex in _NL_PASSWORD_EU:
        for m in regex.finditer(text):
            if (finding := _nl_finding(m, text, lang)) is not None:
                yield finding


_ZH_PASSWORD = re.compile(
    r"(?:密码|密碼|口令|暗号|PIN码|pin码|支付密码|登录密码|开机密码|WiFi密码|wifi密码)"
    r"(?:\s*(?:是|为|為|：|:|=|改成了?|改为|改為|设为|設為|设置为|設置為|换成了?))+\s*"
    r"[「『“\"'‘]?\s*(?P<v>[!-~]{3,100})"
)


# "use the following password to proceed:\n\n<token>"
_PASSWORD_THEN_TOKEN = re.compile(
    r"\b(?:password|passphrase|passcode)\b[^\n:]{0,60}:\s*(?P<v>[^\s\"'`]{8,100})", re.IGNORECASE
)
# new NetworkCredential("user", "pw"), DirectoryEntry("LDAP://x", "user", "pw"), login("u", "p")
_CREDENTIAL_CALL = re.compile(
    r"\b\w*(?:Credential|DirectoryEntry|[Ll]ogin|[Aa]uthenticate|BasicAuth|HTTPBasicAuth)\w*\s*"
    r"\((?:\s*[\"'][^\"'\n]*[\"']\s*,){1,3}\s*[\"'](?P<v>[^\"'\n]{3,100})[\"']\s*\)"
)


def context_findings(text: str) -> Iterator[Finding]:
    """A token after "the following password:", and the password argument of a login call."""
    for m in _PASSWORD_THEN_TOKEN.finditer(text):
        if looks_like_token(m.group("v")) and not is_placeholder(m.group("v")):
            yield Finding("password_then_token", PASSWORD, m.start("v"), m.end("v"))
    for m in _CREDENTIAL_CALL.finditer(text):
        if not is_placeholder(m.group("v")):
            yield Finding("credential_call", PASSWORD, m.start("v"), m.end("v"))


def zh_password_findings(text: str) -> Iterator[Finding]:
    """Passwords told in Chinese: 密码是..., 口令为..., WiFi密码：..."""
    for m in _ZH_PASSWORD.finditer(text):
        value = m.group("v").rstrip(".,;:!?)]\"'」』”’")
        if len(value) >= 3 and not is_placeholder(value):
            yield Finding("chinese_password", PASSWORD, m.start("v"), m.start("v") + len(value))
