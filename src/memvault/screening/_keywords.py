"""Keyword assignments (`password: ...`, `api_key = "..."`, `pw:...`).

The scanner joins split keywords first (`_joining`), so "pass word", "pass-word" and
"p a s s w o r d" read as "password" here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.screening._model import Finding
from memvault.screening._secret_values import (
    CLAUSE_END,
    KEYWORD,
    PASSWORD,
    is_placeholder,
    looks_like_token,
    words,
)

# -- keyword assignments ----------------------------------------------------------------------
_STRONG_KEYS = (
    r"password|passwd|passwort|kennwort|passphrase|passcode|pwd|(?<![A-Za-z])pw(?![a-z])|secret|wachtwoord|contrase(?:ñ|n)a|senha|"
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
_PROSE_FOLLOWERS = words(
    """policy policies reset resets manager managers budget budgets limit limits count counts
    field fields prompt prompts hint hints change changes changed rule rules requirement
    requirements strength expiry expiration length protected protection required is was are
    were be been will would should can could may might must has have had for of to and or the
    a an in on at with from by into as that this it its if when then than so but not no yes
    please again too very also just only still now field form page box screen dialog"""
)
_MORE_WORDS = re.compile(r"\s+[^\W\d_]")


def _rescanning(regex: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """Matches that may overlap: a rejected value ("jwtsecret:") can be the next key."""
    pos = 0
    while (m := regex.search(text, pos)) is not None:
        yield m
        pos = max(m.end("key"), pos + 1)


def keyword_findings(text: str) -> Iterator[Finding]:
    """Values assigned to a secret-like key: `password: ...`, `api_key = "..."`, `-pass "..."`."""
    for regex, spaced in ((_ASSIGNMENT, False), (_SPACED_ASSIGNMENT, True)):
        for m in _rescanning(regex, text):
            quoted = m.group("qv") is not None
            value = m.group("qv") if quoted else m.group("v")
            group = "qv" if quoted else "v"
            key = m.group("key")
            strong = bool(_STRONG_RE.search(key) or _PASS_COMPONENT.search(key))
            if is_placeholder(value):
                continue
            if not spaced and m.group("op") == "," and not (quoted or m.group("oq")):
                continue  # "my password, again" is prose; only ("key", "value") pairs count
            if not quoted and value.lower() in _PROSE_FOLLOWERS:
                continue
            if spaced and not quoted:
                # "password policy", "token budget": only a machine-looking value counts
                if not looks_like_token(value):
                    continue
            elif not strong:
                if not looks_like_token(value):
                    continue
            elif not quoted and value.isalpha() and value.islower():
                # "password: reset it tomorrow" is prose; "password: swordfish" is a value
                after = text[m.end(group) :]
                if _MORE_WORDS.match(after) and not CLAUSE_END.match(after):
                    continue
            yield Finding(
                "password_assignment" if strong else "secret_assignment",
                PASSWORD if strong else KEYWORD,
                m.start(group),
                m.end(group),
            )
