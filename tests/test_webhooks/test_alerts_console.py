"""The console's read alerts page: alerts listed without text, and a suspended key resumed."""

from __future__ import annotations

from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.test_console.conftest import ConsoleClient
from tests.test_webhooks.conftest import key_id_of

NOTE = "Ottoline hides the boathouse key inside the blue teapot"


def test_the_alerts_page_lists_alerts_and_resumes_a_key(make_services: ServicesFactory) -> None:
    api = Api(make_services("sqlite"))
    admin = api.tenant("acme")
    policy = {"read_alerts": {"records_per_key_per_minute": 1, "on_alert": "suspend_key"}}
    assert api.call("PUT", "/v1/admin/policy", admin, json=policy).status_code == 200
    key = api.agent_key("acme", "alice", "bot")
    api.add(key, NOTE)
    api.search(key, "boathouse key")
    assert api.call("GET", "/v1/memories", key).status_code == 401
    auditor = api.agent_key("acme", "audit", "desk", role="auditor")

    reader = ConsoleClient(api)
    reader.sign_in(auditor)
    page = reader.get("/alerts")
    assert page.status_code == 200
    assert "records_per_key_per_minute" in page.text and key_id_of(key) in page.text
    assert "Ottoline" not in page.text and "teapot" not in page.text
    assert "Resume key" not in page.text  # an auditor reads, never acts
    refused = reader.post(
        f"/alerts/resume/{key_id_of(key)}", {}, token_from="/alerts", follow_redirects=False
    )
    assert refused.status_code == 403

    console = ConsoleClient(api)
    console.sign_in(admin)
    assert "Resume key" in console.get("/alerts").text
    assert console.post(f"/alerts/resume/{key_id_of(key)}", {"csrf": "forged"}).status_code == 403
    r = console.post(
        f"/alerts/resume/{key_id_of(key)}", {}, token_from="/alerts", follow_redirects=False
    )
    assert r.status_code == 303
    assert api.call("GET", "/v1/memories", key).status_code == 200
