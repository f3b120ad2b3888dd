"""Daily consolidation, as pure functions over the notes of ONE scope.

`plan_consolidation` finds groups of near-duplicate notes and names, for each group, its oldest
note and the later ones. The caller (`amem/maintenance.py`) relates each later note to the
oldest (a restatement, a new version, an expansion or a conflict); no text moves between notes
and none is deleted. Nothing here touches a store.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memvault.amem.views import NoteView

MAX_MERGED_CHARS = 32_000
"""The longest text `merged_text` writes (a survivor already longer is kept as it is)."""

DEFAULT_CATEGORY = "General"
_BLOCK = 512  # rows per block when finding near-duplicates: memory is _BLOCK x n floats
_SEPARATOR_CHARS = 2  # what joining one more sentence may add: ". "
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|[\r\n]+")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+(?:'[^\W{_CJK}]+)*")  # a CJK character is a word
_CJK_END = "。！？"

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class MergeGroup:
    """Near-duplicate notes: `absorbed_ids` (oldest first), each to be related to `survivor_id`,
    the oldest note of the group; all of them belong to `category`."""

    survivor_id: str
    absorbed_ids: tuple[str, ...]
    category: str


def plan_consolidation(notes: Sequence[NoteView], threshold: float) -> list[MergeGroup]:
    """The groups of near-duplicate notes among `notes`, one scope's notes.

    Eligible notes are the caller's own memory notes with a vector: never a `knowledge` note
    (durable reference, openclaw-amem keeps it out of consolidation), a shared note, a note the
    caller may not write, or a note marked `conflict` (it waits for a human; merging would bury
    the contradiction). Notes are compared only within one category (None counts as "General"),
    one `ephemeral` flag (a durable fact absorbed into an ephemeral note would expire with it)
    and one provenance (a note written in an untrusted session never joins a trusted one's
    group: `memvault.vault.provenance`), and only to vectors of the same length.

    Clustering is complete-link agglomerative: every pair inside a group has cosine >=
    `threshold`, and the most similar pair of groups merges first. Single-link would let a chain
    of drifting notes (A~B, B~C, C~D, with A and D unrelated) collapse into one note; with
    complete-link, for A~B and B~C but not A~C, B joins whichever of A or C it is closer to
    (on a tie, the older pair) and the third note stays alone. A later run over the merged
    result may still join that third note if the merged text is close enough to it: groups are
    final for one run, and a run over a result whose groups were well separated finds nothing.

    A group also never holds more text than `MAX_MERGED_CHARS` (counting a separator per
    sentence), so `merged_text` never has to leave out any of its notes' sentences. The result
    is deterministic: notes are ordered by (created_at, id), a repeated id counts once, groups
    come oldest survivor first, and the survivor is the group's oldest note.
    """
    if not (isinstance(threshold, int | float) and 0.0 < threshold <= 1.0):
        raise ValueError("threshold must be in (0, 1]")
    partitions: dict[tuple[str, bool, bool, int], list[tuple[NoteView, Matrix]]] = defaultdict(list)
    seen: set[str] = set()
    for note in sorted(notes, key=lambda n: (n.created_at, n.id)):
        if note.id in seen:
            continue
        seen.add(note.id)
        vector = _eligible_vector(note)
        if vector is not None:
            key = (_category(note), note.ephemeral, note.untrusted, int(vector.shape[0]))
            partitions[key].append((note, vector))

    groups: list[tuple[tuple[float, str], MergeGroup]] = []
    for (category, _, _, _), members in partitions.items():
        if len(members) < 2:
            continue
        vectors = np.stack([v for _, v in members])
        lengths = [_cost(n.text) for n, _ in members]
        for component in _components(vectors, threshold):
            for cluster in _complete_link(vectors[component], lengths, component, threshold):
                group = [members[i][0] for i in cluster]
                ids = tuple(n.id for n in group[1:])
                age = (group[0].created_at, group[0].id)
                groups.append((age, MergeGroup(group[0].id, ids, category)))
    groups.sort(key=lambda item: item[0])
    return [group for _, group in groups]


def _eligible_vector(note: NoteView) -> Matrix | None:
    """The note's unit vector if consolidation may touch the note, else None."""
    if note.note_type == "knowledge" or note.shared or not note.writable or note.conflict:
        return None
    if note.vector is None or len(note.vector) == 0:
        return None
    vector = np.asarray(note.vector, dtype=np.float32)
    if vector.ndim != 1 or not np.all(np.isfinite(vector)):
        return None
    norm = float(np.linalg.norm(vector))
    if norm == 0.0 or not math.isfinite(norm):
        return None
    return vector / np.float32(norm)


def _category(note: NoteView) -> str:
    return note.category if note.category else DEFAULT_CATEGORY


def _cost(text: str) -> int:
    """An upper bound of what `text` adds to a merged text, as survivor or as absorbed note."""
    appended = sum(len(s) + _SEPARATOR_CHARS for s in _sentences(text))
    return max(len(text.strip()), appended)


def _components(vectors: Matrix, threshold: float) -> list[list[int]]:
    """Connected components (of size >= 2) of the graph "cosine >= threshold", in blocks so a
    large category never needs an n x n matrix. Complete-link groups lie inside them."""
    n = vectors.shape[0]
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for start in range(0, n, _BLOCK):
        sims = vectors[start : start + _BLOCK] @ vectors.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            a, b = find(start + r), find(c)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(n):
        members[find(i)].append(i)
    return [m for m in members.values() if len(m) > 1]


def _complete_link(
    vectors: Matrix, lengths: Sequence[int], index: Sequence[int], threshold: float
) -> list[list[int]]:
    """Complete-link agglomerative clusters (size >= 2) of one component.

    `index` maps rows of `vectors` to positions in the partition (ascending, so the oldest
    first); returned clusters hold those positions, ascending. Each step merges the pair of
    clusters with the highest minimum pairwise cosine, if it is >= threshold and their texts
    fit together; ties go to the first pair in (older, older) order.
    """
    m = vectors.shape[0]
    sims = (vectors @ vectors.T).astype(np.float64)
    size = np.array([lengths[i] for i in index], dtype=np.int64)
    np.fill_diagonal(sims, -np.inf)
    sims[size[:, None] + size[None, :] > MAX_MERGED_CHARS] = -np.inf
    clusters: dict[int, list[int]] = {i: [i] for i in range(m)}
    while True:
        flat = int(np.argmax(sims))
        i, j = divmod(flat, m)
        if not sims[i, j] >= threshold:
            break
        i, j = min(i, j), max(i, j)
        row = np.minimum(sims[i], sims[j])
        size[i] += size[j]
        row[size + size[i] > MAX_MERGED_CHARS] = -np.inf
        sims[i, :] = row
        sims[:, i] = row
        sims[i, i] = -np.inf
        sims[j, :] = -np.inf
        sims[:, j] = -np.inf
        clusters[i].extend(clusters.pop(j))
    return [sorted(index[k] for k in c) for c in clusters.values() if len(c) > 1]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]
