"""Helpers for the erasure tests: distinctive points and a byte scan of every file under a root."""

from __future__ import annotations

import mmap
import os
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memvault.index import IndexPoint, SparseVector

WIDE = 24
"""The dimension of the erasure tests' vectors: wide enough that no byte run repeats by chance."""


@dataclass(frozen=True)
class Planted:
    """A point with a distinctive unit vector, and the byte strings it leaves in files."""

    point: IndexPoint

    @property
    def id(self) -> str:
        return self.point.id

    def needles(self) -> dict[str, bytes]:
        """Its canonical id, the id's 16 raw bytes, and its vector's float32 bytes twice.

        Segments hold the vector as little-endian float32 (`vector`); the WAL holds it as CBOR
        (`vector-wal`: each float as the byte 0xFA and a big-endian float32).
        """
        floats = np.asarray(self.point.dense, dtype=np.float32)
        return {
            "id": self.id.encode(),
            "id-bytes": uuid.UUID(self.id).bytes,
            "vector": floats.tobytes(),
            "vector-wal": b"".join(b"\xfa" + struct.pack(">f", x) for x in floats.tolist()),
        }


def planted(rng: np.random.Generator, user: str, agent: str = "a1", words: int = 0) -> Planted:
    """A point of `user` with a random unit vector (exact in float32) and an optional word."""
    v = rng.standard_normal(WIDE).astype(np.float32)
    v /= np.float32(np.linalg.norm(v))
    sparse = SparseVector(indices=(words,), values=(1.0,)) if words else None
    return Planted(
        IndexPoint(
            id=str(uuid.uuid4()),
            dense=[float(x) for x in v],
            payload={"user_id": user, "agent_id": agent, "readers": [agent], "is_active": 1},
            sparse=sparse,
        )
    )


def files_holding(root: Path, needles: Iterable[bytes]) -> list[tuple[str, str]]:
    """`(file relative to root, needle hex prefix)` for every needle found in any file."""
    wanted = list(needles)
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.stat().st_size == 0:
                continue
            with (
                path.open("rb") as handle,
                mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m,
            ):
                found.extend(
                    (str(path.relative_to(root)), n[:6].hex()) for n in wanted if m.find(n) >= 0
                )
    return found


def needles_of(points: Iterable[Planted]) -> list[bytes]:
    """Every needle of every point."""
    return [n for p in points for n in p.needles().values()]


def vector_needles(points: Iterable[Planted]) -> list[bytes]:
    """The float32 vector bytes of every point (these only reach files once flushed)."""
    return [p.needles()["vector"] for p in points]
