"""`bench.load`'s client: the mix and the words it searches."""

from __future__ import annotations

from bench.load import Written, parse_mix


def test_the_mix_is_parsed_by_weight() -> None:
    assert parse_mix("add=3,search=4") == {"add": 3, "search": 4}


def test_a_clients_words_stay_the_sorted_distinct_words_of_its_notes() -> None:
    notes = Written()
    texts = ["the dog ate the cake", "a cake for Alice", "Alice walked the dog"]
    for i, text in enumerate(texts):
        notes.add({"id": f"n{i}", "text": text})
    assert notes.ids == ["n0", "n1", "n2"] and notes.texts == texts
    assert notes.words == sorted({w for t in texts for w in t.split()})
