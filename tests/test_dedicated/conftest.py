"""A world with a dedicated (Mode B) agent beside Mode A agents of the same user, served over
HTTP on each storage backend and each index adapter (Edge on disk, qdrant-client local mode)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from memvault.embed.base import Embedder
from memvault.index import QdrantIndex
from memvault.index.base import PointFilter
from memvault.vault.drafts import dedicated_tag, namespace_for, user_tag
from tests.apiclient import Api
from tests.conftest import ServicesFactory

TENANT = "acme"
USER = "alice"


def issue(api: Api, agent: str, **body: Any) -> Any:
    """`POST /v1/admin/keys` for an agent of alice (the response, not asserted)."""
    return api.call(
        "POST",
        "/v1/admin/keys",
        api.tenant(TENANT),
        json={"user_id": USER, "agent_id": agent, **body},
    )


def dedicated_key(api: Api, agent: str, user: str = USER) -> str:
    r = api.call(
        "POST",
        "/v1/admin/keys",
        api.tenant(TENANT),
        json={"user_id": user, "agent_id": agent, "isolation": "dedicated"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["isolation"] == "dedicated"
    return str(r.json()["api_key"])


def partition_count(api: Api, user: str, agent: str | None = None) -> int:
    """Points in a partition: the user's (agent None) or a dedicated agent's own."""
    tag = api.services.keyring.index_key(TENANT).tag
    key = user_tag(tag, user) if agent is None else dedicated_tag(tag, user, agent)
    return api.services.index.count(namespace_for(TENANT), PointFilter(user_id=key))


@pytest.fixture(params=["edge", "qdrant"])
def adapter(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api(make_services: ServicesFactory, backend: str, adapter: str, embedder: Embedder) -> Api:
    kw: dict[str, Any] = {}
    if adapter == "qdrant":
        kw["index"] = QdrantIndex.from_url(":memory:", embedder.dimension)
    return Api(make_services(backend, **kw))


@dataclass
class World:
    api: Api
    main: str
    """Mode A agent `main`: a private note, a shared note, a note for `sandbox` by readers."""
    helper: str
    """Mode A agent `helper` of the same user."""
    sandbox: str
    """Dedicated agent `sandbox`."""
    ids: dict[str, str]


MAIN_PRIVATE = "The lighthouse key is kept under the blue flowerpot"
MAIN_SHARED = "Team rule: the lighthouse closes at nine in the evening"
MAIN_TO_SANDBOX = "The lighthouse alarm code is for the sandbox agent too"
SANDBOX_NOTES = (
    "The lighthouse lamp needs a new bulb before winter",
    "Sandbox drafts the lighthouse maintenance schedule on Mondays",
)


@pytest.fixture
def world(api: Api) -> World:
    main = api.agent_key(TENANT, USER, "main")
    helper = api.agent_key(TENANT, USER, "helper")
    sandbox = dedicated_key(api, "sandbox")
    ids = {
        "main_private": api.add(main, MAIN_PRIVATE)["id"],
        "main_shared": api.add(main, MAIN_SHARED, visibility="shared")["id"],
        "main_to_sandbox": api.add(main, MAIN_TO_SANDBOX, readers=["main", "sandbox"])["id"],
        "helper_private": api.add(helper, "Helper notes the lighthouse ferry times")["id"],
    }
    for i, text in enumerate(SANDBOX_NOTES):
        ids[f"sandbox_{i}"] = api.add(sandbox, text)["id"]
    return World(api, main, helper, sandbox, ids)
