"""PII is replaced by typed placeholders; checksums keep look-alikes; policy switches each type."""

from __future__ import annotations

import pytest

from memvault.errors import InvalidRequest
from memvault.screening import PiiAction, Screen, ScreenPolicy, Verdict


@pytest.mark.parametrize(
    ("text", "value", "placeholder"),
    [
        ("Write to dana.k@example.org about the offsite", "dana.k@example.org", "[EMAIL]"),
        ("Her mobile is +1 415-555-0132 after six", "+1 415-555-0132", "[PHONE]"),
        ("Office line: 020 7946 0958, ask for Tom", "020 7946 0958", "[PHONE]"),
        ("Card on file 4111 1111 1111 1111 expires soon", "4111 1111 1111 1111", "[CARD]"),
        ("Amex 378282246310005 was declined", "378282246310005", "[CARD]"),
        (
            "Pay rent to GB82 WEST 1234 5698 7654 32 monthly",
            "GB82 WEST 1234 5698 7654 32",
            "[IBAN]",
        ),
        ("IBAN DE89370400440532013000 for the refund", "DE89370400440532013000", "[IBAN]"),
        ("His SSN is 123-45-6789 per the form", "123-45-6789", "[SSN]"),
        ("The NAS lives at 192.168.1.20 on the LAN", "192.168.1.20", "[IP]"),
        ("Reach the box via 2001:db8::8a2e:370:7334 today", "2001:db8::8a2e:370:7334", "[IP]"),
    ],
)
def test_check_pii_redacted_with_placeholder(
    screen: Screen, text: str, value: str, placeholder: str
) -> None:
    result = screen.check(text)
    assert result.verdict is Verdict.ACCEPT
    assert value not in result.text
    assert result.text == text.replace(value, placeholder)
    assert result.redacted_types == (placeholder.strip("[]").lower(),)
    finding = next(f for f in result.findings if f.family == "pii")
    assert text[finding.start : finding.end] == value


PII_LOOKALIKES = [
    "Card number 4111 1111 1111 1112 fails the Luhn check",
    "Order 1234567812345678 shipped on Monday",
    "Account GB83 WEST 1234 5698 7654 32 has a bad checksum",
    "Reference 000-12-3456 is not an SSN",
    "Version 999.1.1.1 is not an address",
    "The meeting runs 10:30:00 to 11:00:00 on Friday",
    "He played for the Nets (1996-1997) and the Mavericks (1997-2005).",
    "Caroline: I've been saving since 2019 and now have 1500 dollars.",
]
"""Numbers and strings shaped like PII that are not (bad checksums, versions, times): kept."""


@pytest.mark.parametrize("text", PII_LOOKALIKES)
def test_check_pii_lookalike_kept(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.verdict is Verdict.ACCEPT
    assert result.text == text
    assert result.redacted_types == ()


def test_check_names_and_addresses_kept(screen: Screen) -> None:
    text = "Alice Smith moved to 42 Baker Street, London NW1 6XE with her brother Bob"
    assert screen.check(text).text == text


def test_check_redacted_types_in_order_of_first_appearance(screen: Screen) -> None:
    text = "call +44 20 7946 0958 or mail ops@example.com, then ops2@example.com"
    result = screen.check(text)
    assert result.redacted_types == ("phone", "email")
    assert result.text == "call [PHONE] or mail [EMAIL], then [EMAIL]"


def test_check_policy_refuse_type_refused(screen: Screen) -> None:
    policy = ScreenPolicy(pii={"email": PiiAction.REFUSE})
    result = screen.check("send it to dana.k@example.org please", policy=policy)
    assert result.verdict is Verdict.REFUSE
    assert result.refusal_code == "pii_refused"
    assert result.detector == "email"
    assert result.text == ""


def test_check_policy_allow_type_kept(screen: Screen) -> None:
    policy = ScreenPolicy(pii={"email": "allow", "phone": "redact"})  # type: ignore[dict-item]
    text = "mail dana.k@example.org or call +1 415-555-0132"
    result = screen.check(text, policy=policy)
    assert result.text == "mail dana.k@example.org or call [PHONE]"
    assert result.redacted_types == ("phone",)


def test_check_policy_refuse_other_type_absent_accepted(screen: Screen) -> None:
    policy = ScreenPolicy(pii={"ssn": PiiAction.REFUSE})
    result = screen.check("mail dana.k@example.org about it", policy=policy)
    assert result.verdict is Verdict.ACCEPT
    assert result.redacted_types == ("email",)


@pytest.mark.parametrize("pii", [{"passport": PiiAction.REDACT}, {"email": "shred"}])
def test_policy_invalid_entry_raises(pii: dict[str, PiiAction]) -> None:
    with pytest.raises(InvalidRequest):
        ScreenPolicy(pii=pii)
