"""Issue 33: the screen sees through disguised credentials and finds national ids and
obfuscated emails, without refusing prose that only talks about passwords."""

from __future__ import annotations

import pytest

from memvault.screening import Screen
from tests.test_screening.disguises import (
    LOOKALIKE_PROSE,
    dialogue_turn,
    disguise_row_for_topic,
    id_grammar_rows,
    issue_rows,
)

ROWS = issue_rows()


@pytest.mark.parametrize("text", [t for _, t in ROWS], ids=[n for n, _ in ROWS])
def test_disguised_credential_is_refused(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.refusal_code == "credential_refused"
    assert result.text == ""


@pytest.mark.parametrize("text", [t for _, t in ROWS], ids=[n for n, _ in ROWS])
def test_disguised_credential_is_refused_in_a_field(screen: Screen, text: str) -> None:
    assert screen.check_field(text, field="topics").refusal_code == "credential_refused"


def test_topic_and_dialogue_rows_are_refused(screen: Screen) -> None:
    assert screen.check_field(disguise_row_for_topic(), field="topics").refusal_code == (
        "credential_refused"
    )
    assert screen.check(dialogue_turn()).refusal_code == "credential_refused"


@pytest.mark.parametrize("text", LOOKALIKE_PROSE)
def test_prose_about_passwords_is_accepted(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.accepted, result.detector


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("my id card number is 11010519491231002X, keep it", "11010519491231002X"),
        ("write to alice.smith (at) example (dot) com please", "alice.smith"),
        ("or bob [at] example [dot] org for billing", "bob"),
        ("DNI 12345678Z del cliente nuevo", "12345678Z"),
        ("codice fiscale RCCMNL83S18D969H del cliente", "RCCMNL83S18D969H"),
    ],
)
def test_national_ids_and_obfuscated_emails_are_redacted(
    screen: Screen, text: str, kept: str
) -> None:
    result = screen.check(text)
    assert result.accepted
    assert kept not in result.text
    assert result.redacted_types


def test_passport_number_is_one_id_not_cut_by_the_phone_detector(screen: Screen) -> None:
    result = screen.check("my passport number is X1234567 until 2031")
    assert result.accepted
    assert "[NATIONAL_ID]" in result.text
    assert "X[" not in result.text and "1234567" not in result.text


def test_no_pii_span_is_cut_out_of_a_longer_token(screen: Screen) -> None:
    result = screen.check("order reference X1234567 shipped on time")
    assert result.accepted
    assert "X1234567" in result.text


@pytest.mark.parametrize("row", id_grammar_rows(), ids=[n for n, _ in id_grammar_rows()])
def test_dotted_and_dashed_tokens_are_refused_in_an_id_field(
    screen: Screen, row: tuple[str, str]
) -> None:
    assert screen.check_field(row[1], field="readers").refusal_code == "credential_refused"


@pytest.mark.parametrize(
    "text",
    ["We flew U.S.A. to U.K. in 2019, e.g. by night.", "the kids spelled u-n-b-e-l-i-e-v-a-b-l-e"],
)
def test_dotted_prose_is_accepted(screen: Screen, text: str) -> None:
    assert screen.check(text).accepted
