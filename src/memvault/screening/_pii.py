"""PII detection: emails, phones, cards, IBANs, US SSNs, IPs and national ids.

Each detector validates what its pattern finds (Luhn for cards, mod-97 for IBANs, the SSA's
rules for SSNs, `ipaddress` for IPs, `phonenumbers` for phones), so that order numbers, dates and
version strings stay. Person names and street addresses are not detected: the screen keeps them.

Redaction writes a typed placeholder, `[PHONE]`, or `[PHONE:7f3a9c]` with a keyed pseudonym of
the value in a canonical form (`canonical_value`), so two notes that differ only in a number stay
two notes and the same number matches across notes. Placeholders already in a text are never
read as PII again: re-screening a stored text changes nothing.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator

import phonenumbers
from phonenumbers import Leniency, NumberParseException, PhoneNumberFormat, PhoneNumberMatcher

from memvault.screening._model import Finding
from memvault.screening._national_ids import (
    deobfuscate_email,
    national_id_spans,
    obfuscated_email_spans,
)

PII = "pii"

PSEUDONYM_RE = re.compile(r"[0-9a-f]{4,16}")
"""What a pseudonym function must return: 4 to 16 lowercase hex characters."""
# a placeholder this screen wrote (or the lower-case `[phone]` of earlier versions)
PLACEHOLDER_RE = re.compile(
    r"\[(?:EMAIL|PHONE|CARD|IBAN|SSN|IP|NATIONAL_ID)(?::[0-9a-f]{4,16})?\]|"
    r"\[(?:email|phone|card|iban|ssn|ip)\]"
)

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)

# Cards: 12-19 digits, either unbroken or in the printed groupings (4-4-4-x, Amex 4-6-5).
_CARD = re.compile(
    r"(?<![\d+\-.])(?:\d{12,19}|\d{4}([ \-])\d{4}\1\d{4}\1\d{1,7}|\d{4}([ \-])\d{6}\2\d{4,5})"
    r"(?![\d\-]|\.\d)"
)

_SSN = re.compile(r"(?<![\d\-])(\d{3})([\- ])(\d{2})\2(\d{4})(?![\d\-])")
_SSN_CONTEXT = re.compile(r"(?i)\b(?:ssn|social\s+security)\b")

_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ ]?[A-Za-z0-9]){10,32}")
# ISO 13616 lengths for the countries that issue IBANs
_IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip

_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d|\w)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")

PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR")
"""Regions whose national formats the phone detector reads; numbers with `+` parse anywhere."""
_MIN_PHONE_DIGITS = 7
_DATE_LIKE = re.compile(
    r"^(?:\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d{1,2}[\-/.]\d{1,2}[\-/.]\d{2,4}|"
    r"(?:19|20)\d{2}\s*[\-–]\s*(?:19|20)\d{2})$"
)

# "17151 2450 Crown St": a building and a street number read as a local phone number
_TWO_GROUPS = re.compile(r"^\d{2,5} \d{2,5}$")
_TRUNK_BEFORE = re.compile(r"(?<![\d\-+.])\(?0\d{1,4}\)?[ \-.]$")
_WORD_AFTER = re.compile(r"\s+[A-Za-z]")
_PHONE_CONTEXT = re.compile(
    r"(?i)(?:phone|call|tel\b|mobile|cell|number|fax|reach|text|whatsapp|contact|电话|電話|手机|手機)"
)

_RANGE_CHARS = frozenset("~～—–－")
_DECIMAL = re.compile(r"^\d+\.\d+$")
_NUMBER_PAIR = re.compile(r"^\(?(\d{2,5})\)?\s*[\-/]\s*(\d{2,5})\)?$")
_ISBN_BEFORE = re.compile(r"(?i)(?:isbn|国际标准书号|國際標準書號)[\s:：\-]*$")


def _not_a_phone(raw: str, text: str, start: int) -> bool:
    """Year spans, number ranges, decimals, ISBNs and numbers inside URLs."""
    raw = raw.strip(" ()（）[]【】")
    if _RANGE_CHARS.intersection(raw) or _DECIMAL.match(raw):
        return True
    pair = _NUMBER_PAIR.match(raw.replace("]", "-").replace("[", ""))
    if pair and len(pair.group(1)) == len(pair.group(2)) and pair.group(1) <= pair.group(2):
        return True  # "1993-1996", "6415/6416", "0700-1620": a range or a pair, not a number
    if _ISBN_BEFORE.search(text, max(0, start - 12), start):
        return True
    token_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start)) + 1
    return "/" in text[token_start:start] or "://" in text[token_start:start]


def _looks_like_street_number(text: str, start: int, end: int) -> bool:
    if not _WORD_AFTER.match(text, end):
        return False
    return not _PHONE_CONTEXT.search(text, max(0, start - 40), start)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_ok(compact: str) -> bool:
    rearranged = compact[4:] + compact[:4]
    numeric = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(numeric) % 97 == 1


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


def _email_spans(text: str) -> Iterator[Finding]:
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        yield Finding("email", PII, m.start(), m.end())


def _card_spans(text: str) -> Iterator[Finding]:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if len(set(digits)) > 1 and _luhn_ok(digits):
            yield Finding("card", PII, m.start(), m.end())


def _iban_spans(text: str) -> Iterator[Finding]:
    for m in _IBAN.finditer(text):
        raw = m.group(0)
        country = raw[:2].upper()
        length = _IBAN_LENGTHS.get(country)
        if length is None:
            continue
        compact_positions = [i for i, ch in enumerate(raw) if ch != " "]
        if len(compact_positions) < length:
            continue
        end = compact_positions[length - 1] + 1
        if end < len(raw) and raw[end] != " ":
            continue  # glued to more letters or digits: not this IBAN
        compact = raw[:end].replace(" ", "").upper()
        if compact[2:4].isdigit() and _iban_ok(compact):
            yield Finding("iban", PII, m.start(), m.start() + end)


def _ssn_spans(text: str) -> Iterator[Finding]:
    for m in _SSN.finditer(text):
        if m.group(2) == " " and not _SSN_CONTEXT.search(text[max(0, m.start() - 40) : m.start()]):
            continue
        if _ssn_ok(m.group(1), m.group(3), m.group(4)):
            yield Finding("ssn", PII, m.start(), m.end())


def _ip_spans(text: str) -> Iterator[Finding]:
    if "." in text:
        for m in _IPV4.finditer(text):
            try:
                ipaddress.IPv4Address(m.group(0))
            except ValueError:
                continue
            yield Finding("ip", PII, m.start(), m.end())
    if text.count(":") >= 2:
        for m in _IPV6.finditer(text):
            candidate = m.group(0)
            if candidate.count(":") < 2 or len(candidate) < 3:
                continue
            try:
                ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            yield Finding("ip", PII, m.start(), m.end())


def _phone_spans(text: str) -> Iterator[Finding]:
    if sum(ch.isdigit() for ch in text) < _MIN_PHONE_DIGITS:
        return
    seen: set[tuple[int, int]] = set()
    for region in PHONE_REGIONS:
        for match in PhoneNumberMatcher(text, region, leniency=Leniency.POSSIBLE):
            span = (match.start, match.end)
            if span in seen:
                continue
            seen.add(span)
            raw = match.raw_string
            if _DATE_LIKE.match(raw.strip()) or _not_a_phone(raw, text, match.start):
                continue
            digits = sum(ch.isdigit() for ch in raw)
            if digits < _MIN_PHONE_DIGITS:
                continue
            if not phonenumbers.is_possible_number(match.number):
                continue
            if _TWO_GROUPS.match(raw) and _looks_like_street_number(text, match.start, match.end):
                continue
            start = match.start
            trunk = _TRUNK_BEFORE.search(text, max(0, start - 8), start)
            if trunk is not None:
                start = trunk.start()  # "0393 1144137": the area code the matcher left out
            yield Finding("phone", PII, start, match.end)


def _canonical_phone(raw: str) -> str:
    """E.164 under the first region where the number is valid (`+` numbers: their own); digits
    only when no region validates it."""
    regions: tuple[str | None, ...] = (None,) if raw.lstrip(" (").startswith("+") else PHONE_REGIONS
    for region in regions:
        try:
            number = phonenumbers.parse(raw, region)
        except NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, PhoneNumberFormat.E164)
    return re.sub(r"\D", "", raw)


def canonical_value(pii_type: str, raw: str) -> str:
    """The form of a PII value that is pseudonymised, so that spellings of one value agree.

    phone: E.164 (digits only when no region validates it); email: casefolded; card, SSN: digits;
    IBAN: upper-case letters and digits; IP: `ipaddress`'s canonical form.
    """
    if pii_type == "phone":
        return _canonical_phone(raw)
    if pii_type == "email":
        return deobfuscate_email(raw).casefold()
    if pii_type == "national_id":
        return re.sub(r"[^A-Za-z0-9]", "", raw).upper()
    if pii_type in ("card", "ssn"):
        return re.sub(r"\D", "", raw)
    if pii_type == "iban":
        return re.sub(r"[^A-Za-z0-9]", "", raw).upper()
    if pii_type == "ip":
        return str(ipaddress.ip_address(raw))
    raise ValueError(f"unknown PII type: {pii_type}")


def placeholder(pii_type: str, pseudonym: str | None) -> str:
    """`[PHONE]` or `[PHONE:7f3a9c]`."""
    return f"[{pii_type.upper()}:{pseudonym}]" if pseudonym else f"[{pii_type.upper()}]"


# Earlier detectors win overlaps: an email's digits are not a phone, an IBAN's not a card.
_DETECTORS = (
    ("email", _email_spans),
    ("email", obfuscated_email_spans),
    ("national_id", national_id_spans),
    ("iban", _iban_spans),
    ("card", _card_spans),
    ("ssn", _ssn_spans),
    ("ip", _ip_spans),
    ("phone", _phone_spans),
)


def _checksum_shaped(text: str) -> list[tuple[int, int]]:
    """Spans shaped like a card, IBAN or SSN, valid or not.

    A number that fails its checksum is kept as it is, and its digits must not then be read
    as a phone number.
    """
    spans = [m.span() for m in _CARD.finditer(text)]
    spans += [(f.start, f.end) for f in national_id_spans(text)]
    spans += [m.span() for m in _SSN.finditer(text) if m.group(2) == "-"]
    spans += [m.span() for m in _IBAN.finditer(text) if m.group(0)[:2].upper() in _IBAN_LENGTHS]
    return spans


def _glued(text: str, start: int, end: int) -> bool:
    """Whether a span starts or ends inside a run of ASCII letters and digits."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    inner_first, inner_last = text[start], text[end - 1]
    return (before.isascii() and before.isalnum() and inner_first.isalnum()) or (
        after.isascii() and after.isalnum() and inner_last.isalnum()
    )


