"""A thin test client over the real app: tenants, keys and authenticated calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi.testclient import TestClient

from memvault.api.app import create_app
from memvault.runtime.factory import Services

OPERATOR_KEY = "mvop_test-operator-key-0123456789"


@dataclass
class Api:
    services: Services
    client: TestClient = field(init=False)
    admin_keys: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client = TestClient(create_app(self.services, operator_key=OPERATOR_KEY))

    def call(self, method: str, path: str, key: str | None, **kw: Any) -> Any:
        headers = kw.pop("headers", {})
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return self.client.request(method, path, headers=headers, **kw)

    def metrics(self) -> Any:
        """`GET /metrics` with the operator key (it needs a credential)."""
        return self.call("GET", "/metrics", OPERATOR_KEY)

    def tenant(self, tenant: str) -> str:
        """Create a tenant (once) and return its admin key."""
        if tenant not in self.admin_keys:
            r = self.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": tenant})
            assert r.status_code == 201, r.text
            self.admin_keys[tenant] = r.json()["api_key"]
        return self.admin_keys[tenant]

    def agent_key(self, tenant: str, user: str, agent: str, role: str = "agent") -> str:
        """Issue a key for one user and agent of the tenant (an agent's, or another role's)."""
        r = self.call(
            "POST",
            "/v1/admin/keys",
            self.tenant(tenant),
            json={"user_id": user, "agent_id": agent, "role": role},
        )
        assert r.status_code == 201, r.text
        return str(r.json()["api_key"])

    def add(self, key: str, text: str, **body: Any) -> dict[str, Any]:
        r = self.call("POST", "/v1/memories", key, json={"text": text, **body})
        assert r.status_code == 201, r.text
        return dict(r.json())

    def search(self, key: str, query: str, **body: Any) -> list[dict[str, Any]]:
        r = self.call("POST", "/v1/memories/search", key, json={"query": query, **body})
        assert r.status_code == 200, r.text
        return list(r.json()["results"])
