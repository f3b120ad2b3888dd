"""One live `memvault serve` subprocess for the SDK and import tests, and tenants on it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from memvault.client import Client
from tests.serving import clean_env, free_port, start_serve, stop, wait_healthy

OPERATOR_KEY = "mvop_sdk-operator-key-0123456789"


@dataclass(frozen=True)
class Tenant:
    """A fresh tenant on the live server: its id, admin key and one agent key."""

    base_url: str
    tenant_id: str
    admin_key: str
    agent_key: str


def _serve(tmp_path_factory: pytest.TempPathFactory, **env: str) -> Iterator[str]:
    data = tmp_path_factory.mktemp("sdk-serve")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_serve(
        data, port, clean_env(MEMVAULT_OPERATOR_KEY=OPERATOR_KEY, **env), capture=True
    )
    try:
        wait_healthy(base, proc)
        yield base
    finally:
        stop(proc)


def new_tenant(base_url: str) -> Tenant:
    """A new tenant on `base_url` with an admin key and an agent key for (alice, assistant)."""
    tenant_id = "t" + uuid.uuid4().hex[:12]
    with Client(base_url, OPERATOR_KEY) as operator:
        admin = operator.create_tenant(tenant_id).api_key
    with Client(base_url, admin) as client:
        agent = client.issue_key("alice", "assistant").api_key
    return Tenant(base_url, tenant_id, admin, agent)


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a live server with plain notes (MEMVAULT_AMEM=off), shared by every test
    of this package."""
    yield from _serve(tmp_path_factory)


@pytest.fixture(scope="package")
def amem_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a live server with A-MEM on (as deployed by default)."""
    yield from _serve(tmp_path_factory, MEMVAULT_AMEM="on")


@pytest.fixture
def tenant(server: str) -> Tenant:
    """A new tenant with an admin key and an agent key for (alice, assistant)."""
    return new_tenant(server)


@pytest.fixture
def amem_tenant(amem_server: str) -> Tenant:
    """A new tenant on the A-MEM server."""
    return new_tenant(amem_server)
