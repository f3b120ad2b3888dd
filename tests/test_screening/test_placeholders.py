"""Typed placeholders with a keyed pseudonym: facts stay apart, spellings agree, re-screening
changes nothing."""

from __future__ import annotations

import hashlib
import hmac
import re

import pytest

from memvault.screening import PiiAction, Screen, ScreenPolicy, Verdict
from memvault.screening._pii import canonical_value

KEY = b"tenant-index-key-for-tests"


def pseudonym(kind: str, value: str) -> str:
    return hmac.new(KEY, f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()[:6]


def other_tenant(kind: str, value: str) -> str:
    return hmac.new(b"another-tenant", f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()[
        :6
    ]


def test_check_without_pseudonym_writes_upper_case_type(screen: Screen) -> None:
    result = screen.check("call +1 415-555-0132 or mail ops@example.com")
    assert result.text == "call [PHONE] or mail [EMAIL]"
    assert result.redacted_types == ("phone", "email")


@pytest.mark.parametrize(
    ("kind", "spellings"),
    [
        ("PHONE", ["+1 415-555-0132", "(415) 555-0132", "415.555.0132", "+14155550132"]),
        ("PHONE", ["020 7946 0958", "+44 20 7946 0958", "+44 (0)20 7946 0958"]),
        ("EMAIL", ["Dana.K@Example.org", "dana.k@example.org", "DANA.K@EXAMPLE.ORG"]),
        ("CARD", ["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111"]),
        ("IBAN", ["GB82 WEST 1234 5698 7654 32", "GB82WEST12345698765432"]),
        ("IP", ["2001:db8::8a2e:370:7334", "2001:DB8:0:0:0:8A2E:370:7334"]),
        ("SSN", ["123-45-6789", "SSN 123 45 6789"]),
    ],
)
def test_check_pseudonym_same_for_spellings_of_one_value(
    screen: Screen, kind: str, spellings: list[str]
) -> None:
    tags = set()
    for spelling in spellings:
        result = screen.check(f"reach the desk via {spelling} on Mondays", pseudonym=pseudonym)
        assert result.verdict is Verdict.ACCEPT
        found = re.findall(r"\[[A-Z]+:[0-9a-f]{6}\]", result.text)
        assert len(found) == 1 and found[0].startswith(f"[{kind}:"), result.text
        tags.add(found[0])
    assert len(tags) == 1


def test_check_pseudonym_keeps_two_facts_apart(screen: Screen) -> None:
    first = screen.check("Dana's mobile is +1 415-555-0132", pseudonym=pseudonym)
    second = screen.check("Dana's mobile is +1 415-555-0199", pseudonym=pseudonym)
    assert first.text != second.text
    assert screen.check("Dana's mobile is +1 415-555-0132").text == (
        screen.check("Dana's mobile is +1 415-555-0199").text
    )


def test_check_pseudonym_differs_between_types_and_keys(screen: Screen) -> None:
    text = "card 4111 1111 1111 1111 on file"
    assert screen.check(text, pseudonym=pseudonym).text != (
        screen.check(text, pseudonym=other_tenant).text
    )
    assert pseudonym("card", "4111111111111111") != pseudonym("phone", "4111111111111111")


def test_check_pseudonym_receives_canonical_value_never_raw(screen: Screen) -> None:
    seen: list[tuple[str, str]] = []

    def recording(kind: str, value: str) -> str:
        seen.append((kind, value))
        return "abc123"

    result = screen.check(
        "Mail Dana.K@Example.org or call (415) 555-0132, host 2001:DB8::1",
        pseudonym=recording,
    )
    assert result.text == "Mail [EMAIL:abc123] or call [PHONE:abc123], host [IP:abc123]"
    assert seen == [
        ("email", "dana.k@example.org"),
        ("phone", "+14155550132"),
        ("ip", "2001:db8::1"),
    ]


def test_check_pseudonym_not_called_for_allowed_type(screen: Screen) -> None:
    calls: list[str] = []

    def recording(kind: str, value: str) -> str:
        calls.append(kind)
        return "abc123"

    policy = ScreenPolicy(pii={"email": PiiAction.ALLOW})
    result = screen.check("mail dana@example.org today", policy=policy, pseudonym=recording)
    assert result.text == "mail dana@example.org today"
    assert calls == []


@pytest.mark.parametrize("bad", ["", "xyz123", "abc", "0123456789abcdef0", "ab:cd1"])
def test_check_pseudonym_returning_non_hex_raises_without_value(screen: Screen, bad: str) -> None:
    with pytest.raises(ValueError) as info:
        screen.check("mail dana@example.org today", pseudonym=lambda kind, value: bad)
    assert "dana" not in str(info.value)


@pytest.mark.parametrize(
    ("kind", "raw", "canonical"),
    [
        ("phone", "(415) 555-0132", "+14155550132"),
        ("phone", "0049 30 1234567", "+49301234567"),
        ("phone", "12345", "12345"),  # no region validates it: digits only
        ("email", "Dana.K@Example.ORG", "dana.k@example.org"),
        ("card", "4111-1111 1111-1111", "4111111111111111"),
        ("iban", "gb82 west 1234 5698 7654 32", "GB82WEST12345698765432"),
        ("ssn", "123 45 6789", "123456789"),
        ("ip", "2001:0DB8:0000::0001", "2001:db8::1"),
    ],
)
def test_canonical_value_per_type(kind: str, raw: str, canonical: str) -> None:
    assert canonical_value(kind, raw) == canonical


# -- a second screening (PATCH re-screens stored text) changes nothing --------------------------
SAMPLES = [
    "call +1 415-555-0132 or mail ops@example.com, then ops2@example.com",
    "Pay rent to GB82 WEST 1234 5698 7654 32 monthly; card 4111 1111 1111 1111",
    "His SSN is 123-45-6789 and the NAS lives at 192.168.1.20 or 2001:db8::8a2e:370:7334",
    "password: 4155550132 is not here; PIN code written as +44 20 7946 0958",
    "电话：+86 138 0013 8000，邮箱 ops@example.com。",
]


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("with_pseudonym", [True, False])
def test_check_stored_text_rescreened_unchanged(
    screen: Screen, text: str, with_pseudonym: bool
) -> None:
    keyed = pseudonym if with_pseudonym else None
    first = screen.check(text, pseudonym=keyed)
    if first.verdict is Verdict.REFUSE:  # the password sample is refused outright
        assert first.refusal_code == "credential_refused"
        return
    assert first.redacted_types
    second = screen.check(first.text, pseudonym=keyed)
    assert second.verdict is Verdict.ACCEPT
    assert second.text == first.text
    assert second.redacted_types == ()
    assert not any(f.family == "pii" for f in second.findings)


@pytest.mark.parametrize(
    "text",
    [
        "password: [PHONE:7f3a9c] for the voicemail box",
        "my PIN is [CARD:0a1b2c] apparently",
        "api_key = [EMAIL:123456]",
        "Authorization: Bearer [IP:abcdef]",
        "-u admin -p [PHONE:9f8e7d] was the example",
        "mysql://admin:[PHONE:7f3a9c]@db.internal/app",
        "密码是[PHONE:7f3a9c]，别忘了",
        "[PHONE:7f3a9c1234567890] [CARD:1234567890123456] [IBAN:0000000000000000]",
        "[SSN:123456][SSN:234567][IP:345678][EMAIL:456789] all in a row",
        "card [CARD:4111111111111111] and phone [PHONE:4155550132] stay as they are",
    ],
)
def test_check_placeholder_trips_no_detector(screen: Screen, text: str) -> None:
    result = screen.check(text, pseudonym=pseudonym)
    assert result.verdict is Verdict.ACCEPT, result.detector
    assert result.text == text
    assert result.redacted_types == ()


def test_check_field_placeholder_rescreened_unchanged(screen: Screen) -> None:
    first = screen.check_field("ops@example.com", field="source", pseudonym=pseudonym)
    assert first.text.startswith("[EMAIL:")
    again = screen.check_field(first.text, field="source", pseudonym=pseudonym)
    assert again.text == first.text
    assert again.redacted_types == ()
