"""Short and indirect ways of giving a password.

- `PIN: 4512`, `pin=4512`, `PIN 4512`: a PIN needs four to twelve digits;
- `login alice / Tr0ub4dor&3`, `user/pass: alice/…`, `creds alice | …`: a login and a value
  that looks made up (a digit, a symbol or inner capitals) or is quoted;
- passphrases: "my passphrase is correct horse battery staple" (also seed, recovery and
  mnemonic phrases): three or more words, none of them a function word or prose
  ("my passphrase is too long to remember" stays prose);
- the secret in the next sentence: "…the wifi password is written on the whiteboard. It is
  Zq7!vR2#pL9x" — within 200 characters after a password word, a sentence that is a made-up
  value alone, or "it is / it's / that's / use / try / here it is:" and one.

(`pw` and `pwd` as keys and in "my pw is …" are in `_keywords` and `_nl_passwords`.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.screening._model import Finding
from memvault.screening._secret_values import PASSWORD, is_placeholder, looks_made_up, words

_PIN = re.compile(
    r"(?<![A-Za-z])(?:(?i:pin)(?:[\s\-_]?(?i:code|number|no\.?|#))?\s*(?:[:=#]|(?i:is|was))|"
    r"(?-i:PIN))\s*(?P<v>\d{4,12})(?![\d.,/:\-]\d)"
)
_LOGIN = re.compile(
    r"\b(?:log[\s\-]?in|user(?:name)?(?:\s*/\s*pass(?:word)?)?|account|creds?|credentials)\b"
    r"\s*(?:is|:|=|-)?\s*(?P<u>[\w.@+\-]{2,64})\s*(?:/|\||\\)\s*"
    r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\n]{3,100})(?P=q)|(?P<v>\S{4,100}))",
    re.IGNORECASE,
)
_PHRASE = re.compile(
    r"\b(?:pass\s?phrase|(?:seed|recovery|secret|mnemonic)\s+(?:phrase|words)|mnemonic)\b"
    r"(?:\s+(?:for|of|to|on)\s+[^\n.!?:]{1,40}?)?"
    r"\s*(?:(?:is|was|is\s+now|reads)\s*:?|:|=)\s*"
    r"(?:(?P<q>[\"'`“‘])(?P<qv>[^\"'`”’\n]{3,200})[\"'`”’]|"
    r"(?P<v>[^\W\d_]{2,20}(?:[ \-][^\W\d_]{2,20}){2,23}))",
    re.IGNORECASE,
)
_FUNCTION = words(
    """a an the my your his her their our its this that these those it is was are were be been
    being am will would should can could may might must shall has have had do does did not no
    to too very so also just only still now then than of in on at for with from by into onto
    about as and or but if when because while which who what where how something nothing
    anything everything somewhere someone nobody anybody everybody you he she we they me him
    us them i long short hard easy simple strong weak same different written stored saved
    kept somewhere here there secret private safe secure new old"""
)
_KEYWORD = re.compile(
    r"\b(?:pass(?:word|phrase|code)|passwd|pwd|pw|pin\s+code|(?:door|gate|alarm)\s+code)s?\b|"
    r"密码|密碼|パスワード|비밀번호|пароль|mot de passe|passwort|kennwort|contraseña|senha",
    re.IGNORECASE,
)
_NEXT = re.compile(
    r"(?:[.!?;:。！？]\s+|\n\s*|[。！？])(?:(?i:it\s+is|it's|it’s|that\s+is|that's|which\s+is|use|try|type|enter|"
    r"it\s+reads|here\s+it\s+is|here's\s+it)\s*:?\s*)?"
    r"(?P<q>[\"'`“‘])?(?P<v>[!-~]{6,100}?)[\"'`”’]?(?=[.!?;,]?\s*$|[.!?;,]?\s+[A-Z]|\s*\n)"
)
_LEAD = re.compile(
    r"(?i)\s*(?:it\s+is|it's|it’s|that\s+is|that's|which\s+is|use|try|type|enter|it\s+reads|here\s+it\s+is|here's\s+it)"
)


def _classes(value: str) -> int:
    return (
        any(ch.isupper() for ch in value)
        + any(ch.islower() for ch in value)
        + any(ch.isdigit() for ch in value)
        + any(not ch.isalnum() for ch in value)
    )


def pin_findings(text: str) -> Iterator[Finding]:
    """`PIN: 4512`, `pin code is 4512`, `PIN 4512`."""
    for m in _PIN.finditer(text):
        if len(set(m.group("v"))) > 1 or len(m.group("v")) <= 4:
            yield Finding("pin", PASSWORD, m.start("v"), m.end("v"))


def login_findings(text: str) -> Iterator[Finding]:
    """`login alice / Tr0ub4dor&3` and the like: a login, a slash or bar, a made-up value."""
    for m in _LOGIN.finditer(text):
        quoted = m.group("qv") is not None
        group = "qv" if quoted else "v"
        value = m.group(group) if quoted else m.group(group).rstrip(".,;:!?)]\"'")
        if is_placeholder(value) or not (quoted or looks_made_up(value)):
            continue
        if not quoted and "/" in value:
            continue  # "login page / docs/setup.md": a path, not a password
        yield Finding("login_password", PASSWORD, m.start(group), m.start(group) + len(value))


def passphrase_findings(text: str) -> Iterator[Finding]:
    """A passphrase of several words: "my passphrase is correct horse battery staple"."""
    for m in _PHRASE.finditer(text):
        if m.group("qv") is not None:
            if not is_placeholder(m.group("qv")):
                yield Finding("passphrase", PASSWORD, m.start("qv"), m.end("qv"))
            continue
        phrase = [w.lower() for w in re.split(r"[ \-]", m.group("v"))]
        if any(w in _FUNCTION or w.endswith(("ed", "ly", "ing")) for w in phrase[:4]):
            continue
        yield Finding("passphrase", PASSWORD, m.start("v"), m.end("v"))


def next_sentence_findings(text: str) -> Iterator[Finding]:
    """A made-up value in the sentence after one that names a password."""
    seen_end = -1
    for k in _KEYWORD.finditer(text):
        window_end = min(len(text), k.end() + 200)
        for m in _NEXT.finditer(text, k.end(), window_end):
            if m.start("v") <= seen_end:
                continue
            value = m.group("v")
            if is_placeholder(value) or "://" in value or "@" in value:
                continue
            lead = _LEAD.match(text, m.start() + 1) is not None or bool(
                _LEAD.match(text, m.start())
            )
            quoted = m.group("q") is not None
            strong = _classes(value) >= 3 and len(value) >= 8
            if (lead and (quoted or (looks_made_up(value) and _classes(value) >= 2))) or strong:
                seen_end = m.end("v")
                yield Finding("password_next_sentence", PASSWORD, m.start("v"), m.end("v"))
