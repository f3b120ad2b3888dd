"""Credential detection for single texts of prose, chat or pasted config.

Two sources, both reporting `(detector, family, start, end)` and never the value:

- detect-secrets 1.5.0: its vendor plugins and its keyword plugin. Its high-entropy plugins are
  left out: on one line of prose they flag ordinary words ("tokens", dates). Our own gated
  entropy detector stands in for them.
- memvault's own detectors: published token formats of cloud and SaaS vendors, private-key
  blocks, JWTs, password hashes, URLs and connection strings with embedded passwords, keyword
  assignments (`password: ...`, `api_key = "..."`), natural-language passwords in English,
  Chinese, French, German, Spanish, Italian and Portuguese ("my password is ...", 密码是...,
  "mon mot de passe est ...", "das Kennwort lautet ..."), authorization headers, secret-bearing URL
  queries, and a bare AWS secret access key beside an access key id.

The scanner reads the screen's normalised text (NFKC, invisible characters removed) and joins
split keywords first ("pass word", "pass-word", "p a s s w o r d" read as "password"); finding
spans index the text it was given.

Every value a keyword-style detector captures goes through `_is_placeholder`, so templates
(`<YOUR_API_KEY>`, `${TOKEN}`, `xxxx`, `env.PASSWORD`) pass. Nothing here logs or raises with a
matched value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memvault.screening._model import Finding

# ---------------------------------------------------------------------------------------------
# Families (the evaluation reports recall per family)
VENDOR = "vendor_token"
PRIVATE_KEY = "private_key"
JWT = "jwt"
PASSWORD_HASH = "password_hash"
URL_PASSWORD = "url_password"
PASSWORD = "password"
KEYWORD = "keyword_secret"
HEADER = "auth_header"
ENTROPY = "high_entropy"
DETECT_SECRETS = "detect_secrets"


@dataclass(frozen=True, slots=True)
class _Pattern:
    detector: str
    family: str
    regex: re.Pattern[str]
    group: int = 0


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _p(detector: str, family: str, pattern: str, group: int = 0, flags: int = 0) -> _Pattern:
    return _Pattern(detector, family, re.compile(pattern, flags), group)


_B = r"(?<![A-Za-z0-9_\-])"  # token start: not glued to a preceding word
_E = r"(?![A-Za-z0-9_\-])"  # token end

# Published token formats. Each regex names the vendor's prefix and the shape of the rest.
_VENDOR_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        "aws_access_key",
        VENDOR,
        _B + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|"
        r"ANPA|ANVA|APKA)[A-Z0-9]{16}" + _E,
    ),
    _p(
        "github_token",
        VENDOR,
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|"
        r"github_pat_[A-Za-z0-9_]{50,255})",
    ),
    _p(
        "gitlab_token",
        VENDOR,
        _B + r"(?:gl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|agent|oas)-"
        r"[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,})",
    ),
    _p(
        "slack_token",
        VENDOR,
        _B + r"(?:xox[abposrec]-[A-Za-z0-9\-]{10,}|"
        r"xapp-[A-Za-z0-9\-/]{10,})",
    ),
    _p("slack_webhook", VENDOR, r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}"),
    _p("stripe_key", VENDOR, _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _p("anthropic_key", VENDOR, _B + r"sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{20,}"),
    _p(
        "openai_key",
        VENDOR,
        _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"
        r"T3BlbkFJ[A-Za-z0-9_\-]{10,}|"
        + _B
        + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|"
        + _B
        + r"sk-[A-Za-z0-9]{48}"
        + _E,
    ),
    _p("google_api_key", VENDOR, _B + r"AIza[0-9A-Za-z_\-]{35}"),
    _p("google_oauth_secret", VENDOR, _B + r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    _p("google_oauth_token", VENDOR, _B + r"ya29\.[0-9A-Za-z_\-]{20,}"),
    _p("sendgrid_key", VENDOR, _B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}"),
    _p("npm_token", VENDOR, _B + r"npm_[A-Za-z0-9]{36}" + _E),
    _p("pypi_token", VENDOR, _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _p("telegram_bot_token", VENDOR, r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_\-]{30,34}" + _E),
    _p(
        "azure_connection_string",
        VENDOR,
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature|"
        r";Secret)\s*=\s*[A-Za-z0-9+/%]{20,}={0,2}",
    ),
    _p("azure_devops_pat", VENDOR, _B + r"[A-Za-z0-9]{52}JQQJ9[0-9][A-Za-z0-9]{20,}"),
    _p("huggingface_token", VENDOR, _B + r"hf_[A-Za-z]{30,40}" + _E),
    _p("docker_hub_token", VENDOR, _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"),
    _p("grafana_token", VENDOR, _B + r"(?:glc_|glsa_)[A-Za-z0-9_\-=+/]{24,}"),
    _p("groq_key", VENDOR, _B + r"gsk_[A-Za-z0-9]{40,}"),
    _p(
        "newrelic_key",
        VENDOR,
        _B + r"(?:NRAK|NRII|NRIQ|NRRA|NRAA|NRJS)-[A-Za-z0-9_\-]{19,}|"
        r"\b[0-9a-f]{36}NRAL\b|" + _B + r"eu01xx[0-9a-f]{30}NRAL\b",
    ),
    _p(
        "hashicorp_vault_token",
        VENDOR,
        _B + r"(?:hv[sbr]\.[A-Za-z0-9_\-]{24,}|"
        r"[sbr]\.(?=[A-Za-z]*\d)[A-Za-z0-9]{24}" + _E + r")",
    ),
    _p("shopify_token", VENDOR, _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    _p("digitalocean_token", VENDOR, _B + r"do[opr]_v1_[a-f0-9]{64}"),
    _p("square_token", VENDOR, _B + r"(?:sandbox-)?sq0(?:atp|csp|atb)-[A-Za-z0-9_\-]{22,}"),
    _p("postman_key", VENDOR, _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _p("rubygems_key", VENDOR, _B + r"rubygems_[a-f0-9]{48}"),
    _p("tavily_key", VENDOR, _B + r"tvly-[A-Za-z0-9]{30,}"),
    _p("jina_key", VENDOR, _B + r"jina_[a-f0-9]{32}[A-Za-z0-9_]{20,}"),
    _p("sourcegraph_token", VENDOR, _B + r"sgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}"),
    _p("segment_token", VENDOR, _B + r"sgp_[A-Za-z0-9]{64}"),
    _p("age_secret_key", VENDOR, r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    _p("atlassian_token", VENDOR, _B + r"ATATT3[A-Za-z0-9_\-=]{50,}"),
    _p("bitbucket_app_password", VENDOR, _B + r"ATBB[A-Za-z0-9_\-]{28,}"),
    _p("artifactory_key", VENDOR, _B + r"AKCp[A-Za-z0-9]{60,}"),
    _p("databricks_token", VENDOR, _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E),
    _p("dependency_track_key", VENDOR, _B + r"odt_[A-Za-z0-9]{32,}"),
    _p(
        "doppler_token",
        VENDOR,
        _B + r"dp\.(?:ct|pt|st|sa|scim|audit)\.(?:[a-z0-9_\-]+\.)?"
        r"[A-Za-z0-9]{40,}",
    ),
    _p("dropbox_token", VENDOR, _B + r"sl\.[A-Za-z0-9_\-]{60,}"),
    _p(
        "facebook_token",
        VENDOR,
        _B + r"EAA[A-Za-z0-9]{8,}ZD[A-Za-z0-9]{20,}|" + _B + r"EAACEdEose0cBA[A-Za-z0-9]{20,}",
    ),
    _p("mailgun_key", VENDOR, _B + r"key-[a-f0-9]{32}" + _E),
    _p("mailchimp_key", VENDOR, _B + r"[a-f0-9]{32}-us\d{1,2}" + _E),
    _p("twilio_key", VENDOR, _B + r"(?:SK|AC)[a-f0-9]{32}" + _E),
    _p("firecrawl_key", VENDOR, _B + r"fc-[a-f0-9]{32}" + _E),
    _p("twitch_stream_key", VENDOR, _B + r"live_\d{6,12}_[A-Za-z0-9]{25,}"),
    _p("nuget_key", VENDOR, _B + r"oy2[a-z0-9]{43}" + _E),
    _p("salesforce_token", VENDOR, _B + r"00[A-Za-z0-9]{13}![A-Za-z0-9_.]{80,}"),
    _p("mapbox_token", VENDOR, _B + r"[st]k\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{10,}"),
    _p("stackhawk_key", VENDOR, _B + r"hawk\.[A-Za-z0-9_\-]{20}\.[A-Za-z0-9_\-]{20}"),
    _p(
        "kubernetes_bootstrap_token",
        VENDOR,
        r"(?i:bootstrap[_\-]?token)[\"'\s:=]+"
        r"[a-z0-9]{6}\.[a-z0-9]{16}\b|--tls-bootstrap-token\s+[a-z0-9]{6}\.[a-z0-9]{16}\b",
    ),
    _p(
        "okta_token",
        VENDOR,
        r"(?i:okta|SSWS)[\w\-\"'\s:=]{0,30}?" + _B + r"00[A-Za-z0-9_\-]{40}" + _E,
    ),
    _p("truenas_key", VENDOR, r"(?<![\w\-])\d{1,3}-[A-Za-z0-9]{60,70}" + _E),
    _p("hashicorp_unseal_key", VENDOR, r"(?i:unseal(?:\s+key\s*\d*)?)\s*:?\s*[A-Za-z0-9+/]{40,}"),
    _p(
        "msteams_webhook",
        VENDOR,
        r"(?:outlook\.office(?:365)?\.com|webhook\.office\.com)/"
        r"webhook[b2]?/[a-f0-9\-]{36}@[a-f0-9\-]{36}/IncomingWebhook/[a-f0-9]{32}",
    ),
)

_STRUCTURE_PATTERNS: tuple[_Pattern, ...] = (
    _p("private_key_block", PRIVATE_KEY, r"-----BEGIN[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----"),
    _p("private_key_base64", PRIVATE_KEY, r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}"),
    _p("putty_private_key", PRIVATE_KEY, r"PuTTY-User-Key-File-\d"),
    _p("jwt", JWT, _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # base64 of a JSON object ('{"'): API tokens and JWT-like blobs with an unusual header
    _p("encoded_json_token", JWT, _B + r"eyJ[A-Za-z0-9_\-+/]{30,}={0,2}"),
    _p(
        "password_hash",
        PASSWORD_HASH,
        r"\$(?:1|2[abxy]?|5|6|7|8|9|y|gy|argon2(?:id|i|d))\$"
        r"[^\s$]{1,60}\$[./A-Za-z0-9+]{16,}",
    ),
    _p("kerberos_hash", PASSWORD_HASH, r"\$krb5(?:asrep|tgs|pa)\$\d+\$"),
    _p("http_basic_auth", HEADER, r"(?i:authorization)\s*:\s*Basic\s+[A-Za-z0-9+/]{8,}={0,2}"),
)

_PLACEHOLDER_WORDS = _words(
    """none null nil undefined true false empty blank required optional hidden na n/a todo tbd
    unknown string str value changeme change_me your yours example sample dummy placeholder
    redacted masked secret_here password_here xxx tba"""
)
_PLACEHOLDER_RE = re.compile(
    r"""^(?:
        [<\[{(%].*                    # <YOUR_KEY>, [key], {{key}}, (key), %KEY%
      | \$.* | @[A-Za-z_]\w* | &\w+;.* | \#\{.*  # $VAR, ${VAR}, @var, &lt;, #{ruby}
      | .*(?:your|example|placeholder|redacted|here>|_here|xxxx|\*\*\*|\.\.\.).*
      | [A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+(?:\(.*)?   # env.PASSWORD, request.form
      | [A-Za-z_]\w*\(.*              # getenv(...), Buffer.from(...)
      | (?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)  # SOME_ENV_NAME
    )$""",
    re.IGNORECASE | re.VERBOSE,
)


def _is_placeholder(value: str) -> bool:
    """True for template values, variable references and code, which are not secrets."""
    value = value.strip().strip("\"'`“”‘’")
    if len(value) < 3:
        return True
    if value.lower() in _PLACEHOLDER_WORDS:
        return True
    if len(set(value)) <= 2:  # "********", "aaaaaaaa", "xxxxxx", "######"
        return True
    return bool(_PLACEHOLDER_RE.match(value))


def _shannon(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_like_token(value: str) -> bool:
    """A machine-made secret: long enough, no spaces, and not a plain word or number."""
    value = value.strip("\"'`")
    if len(value) < 8 or not value.isascii() or any(ch.isspace() for ch in value):
        return False
    has_alpha = any(ch.isalpha() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    if has_alpha and has_digit:
        return len(value) >= 10 or _shannon(value) >= 2.8
    return len(value) >= 16 and _shannon(value) >= 3.0


# -- keyword assignments ----------------------------------------------------------------------
_STRONG_KEYS = (
    r"password|passwd|passwort|kennwort|passphrase|passcode|pwd|secret|contrase(?:ñ|n)a|senha|"
    r"mot[_\-.]?de[_\-.]?passe|palavra[_\-.]?passe"
)
_WEAK_KEYS = (
    r"token|api[_\-.]?key|apikey|access[_\-.]?key|auth[_\-.]?key|private[_\-.]?key|"
    r"client[_\-.]?key|license[_\-.]?key|licen[cs]e|preshared[_\-.]?key|psk|credentials?|"
    r"signing[_\-.]?key|master[_\-.]?key|encryption[_\-.]?key|session[_\-.]?key|app[_\-.]?key|"
    r"consumer[_\-.]?key|_pat|pass|login|auth|sid|key"
)
_KEY_NAME = (
    r"(?<![A-Za-z0-9])(?P<key>[A-Za-z0-9_.\-]*?(?P<kw>"
    + _STRONG_KEYS
    + "|"
    + _WEAK_KEYS
    + r")[A-Za-z0-9_.\-]*)"
)
# an unquoted value: printable ASCII, so Chinese prose after "Secret Service" is not a value
_ASCII_VALUE = r"(?:(?![\s\"'`,;<>\\])[!-~])"
# key, optional closing quote/bracket, then an assignment operator and a value
_ASSIGNMENT = re.compile(
    _KEY_NAME + r"\\?[\"'\]]{0,2}\s*(?P<op>={1,3}|:=|=>|::|:|!==?|,)\s*@?\\?"
    r"(?:(?P<q>[\"'`])(?P<qv>(?:(?!(?P=q)|\\(?P=q))[^\n]){1,200})\\?(?P=q)|"
    r"(?P<oq>[\"'`])?(?P<v>" + _ASCII_VALUE + "{1,200}))",
    re.IGNORECASE,
)
# key then a quoted value with only spaces between (gradle/netrc/CLI style)
_SPACED_ASSIGNMENT = re.compile(
    _KEY_NAME
    + r"\s+(?:(?P<q>[\"'])(?P<qv>[^\"'\n]{1,200})(?P=q)|(?P<v>"
    + _ASCII_VALUE
    + "{3,200}))",
    re.IGNORECASE,
)
_STRONG_RE = re.compile(_STRONG_KEYS, re.IGNORECASE)
# "pass" as the last part of a compound config name (DB_PASS, smtp.pass), not the English word
_PASS_COMPONENT = re.compile(r"[A-Za-z0-9][_\-.]pass$", re.IGNORECASE)
# words that follow "password"/"token" in prose and are not a value
_PROSE_FOLLOWERS = _words(
    """policy policies reset resets manager managers budget budgets limit limits count counts
    field fields prompt prompts hint hints change changes changed rule rules requirement
    requirements strength expiry expiration length protected protection required is was are
    were be been will would should can could may might must has have had for of to and or the
    a an in on at with from by into as that this it its if when then than so but not no yes
    please again too very also just only still now field form page box screen dialog"""
)
_CLAUSE_END = re.compile(r"\s*(?:$|[.,;:!?)\]]|\s(?:and|but|or|so)\b)")
_MORE_WORDS = re.compile(r"\s+[^\W\d_]")


def _rescanning(regex: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Matches that may overlap: a rejected value ("jwtsecret:") can be the next key."""
    pos = 0
    while (m := regex.search(text, pos)) is not None:
        yield m
        pos = max(m.end("key"), pos + 1)


def _keyword_findings(text: str) -> Iterator[Finding]:
    for regex, spaced in ((_ASSIGNMENT, False), (_SPACED_ASSIGNMENT, True)):
        for m in _rescanning(regex, text):
            quoted = m.group("qv") is not None
            value = m.group("qv") if quoted else m.group("v")
            group = "qv" if quoted else "v"
            key = m.group("key")
            strong = bool(_STRONG_RE.search(key) or _PASS_COMPONENT.search(key))
            if _is_placeholder(value):
                continue
            if not spaced and m.group("op") == "," and not (quoted or m.group("oq")):
                continue  # "my password, again" is prose; only ("key", "value") pairs count
            if not quoted and value.lower() in _PROSE_FOLLOWERS:
                continue
            if spaced and not quoted:
                # "password policy", "token budget": only a machine-looking value counts
                if not _looks_like_token(value):
                    continue
            elif not strong:
                if not _looks_like_token(value):
                    continue
            elif not quoted and value.isalpha() and value.islower():
                # "password: reset it tomorrow" is prose; "password: swordfish" is a value
                after = text[m.end(group) :]
                if _MORE_WORDS.match(after) and not _CLAUSE_END.match(after):
                    continue
            yield Finding(
                "password_assignment" if strong else "secret_assignment",
                PASSWORD if strong else KEYWORD,
                m.start(group),
                m.end(group),
            )


# -- natural-language passwords ---------------------------------------------------------------
_NL_PASSWORD = re.compile(
    r"\b(?P<kw>pass(?:word|phrase|code)|passwd|pwd|wi-?fi\s+key|"
    r"(?P<numeric>pin(?:\s+code)?|(?:door|gate|alarm|safe|lock|entry|access)\s+code))"
    r"(?P<mid>\s+(?:for|of|to|on)\s+[^\n.!?]{1,50}?)?"
    r"\s+(?:(?:is|was|has\s+been|got)\s+(?:set|changed|reset)\s+to|(?:set|changed|reset)\s+to|"
    r"will\s+be|is\s+now|is\s+still|is|was)\s*[:\-]?\s*"
    r"(?:(?P<q>[\"'`“‘])(?P<qv>[^\"'`”’\n]{1,100})[\"'`”’]|(?P<v>[^\s]{1,100}))",
    re.IGNORECASE,
)
_NL_NOT_A_VALUE = _words(
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
    protected compromised leaked exposed working broken"""
)


# the same, in French, German, Spanish, Italian and Portuguese (function words and common
# adjectives of "my password is too short / strong / wrong / forgotten")
_NL_NOT_A_VALUE_EU = _words(
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
    if _is_placeholder(value):
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
    clause_end = _CLAUSE_END if lang == "en" else _CLAUSE_END_EU
    return bool(trailing) or bool(clause_end.match(after))


def _nl_password_findings(text: str) -> Iterator[Finding]:
    for m in _NL_PASSWORD.finditer(text):
        quoted = m.group("qv") is not None
        group = "qv" if quoted else "v"
        value = m.group(group)
        if m.group("numeric") and not any(ch.isdigit() for ch in value):
            continue
        if _nl_value_is_secret(value, text[m.end(group) :], quoted):
            yield Finding("natural_language_password", PASSWORD, m.start(group), m.end(group))


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


def _nl_password_eu_findings(text: str) -> Iterator[Finding]:
    if _EU_STEMS.search(text) is None:
        return
    for lang, regex in _NL_PASSWORD_EU:
        for m in regex.finditer(text):
            quoted = m.group("qv") is not None
            group = "qv" if quoted else "v"
            value = m.group(group)
            if m.group("numeric") and not any(ch.isdigit() for ch in value):
                continue
            if m.groupdict().get("weak") and not quoted and not _looks_made_up(value):
                continue
            if _nl_value_is_secret(value, text[m.end(group) :], quoted, lang):
                yield Finding("natural_language_password", PASSWORD, m.start(group), m.end(group))


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


def _context_findings(text: str) -> Iterator[Finding]:
    for m in _PASSWORD_THEN_TOKEN.finditer(text):
        if _looks_like_token(m.group("v")) and not _is_placeholder(m.group("v")):
            yield Finding("password_then_token", PASSWORD, m.start("v"), m.end("v"))
    for m in _CREDENTIAL_CALL.finditer(text):
        if not _is_placeholder(m.group("v")):
            yield Finding("credential_call", PASSWORD, m.start("v"), m.end("v"))


def _zh_password_findings(text: str) -> Iterator[Finding]:
    for m in _ZH_PASSWORD.finditer(text):
        value = m.group("v").rstrip(".,;:!?)]\"'」』”’")
        if len(value) >= 3 and not _is_placeholder(value):
            yield Finding("chinese_password", PASSWORD, m.start("v"), m.start("v") + len(value))


# -- AWS: a bare secret access key beside an access key id ------------------------------------
_AWS_KEY_ID = re.compile(_B + r"(?:AKIA|ASIA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _aws_pair_findings(text: str) -> Iterator[Finding]:
    """40 characters of base64 in a text that also holds an access key id: the pair's secret."""
    if _AWS_KEY_ID.search(text) is None:
        return
    for m in _AWS_SECRET.finditer(text):
        value = m.group(0)
        if _AWS_KEY_ID.fullmatch(value[:20]) is not None and value[20:].isalnum():
            continue  # two ids glued together are not a secret
        mixed = (
            any(ch.isupper() for ch in value)
            and any(ch.islower() for ch in value)
            and any(ch.isdigit() or ch in "/+" for ch in value)
        )
        if mixed and _shannon(value) >= 3.5 and not _is_placeholder(value):
            yield Finding("aws_secret_access_key", VENDOR, m.start(), m.end())


# -- split keywords ----------------------------------------------------------------------------
# "pass word", "pass-word", "Kenn wort", "contra seña": a keyword split where its parts meet
_SPLIT_SEP = r"(?:[ \t]{1,3}|[ \t]?[\-_.·‐‑][ \t]?|-[ \t]*\r?\n[ \t]*)"
_SPLIT_WORDS = re.compile(
    r"(?=[pkcPKC])(?<![^\W\d_])(?:pass"
    + _SPLIT_SEP
    + r"(?:word|wort|phrase|code)|kenn"
    + _SPLIT_SEP
    + "wort|"
    r"contra" + _SPLIT_SEP + r"se(?:ñ|n)a|palavra" + _SPLIT_SEP + r"passe)(?![^\W\d_])",
    re.IGNORECASE,
)
# "p a s s w o r d", "p-a-s-s-w-o-r-d", "s.e.c.r.e.t": letters apart, one separator throughout
_SPACED_KEYWORDS = (
    "password",
    "passwort",
    "passphrase",
    "passcode",
    "passwd",
    "kennwort",
    "secret",
    "senha",
    "contraseña",
    "contrasena",
)


def _letter_spaced(word: str, n: int) -> str:
    sep = rf"(?P<s{n}>[ \t]{{1,2}}|[ \t]?[\-_.·*][ \t]?)"
    return word[0] + sep + f"(?P=s{n})".join(re.escape(ch) for ch in word[1:])


_LETTER_SPACED = re.compile(
    r"(?=[pskcPSKC][ \t\-_.·*])(?<![^\W\d_])(?:"
    + "|".join(_letter_spaced(word, n) for n, word in enumerate(_SPACED_KEYWORDS))
    + r")(?![^\W\d_])",
    re.IGNORECASE,
)


def join_split_keywords(text: str) -> tuple[str, list[int] | None]:
    """`text` with split keywords joined, and each character's position in `text`.

    The positions are None when nothing was joined (the text is returned as it is).
    """
    drop: set[int] = set()
    for regex in (_SPLIT_WORDS, _LETTER_SPACED):
        for m in regex.finditer(text):
            drop.update(i for i in range(m.start(), m.end()) if not text[i].isalpha())
    if not drop:
        return text, None
    positions = [i for i in range(len(text)) if i not in drop]
    return "".join(text[i] for i in positions), positions


# -- URLs, headers, CLI flags ------------------------------------------------------------------
_URL_CREDENTIALS = re.compile(
    r"\b[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/?#@\"'<>]{1,100}):"
    r"(?P<pw>[^\s/?#\"'<>]{1,200})@(?=[A-Za-z0-9\[\-_.%])",
    re.IGNORECASE,
)
_NETRC = re.compile(r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<pw>\S+)", re.IGNORECASE)
_QUERY_SECRET = re.compile(
    r"[?&](?:access_token|token|api[_\-]?key|apikey|key|secret|client_secret|password|pwd|"
    r"sig|signature|auth|auth_token)=(?P<v>[^&\s#\"'<>]{8,})",
    re.IGNORECASE,
)
_BEARER = re.compile(
    r"\b(?:Bearer|Token|SSWS)\s*:?\s+(?P<v>[A-Za-z0-9._~+/\-]{12,}=*)|"
    r"(?i:authorization|x-api-key|api-key|x-auth-token|[a-z\-]*-token)\s*:\s*[\"']?"
    r"(?P<h>[A-Za-z0-9._~+/\-:]{16,}=*)",
)
_CLI_USER_PASS = re.compile(
    r"(?:^|\s)-u\s+[\"']?[^\s\"']+[\"']?\s+-p\s+[\"']?(?P<v>[^\s\"']+)|"
    r"(?:^|\s)(?:-u|--user)\s+[\"']?[^\s:\"']+:(?P<c>[^\s\"'@]{6,})[\"']?(?:\s|$)|"
    r"(?:^|\s)-(?:-?password|Password|-pass|pwd)(?:=|\s+)[\"']?(?P<f>[^\s\"']+)",
)
_CLI_VALUE_GROUPS = ("v", "c", "f")


def _url_and_header_findings(text: str) -> Iterator[Finding]:
    for m in _URL_CREDENTIALS.finditer(text):
        if not _is_placeholder(m.group("pw")):
            yield Finding("url_embedded_password", URL_PASSWORD, m.start("pw"), m.end("pw"))
    for m in _NETRC.finditer(text):
        if not _is_placeholder(m.group("pw")):
            yield Finding("netrc_password", URL_PASSWORD, m.start("pw"), m.end("pw"))
    for m in _QUERY_SECRET.finditer(text):
        if _looks_like_token(m.group("v")) and not _is_placeholder(m.group("v")):
            yield Finding("url_query_secret", URL_PASSWORD, m.start("v"), m.end("v"))
    for m in _BEARER.finditer(text):
        group = "v" if m.group("v") is not None else "h"
        value = m.group(group)
        if _looks_like_token(value) and not _is_placeholder(value):
            yield Finding("authorization_header", HEADER, m.start(group), m.end(group))
    for m in _CLI_USER_PASS.finditer(text):
        for group in _CLI_VALUE_GROUPS:
            value = m.group(group)
            if value is not None and not _is_placeholder(value):
                yield Finding("cli_password", PASSWORD, m.start(group), m.end(group))


# -- gated entropy -----------------------------------------------------------------------------
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_\-+/=.@:])[A-Za-z0-9][A-Za-z0-9_\-+/=.]{18,}[A-Za-z0-9=]")
_URLISH = re.compile(r"(?:https?|ftp)://\S*$|www\.\S*$", re.IGNORECASE)


def _entropy_findings(text: str) -> Iterator[Finding]:
    for m in _CANDIDATE.finditer(text):
        token = m.group(0)
        if "://" in text[max(0, m.start() - 3) : m.start()] or _URLISH.search(
            text[max(0, m.start() - 200) : m.start()]
        ):
            continue  # URL paths are addresses (shared docs, videos), not credentials
        for part in (
            re.split(r"[./]", token) if token.count(".") + token.count("/") > 2 else [token]
        ):
            if _entropy_gate(part):
                start = m.start() + token.find(part)
                yield Finding("high_entropy_token", ENTROPY, start, start + len(part))
                break


def _entropy_gate(token: str) -> bool:
    n = len(token)
    if n < 20:
        return False
    upper = sum(ch.isupper() for ch in token)
    lower = sum(ch.islower() for ch in token)
    digit = sum(ch.isdigit() for ch in token)
    if upper >= 2 and lower >= 2 and digit >= 2:
        return _shannon(token) >= 3.7
    if upper == 0 and digit >= 4 and n >= 32 and re.search(r"[g-z]", token):
        # long lowercase base32/base36 keys; hex (git SHAs, digests) never reach here
        return _shannon(token) >= 4.0 and "-" not in token
    return False


# -- detect-secrets --------------------------------------------------------------------------
_DETECT_SECRETS_PLUGINS: tuple[type[BasePlugin], ...] = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    BasicAuthDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    IbmCloudIamDetector,
    IbmCosHmacDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SoftlayerDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|[^A-Za-z]+")


def _plugin_name(plugin: BasePlugin) -> str:
    name = type(plugin).__name__.removesuffix("Detector")
    return "ds_" + "_".join(part.lower() for part in _CAMEL.split(name) if part)


class CredentialScanner:
    """Finds credentials in one text; built once, then called per write."""

    def __init__(self) -> None:
        self._patterns = _VENDOR_PATTERNS + _STRUCTURE_PATTERNS
        self._plugins: tuple[BasePlugin, ...] = tuple(cls() for cls in _DETECT_SECRETS_PLUGINS)
        self._keyword_plugin = KeywordDetector()
        self._names = {id(p): _plugin_name(p) for p in self._plugins}

    def findings(self, text: str) -> list[Finding]:
        """Every credential finding in `text`, in order of position (spans index `text`)."""
        joined, positions = join_split_keywords(text)
        found = self._scan(joined)
        if positions is not None:
            found = [
                Finding(f.detector, f.family, positions[f.start], positions[f.end - 1] + 1)
                if f.end > f.start
                else f
                for f in found
            ]
        unique = list(dict.fromkeys(found))
        unique.sort(key=lambda f: (f.start, -f.end))
        return unique

    def _scan(self, text: str) -> list[Finding]:
        found: list[Finding] = []
        for pattern in self._patterns:
            for m in pattern.regex.finditer(text):
                found.append(
                    Finding(
                        pattern.detector,
                        pattern.family,
                        m.start(pattern.group),
                        m.end(pattern.group),
                    )
                )
        found.extend(_keyword_findings(text))
        found.extend(_nl_password_findings(text))
        found.extend(_nl_password_eu_findings(text))
        found.extend(_zh_password_findings(text))
        found.extend(_context_findings(text))
        found.extend(_url_and_header_findings(text))
        found.extend(_entropy_findings(text))
        found.extend(_aws_pair_findings(text))
        found.extend(self._detect_secrets_findings(text))
        return found

    def _detect_secrets_findings(self, text: str) -> Iterator[Finding]:
        offset = 0
        for line in text.splitlines(keepends=True):
            for plugin in self._plugins:
                for value in plugin.analyze_string(line):
                    yield self._locate(self._names[id(plugin)], DETECT_SECRETS, line, value, offset)
            for value in self._keyword_plugin.analyze_string(line):
                if value and not _is_placeholder(value) and not value.isspace():
                    yield self._locate("ds_keyword", DETECT_SECRETS, line, value, offset)
            offset += len(line)

    @staticmethod
    def _locate(detector: str, family: str, line: str, value: str, offset: int) -> Finding:
        at = line.find(value)
        start = offset + max(at, 0)
        return Finding(detector, family, start, start + (len(value) if at >= 0 else len(line)))
