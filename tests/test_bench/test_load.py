"""`bench.load`'s client keeps the id under which an added note stays readable."""

from __future__ import annotations

from bench.load import kept_id, parse_mix


def test_an_absorbed_note_is_read_under_its_survivor() -> None:
    assert kept_id({"id": "n1", "evolution": None}) == "n1"
    assert kept_id({"id": "n1"}) == "n1"
    assert kept_id({"id": "n1", "evolution": {"action": "NEW", "target_id": None}}) == "n1"
    assert kept_id({"id": "n1", "evolution": {"action": "CONFLICT", "target_id": "n0"}}) == "n1"
    assert kept_id({"id": "n1", "evolution": {"action": "PENDING", "target_id": None}}) == "n1"
    for action in ("EVOLVE", "EXPAND", "MERGE"):
        assert kept_id({"id": "n1", "evolution": {"action": action, "target_id": "n0"}}) == "n0"


def test_the_mix_is_parsed_by_weight() -> None:
    assert parse_mix("add=3,search=4") == {"add": 3, "search": 4}
