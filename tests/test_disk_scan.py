"""The fast disk scan of the at-rest tests finds exactly what a plain search finds."""

from __future__ import annotations

import random

from tests.disk_scan import PAGE, occurrences


def test_fast_scan_equals_plain_search_on_sparse_data() -> None:
    rng = random.Random(7)
    for trial in range(40):
        data = bytearray(PAGE * rng.randint(4, 40) + rng.randint(0, PAGE - 1))
        needles = [rng.randbytes(rng.choice([16, 36, 2048])) for _ in range(6)]
        needles.append(b"\0" * 20 + b"\x01")  # mostly zeros: may straddle a zero page
        for i, needle in enumerate(needles):
            if rng.random() < 0.6:  # planted anywhere, across page edges too
                at = rng.randint(0, len(data) - len(needle))
                data[at : at + len(needle)] = needle
            if i == 0 and trial % 3 == 0:  # right at the end of the file
                data[len(data) - len(needle) :] = needle
        blob = bytes(data)
        plain = [i for i, n in enumerate(needles) if n in blob]
        assert occurrences(blob, needles) == plain
    assert occurrences(bytes(PAGE * 8), [b"\0" * 4]) == [0]  # an all-zero needle still found


def test_a_needle_reaching_into_a_zero_page_is_found() -> None:
    leading, trailing = b"\0" * 20 + b"\x01", b"\x02" + b"\0" * 20
    data = bytearray(PAGE * 8)
    data[3 * PAGE - 15 : 3 * PAGE + 6] = leading  # starts in a zero page, its 0x01 in the next
    data[6 * PAGE - 1 : 6 * PAGE + 20] = trailing  # its 0x02 ends a page, its zeros go on
    assert occurrences(bytes(data), [leading, trailing, b"\x03"]) == [0, 1]