def pii_findings(text: str) -> list[Finding]:
    """Non-overlapping PII findings in `text`, in order of position.

    Placeholders already in the text (`[PHONE:7f3a9c]`, `[email]`) are not PII.
    """
    kept: list[Finding] = []
    blocked: list[tuple[int, int]] | None = None
    placeholders = [m.span() for m in PLACEHOLDER_RE.finditer(text)] if "[" in text else []
    for name, detect in _DETECTORS:
        for finding in detect(text):
            if _glued(text, finding.start, finding.end):
                continue  # "X1234567": part of a longer token, never cut in half
            if not all(finding.end <= k.start or finding.start >= k.end for k in kept):
                continue
            if any(finding.start < end and finding.end > start for start, end in placeholders):
                continue
            if name == "phone":
                blocked = _checksum_shaped(text) if blocked is None else blocked
                if any(finding.start < end and finding.end > start for start, end in blocked):
                    continue
            kept.append(finding)
    kept.sort(key=lambda f: f.start)
    return kept


Pseudonym = Callable[[str, str], str]
"""`pseudonym(pii_type, canonical_value) -> short lowercase hex`, e.g. a truncated HMAC."""


def redact(
    text: str,
    findings: list[Finding],
    pseudonym: Pseudonym | None = None,
    values_from: str | None = None,
) -> str:
    """`text` with each finding replaced by its typed placeholder; findings must not overlap.

    With `pseudonym`, the placeholder carries `pseudonym(type, canonical value)`, the value read
    from `values_from` (same positions as `text`; default `text` itself).
    """
    source = text if values_from is None else values_from
    parts: list[str] = []
    cursor = 0
    for f in sorted(findings, key=lambda f: f.start):
        parts.append(text[cursor : f.start])
        tag: str | None = None
        if pseudonym is not None:
            tag = pseudonym(f.detector, canonical_value(f.detector, source[f.start : f.end]))
            tag = tag.lower() if isinstance(tag, str) else tag
            if not isinstance(tag, str) or PSEUDONYM_RE.fullmatch(tag) is None:
                raise ValueError("pseudonym must return 4 to 16 hex characters")
        parts.append(placeholder(f.detector, tag))
        cursor = f.end
    parts.append(text[cursor:])
    return "".join(parts)
