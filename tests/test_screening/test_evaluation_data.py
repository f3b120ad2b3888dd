"""The evaluation's targets, checked on the shared public data (bench/screening.py's core)."""

from __future__ import annotations

import pytest
from bench.screening import OBFUSCATIONS, PII_ENTITY_TO_TYPE, Report, evaluate, shared_data_dir

from memvault.screening import Screen


@pytest.fixture(scope="module")
def report(screen: Screen) -> Report:
    data = shared_data_dir()
    if not (data / "noseyparker" / "examples.jsonl").is_file():
        pytest.skip(f"shared data not found at {data}: the evaluation needs ../shared/data")
    return evaluate(data, screen)


def test_evaluation_credential_recall_meets_target(report: Report) -> None:
    assert report.credentials.total > 350
    assert report.credentials.recall >= 0.95


def test_evaluation_locomo_false_refusals_within_target(report: Report) -> None:
    assert report.locomo.total == 5882
    assert report.locomo.false_refusal_rate <= 0.005
    assert report.locomo.refused["credential_refused"] == 0


def test_evaluation_presidio_and_chinese_prose_not_refused_as_credentials(report: Report) -> None:
    assert report.presidio.refused["credential_refused"] == 0
    assert report.cmrc.refused["credential_refused"] == 0
    assert report.presidio.false_refusal_rate <= 0.005


@pytest.mark.parametrize("kind", sorted(PII_ENTITY_TO_TYPE.values()))
def test_evaluation_pii_recall_meets_target(report: Report, kind: str) -> None:
    assert report.pii[kind].spans > 0
    assert report.pii[kind].recall >= 0.95


@pytest.mark.parametrize("entity", ["PERSON", "STREET_ADDRESS"])
def test_evaluation_names_and_addresses_mostly_intact(report: Report, entity: str) -> None:
    spans, touched = report.kept[entity]
    assert spans > 500
    assert touched / spans <= 0.01


def test_evaluation_hidden_credentials_recall_meets_target(report: Report) -> None:
    assert set(report.credentials.obfuscated) == set(OBFUSCATIONS)
    for caught in report.credentials.obfuscated.values():
        assert caught / report.credentials.total >= 0.95


def test_evaluation_pseudonyms_keep_facts_apart(report: Report) -> None:
    collisions = report.collisions
    assert collisions.texts > 1400
    assert collisions.distinct_typed < collisions.distinct_inputs  # `[TYPE]` merges facts
    assert collisions.distinct_pseudonymised == collisions.distinct_inputs
    assert collisions.rescreen_changed == 0


def test_evaluation_field_mode_redacts_pii_and_keeps_names(report: Report) -> None:
    fields = report.fields
    assert not fields.refused
    assert fields.kept_changed / fields.kept_values <= 0.01
    for kind, n in fields.pii_values.items():
        assert fields.pii_redacted[kind] / n >= 0.95
