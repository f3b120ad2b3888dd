"""`bench.keyed_hash`: both implementations MAC alike, and the table has a row for each."""

from __future__ import annotations

import re

import pytest
from bench import keyed_hash


def test_the_two_implementations_compared_give_the_same_macs() -> None:
    macs = keyed_hash.implementations()
    assert set(macs) == {"hmac.digest", "HmacKey"}
    for word in (b"", b"harbor", "花园".encode(), b"x" * 5000):
        assert macs["hmac.digest"](word) == macs["HmacKey"](word)


def test_table_has_every_implementation_for_every_busy_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keyed_hash.main(["--busy", "0,1", "--searches", "20", "--tokens", "3", "--rounds", "1"])
    rows = re.findall(
        r"^\s+(\d+) (\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$",
        capsys.readouterr().out,
        re.M,
    )
    assert sorted((busy, name) for busy, name, *_ in rows) == [
        ("0", "HmacKey"),
        ("0", "hmac.digest"),
        ("1", "HmacKey"),
        ("1", "hmac.digest"),
    ]
    assert all(float(per_mac) > 0 for _, _, per_mac, *_ in rows)
