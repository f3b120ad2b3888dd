"""Fixtures of the untrusted-content mode tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.apiclient import Api
from tests.conftest import ServicesFactory


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    """The real app over real services, on SQLite and on PostgreSQL."""
    return Api(make_services(backend))


def audit_events(api: Api, tenant: str) -> list[dict[str, Any]]:
    """The tenant's audit events, as its admin reads them over REST."""
    r = api.call("GET", "/v1/admin/audit", api.tenant(tenant))
    assert r.status_code == 200, r.text
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    return [line for line in lines if "action" in line]  # not the checkpoints and head


def actions(api: Api, tenant: str) -> list[str]:
    return [str(e["action"]) for e in audit_events(api, tenant)]
