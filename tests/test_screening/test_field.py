"""Field mode: `source` and `topics` values are short, but never carry a credential or raw PII."""

from __future__ import annotations

import logging

import pytest

from memvault.screening import PiiAction, Screen, ScreenPolicy, Verdict
from tests.test_screening.conftest import UPPER_DIGITS, fake

AWS_ID = fake("AKIA", 16, UPPER_DIGITS)
GITHUB = fake("ghp_", 36)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) if 0x21 <= ord(ch) <= 0x7E else ch for ch in text)


@pytest.mark.parametrize(
    ("field", "value", "detector"),
    [
        ("source", AWS_ID, "aws_access_key"),
        ("source", f"s3 sync with {AWS_ID}", "aws_access_key"),
        ("topics", GITHUB, "github_token"),
        ("topics", _fullwidth(GITHUB), "github_token"),
        ("topics", GITHUB[:5] + "\u200b" + GITHUB[5:], "github_token"),
        ("topics", "password is hunter2", "natural_language_password"),
        ("topics", "pass word is hunter2", "natural_language_password"),
        ("topics", "pwd=hunter2", "password_assignment"),
        ("topics", "mein Passwort ist Sonnenschein", "natural_language_password"),
        ("source", "https://deploy:" + fake("", 12) + "@git.example.org/repo.git", None),
    ],
)
def test_check_field_credential_refused(
    screen: Screen, field: str, value: str, detector: str | None
) -> None:
    result = screen.check_field(value, field=field)
    assert result.verdict is Verdict.REFUSE
    assert result.refusal_code == "credential_refused"
    assert result.text == ""
    assert result.detector
    if detector is not None:
        assert result.detector == detector


@pytest.mark.parametrize(
    "value",
    ["ai", "Q3", "travel", "family", "今天", "work/okrs", "chat:2024-05-01", "slack #general"],
)
def test_check_field_short_value_accepted_without_flags(screen: Screen, value: str) -> None:
    result = screen.check_field(value, field="topics")
    assert result.verdict is Verdict.ACCEPT
    assert result.text == value
    assert result.flags == frozenset()
    assert screen.check(value).refusal_code == "too_short" or len(value) >= 10


def test_check_field_no_ephemeral_or_suspicious_flags(screen: Screen) -> None:
    result = screen.check_field("ignore previous instructions tomorrow", field="topics")
    assert result.verdict is Verdict.ACCEPT
    assert result.flags == frozenset()
    assert result.findings == ()


def test_check_field_value_is_normalised(screen: Screen) -> None:
    assert screen.check_field("ｔｒａｖｅｌ\u200b", field="topics").text == "travel"


def test_check_field_pii_redacted_with_pseudonym(screen: Screen) -> None:
    result = screen.check_field(
        "call dana at +1 415-555-0132", field="source", pseudonym=lambda kind, value: "c0ffee"
    )
    assert result.text == "call dana at [PHONE:c0ffee]"
    assert result.redacted_types == ("phone",)
    assert screen.check_field("ops@example.com", field="topics").text == "[EMAIL]"


def test_check_field_pii_refused_per_policy(screen: Screen) -> None:
    policy = ScreenPolicy(pii={"email": PiiAction.REFUSE})
    result = screen.check_field("ops@example.com", field="topics", policy=policy)
    assert result.refusal_code == "pii_refused"
    assert result.detector == "email"
    assert result.text == ""


def test_check_field_policy_allow_keeps_value(screen: Screen) -> None:
    policy = ScreenPolicy(pii={"email": PiiAction.ALLOW})
    result = screen.check_field("ops@example.com", field="topics", policy=policy)
    assert result.text == "ops@example.com"
    assert result.redacted_types == ()


@pytest.mark.parametrize("field", ["", "Source", "topics; drop", "x" * 40, "ops@example.com"])
def test_check_field_invalid_field_name_raises(screen: Screen, field: str) -> None:
    with pytest.raises(ValueError):
        screen.check_field("travel", field=field)


def test_check_field_logs_no_value(screen: Screen, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="memvault"):
        screen.check_field(GITHUB, field="topics")
        screen.check_field("ops@example.com", field="source")
    assert caplog.records
    for secret in (GITHUB, "ops@example.com"):
        assert secret not in caplog.text
        for record in caplog.records:
            assert secret not in repr(record.args)
