"""The SDK's `issue_key(isolation=...)`: a dedicated (Mode B) agent over a live server."""

from __future__ import annotations

import pytest

from memvault.client import Client, ConflictError
from tests.test_client.conftest import Tenant


def test_issue_a_dedicated_key_and_refuse_a_change(tenant: Tenant) -> None:
    with Client(tenant.base_url, tenant.admin_key) as admin:
        issued = admin.issue_key("alice", "sandbox", isolation="dedicated")
        assert issued.isolation == "dedicated"
        assert admin.issue_key("alice", "sandbox").isolation == "dedicated"
        with pytest.raises(ConflictError) as refused:
            admin.issue_key("alice", "sandbox", isolation="shared")
        assert refused.value.code == "isolation_conflict"
    with Client(tenant.base_url, tenant.agent_key) as assistant:
        assistant.add("The office wifi password rotates monthly", visibility="shared")
    with Client(tenant.base_url, issued.api_key) as sandbox:
        sandbox.add("Sandbox keeps the office wifi router manual")
        texts = [h.text for h in sandbox.search("office wifi")]
        assert texts == ["Sandbox keeps the office wifi router manual"]
