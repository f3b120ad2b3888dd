"""One real screen per test session, and builders for fake credentials made at run time.

Fake tokens are assembled here from prefixes and seeded random characters so that this test
folder holds no string a secret scanner would flag.
"""

from __future__ import annotations

import random
import string

import pytest

from memvault.screening import Screen

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"


def fake(prefix: str, length: int, alphabet: str = ALNUM, seed: int = 7) -> str:
    """`prefix` followed by `length` seeded random characters with letters and digits mixed."""
    rng = random.Random(f"{prefix}:{length}:{seed}")
    while True:
        body = "".join(rng.choice(alphabet) for _ in range(length))
        mixed_alphabet = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
        if not mixed_alphabet or alphabet is HEX:
            return prefix + body
        if any(c.isdigit() for c in body) and any(c.isalpha() for c in body):
            return prefix + body


@pytest.fixture(scope="session")
def screen() -> Screen:
    return Screen()
