"""Index points of notes: dense embeddings, keyed BM25 sparse vectors and a payload without text.

The payload holds blind tags (HMAC under the tenant's index key) of the user, agent, readers and
topics, an int flag, the note type, the creation time and the embedding model id: never text and
never an id in clear, so an erased user's id is in no index file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memvault.index.base import IndexPoint
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.store.scoping import parse_member_list
from memvault.text import BM25_AVGDL, SparseEncoder
from memvault.vault.drafts import agent_tag, partition_tag, topic_tag
from memvault.vault.sessions import NO_CONTEXT, IndexContext, event_time

if TYPE_CHECKING:
    from memvault.vault.parts import VaultParts


def build_points(
    parts: VaultParts,
    items: Sequence[tuple[NoteRow, str, Sequence[str]]],
    avgdl: float,
    tokens: Sequence[Sequence[str]] | None = None,
    contexts: Sequence[IndexContext] | None = None,
    vectors: Sequence[Any] | None = None,
) -> list[IndexPoint]:
    """Points for `(row, text, topics)` items: one embedding model call for all their scopes.

    `tokens` are each text's own BM25 tokens when the caller has them; `contexts` what each
    note is indexed with besides its text (`memvault.vault.sessions`), none when omitted.
    `vectors`, parallel to `items`, are dense vectors the caller already embedded (a group
    commit embeds every writer's texts at once, `embed_items`).
    """
    ctx = list(contexts) if contexts is not None else [NO_CONTEXT] * len(items)
    dense = list(vectors) if vectors is not None else embed_items(parts, items, ctx)
    return [
        _point(parts, row, dense[i], text, topics, avgdl, tokens[i] if tokens else None, ctx[i])
        for i, (row, text, topics) in enumerate(items)
    ]


def embed_items(
    parts: VaultParts,
    items: Sequence[tuple[NoteRow, str, Sequence[str]]],
    contexts: Sequence[IndexContext],
) -> Any:
    """Dense vectors of items (text with its context), cached per storage scope, one model call."""
    return parts.embedder.embed_scoped_documents(
        [
            (Scope(row.tenant_id, row.user_id, row.agent_id), ctx.embed_text(text))
            for (row, text, _), ctx in zip(items, contexts, strict=True)
        ]
    )


def _point(
    parts: VaultParts,
    row: NoteRow,
    vector: Any,
    text: str,
    topics: Sequence[str],
    avgdl: float,
    tokens: Sequence[str] | None,
    context: IndexContext,
) -> IndexPoint:
    index_key = parts.keyring.index_key(row.tenant_id)
    encoder = SparseEncoder(index_key.token_id)
    own = encoder.tokens(text) if tokens is None else tokens
    # Index version 3: the fixed BM25_AVGDL, not the namespace's `avgdl` (kept in the signature
    # for the callers): a live mean would carry other agents' notes into this note's weights.
    del avgdl
    sparse = encoder.encode_tokens(context.bm25_tokens(own), BM25_AVGDL)
    extra: dict[str, Any] = {"prev": context.ranked_prev} if context.ranked_prev else {}
    return IndexPoint(
        id=row.id,
        dense=vector.tolist(),
        sparse=sparse if sparse.indices else None,
        payload={
            **extra,
            "occurred_at": int(event_time(row)),
            # The partition: the user's, or a dedicated (Mode B) agent's own (`partition_tag`).
            "user_id": partition_tag(index_key.tag, row.user_id, row.agent_id, row.visibility),
            "agent_id": agent_tag(index_key.tag, row.agent_id),
            "readers": [agent_tag(index_key.tag, r) for r in parse_member_list(row.readers)],
            "is_active": int(row.is_active),
            "note_type": row.note_type,
            "topic_tags": [topic_tag(index_key.tag, t) for t in topics],
            "created_at": int(row.created_at),
            "model": parts.embedder.model_id,
            # The keyed token ids (no word in clear, the sparse vector's own indices): counting
            # points by term under a reader's filter gives IDF over what it may read.
            "terms": list(sparse.indices),
        },
    )
