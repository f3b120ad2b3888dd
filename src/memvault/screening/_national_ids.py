"""National identity numbers, passport numbers and obfuscated email addresses (PII).

Each national id has a shape and the checksum python-stdnum validates; the ones whose shape is
also a plain run of digits (Aadhaar, BSN, SIN, PESEL, the German tax id, Japan's My Number,
Sweden's personnummer, South Africa's id) count only after a word that names them, so order
numbers stay. Passport numbers (letters and digits, no public checksum) count only after
"passport" (护照, パスポート, Reisepass, passeport, pasaporte, passaporto). Everything found
here is the `national_id` PII type, `[NATIONAL_ID]`.

Obfuscated emails ("alice.smith (at) example (dot) com", "bob [at] example [dot] org",
"carol at example dot com") are the `email` type; `deobfuscate_email` gives the address.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.cn import ric
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.jp import in_ as my_number
from stdnum.kr import rrn
from stdnum.mx import curp
from stdnum.nl import bsn
from stdnum.pl import pesel
from stdnum.se import personnummer
from stdnum.za import idnr as za_idnr

from memvault.screening._model import Finding
from memvault.screening._secret_values import words

PII = "pii"
_B, _E = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"


@dataclass(frozen=True, slots=True)
class _Id:
    regex: re.Pattern[str]
    valid: Callable[[str], bool]
    context: re.Pattern[str] | None = None


def _ctx(words: str) -> re.Pattern[str]:
    return re.compile(words, re.IGNORECASE)


_NINO_BAD = {"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"}


def _nino_ok(value: str) -> bool:
    return value.replace(" ", "")[:2].upper() not in _NINO_BAD


_IDS: tuple[_Id, ...] = (
    _Id(re.compile(_B + r"\d{17}[\dXx]" + _E), ric.is_valid),
    _Id(re.compile(_B + r"\d{3}\.\d{3}\.\d{3}-\d{2}" + _E), cpf.is_valid),
    _Id(re.compile(_B + r"\d{11}" + _E), cpf.is_valid, _ctx(r"\bCPF\b")),
    _Id(re.compile(_B + r"\d{8}-?[A-Z]" + _E), dni.is_valid),
    _Id(re.compile(_B + r"[XYZ]-?\d{7}-?[A-Z]" + _E), nie.is_valid),
    _Id(re.compile(_B + r"[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]" + _E), codicefiscale.is_valid),
    _Id(re.compile(_B + r"[A-Z]{4}\d{6}[HM][A-Z]{5}[A-Z0-9]\d" + _E), curp.is_valid),
    _Id(re.compile(_B + r"\d{6}-\d{7}" + _E), rrn.is_valid),
    _Id(
        re.compile(_B + r"[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}" + _E),
        nir.is_valid,
    ),
    _Id(
        re.compile(_B + r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]" + _E),
        _nino_ok,
        _ctx(r"\b(?:NI|NINO|national\s+insurance)\b"),
    ),
    _Id(
        re.compile(_B + r"\d{4} ?\d{4} ?\d{4}" + _E), aadhaar.is_valid, _ctx(r"aadh?aar|आधार|UIDAI")
    ),
    _Id(
        re.compile(_B + r"\d{2} ?\d{3} ?\d{3} ?\d{3}" + _E),
        idnr.is_valid,
        _ctx(r"steuer|\bIdNr\b|identifikationsnummer|tax\s+id"),
    ),
    _Id(
        re.compile(_B + r"\d{4} ?\d{4} ?\d{4}" + _E),
        my_number.is_valid,
        _ctx(r"my\s*number|マイナンバー|個人番号"),
    ),
    _Id(re.compile(_B + r"\d{9}" + _E), bsn.is_valid, _ctx(r"\bBSN\b|burgerservicenummer")),
    _Id(
        re.compile(_B + r"\d{3}[ \-]?\d{3}[ \-]?\d{3}" + _E),
        sin.is_valid,
        _ctx(r"\bSIN\b|social\s+insurance"),
    ),
    _Id(re.compile(_B + r"\d{11}" + _E), pesel.is_valid, _ctx(r"\bPESEL\b")),
    _Id(
        re.compile(_B + r"(?:\d{2})?\d{6}[\-+]?\d{4}" + _E),
        personnummer.is_valid,
        _ctx(r"personnummer"),
    ),
    _Id(re.compile(_B + r"\d{13}" + _E), za_idnr.is_valid, _ctx(r"\bID\b|identity")),
)
_PASSPORT = re.compile(
    r"(?:passport|护照|護照|パスポート|여권|reisepass|passeport|pasaporte|passaporto|паспорт)"
    r"[^\n.;]{0,24}?"
    + _B
    + r"(?P<v>(?=[A-Z0-9]*\d)[A-Z]{0,2}[0-9][A-Z0-9]{5,8}|[A-Z]{1,2}\d{6,8})"
    + _E,
    re.IGNORECASE,
)
_CONTEXT_WINDOW = 40
_DIGITS_HINT = re.compile(r"\d{3}")


def national_id_spans(text: str) -> Iterator[Finding]:
    """National ids (validated by their checksums) and passport numbers after "passport"."""
    if _DIGITS_HINT.search(text) is None:
        return
    for spec in _IDS:
        for m in spec.regex.finditer(text):
            if spec.context is not None and not spec.context.search(
                text, max(0, m.start() - _CONTEXT_WINDOW), m.start()
            ):
                continue
            compact = re.sub(r"[\s.\-]", "", m.group(0))
            try:
                ok = spec.valid(compact)
            except Exception:  # a validator that rejects the shape outright
                ok = False
            if ok:
                yield Finding("national_id", PII, m.start(), m.end())
    for m in _PASSPORT.finditer(text):
        if len(m.group("v")) >= 6:
            yield Finding("national_id", PII, m.start("v"), m.end("v"))


_AT = r"(?:\s*[\(\[\{<]\s*at\s*[\)\]\}>]\s*|\s+at\s+|\s*@\s*)"
_DOT = r"(?:\s*[\(\[\{<]\s*dot\s*[\)\]\}>]\s*|\s+dot\s+|\.)"
_OBFUSCATED_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])(?P<local>[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}?)"
    + _AT
    + r"(?P<domain>[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:"
    + _DOT
    + r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*"
    + _DOT
    + r"(?P<tld>[A-Za-z]{2,24}))"
    r"(?![A-Za-z0-9\-])",
    re.IGNORECASE,
)
_PLAIN_WORD_TLDS = words(
    "com org net io edu gov co uk de fr cn jp ru br in it es nl au ca us info biz me dev ai"
)
_NOT_A_LOCAL_PART = words(
    """i am is are was were be me us him her them it we you they meet see stay staying work home
    arrive arrived look looking good back out up"""
)
_OBFUSCATION = re.compile(r"[\(\[\{<]\s*(?:at|dot)\s*[\)\]\}>]|\s(?:at|dot)\s", re.IGNORECASE)


def obfuscated_email_spans(text: str) -> Iterator[Finding]:
    """Email addresses written with (at)/(dot), [at]/[dot] or " at "/" dot "."""
    lowered = text.lower()
    if "at" not in lowered or (
        "dot" not in lowered and "at" + ")" not in lowered and "at]" not in lowered
    ):
        return
    for m in _OBFUSCATED_EMAIL.finditer(text):
        raw = m.group(0)
        if _OBFUSCATION.search(raw) is None:
            continue  # a plain address: the email detector's
        bracketed = re.search(r"[\(\[\{<]\s*(?:at|dot)\s*[\)\]\}>]", raw, re.IGNORECASE)
        if bracketed is None and (
            m.group("tld").lower() not in _PLAIN_WORD_TLDS
            or m.group("local").lower() in _NOT_A_LOCAL_PART
        ):
            continue  # "meet at noon dot something": only known TLDs in the all-words form
        yield Finding("email", PII, m.start(), m.end())


def deobfuscate_email(raw: str) -> str:
    """`alice (at) example (dot) com` → `alice@example.com` (other addresses unchanged)."""
    out = re.sub(_AT, "@", raw, count=1, flags=re.IGNORECASE)
    return re.sub(_DOT, ".", out, flags=re.IGNORECASE)
