"""The console over the real app (TestClient): session cookie, CSRF, roles, and what pages show."""

from __future__ import annotations

import json
import re
import threading

from sqlalchemy import update

from memvault.compliance.verify import verify_audit_export, verify_receipt
from memvault.console.session import COOKIE
from memvault.store.models import AuditEventRow
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory
from tests.test_console.conftest import ConsoleClient

NOTE = "alice keeps the spare lantern behind the orchard gate"
PAGES = ["/users", "/users/alice", "/keys", "/erasures", "/audit", "/refusals", "/policy"]


def _signed_out(console: ConsoleClient) -> bool:
    r = console.get("/users", follow_redirects=False)
    return r.status_code == 303 and r.headers["location"].endswith("/console/login")


def test_console_sign_in_sets_sealed_httponly_strict_cookie(
    api: Api, console: ConsoleClient
) -> None:
    admin = api.tenant("acme")
    token = console.csrf("/login")
    r = console.http.post(
        "/console/login", data={"api_key": admin, "csrf": token}, follow_redirects=False
    )
    assert r.status_code == 303
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # plain http here; https sets it (`secure_cookie`)
    secret = admin.rsplit(".", 1)[1]
    assert secret not in cookie and admin not in cookie
    assert console.get("/users").status_code == 200


def test_console_pages_need_a_session(console: ConsoleClient) -> None:
    for path in [*PAGES, "/tenants", "/audit/export"]:
        r = console.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/console/login", path


def test_console_post_without_csrf_token_is_refused_and_does_nothing(
    api: Api, console: ConsoleClient
) -> None:
    console.sign_in(api.tenant("acme"))
    form = {"user_id": "mallory", "agent_id": "bot", "role": "tenant_admin"}
    assert console.post("/keys", form).status_code == 403
    assert console.post("/keys", {**form, "csrf": "forged"}).status_code == 403
    other = ConsoleClient(api)
    other.sign_in(api.tenant("acme"))
    foreign = other.csrf("/keys")  # a real token, of another session
    assert console.post("/keys", {**form, "csrf": foreign}).status_code == 403
    assert "mallory" not in console.get("/keys").text
    # The right token from another origin is refused too.
    own = console.csrf("/keys")
    r = console.post("/keys", {**form, "csrf": own}, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    assert "mallory" not in console.get("/keys").text


def test_console_sign_in_form_needs_its_token(api: Api, console: ConsoleClient) -> None:
    r = console.post("/login", {"api_key": api.tenant("acme")})
    assert r.status_code == 403
    assert _signed_out(console)


def test_console_refuses_agent_and_invalid_keys(api: Api, console: ConsoleClient) -> None:
    agent = api.agent_key("acme", "alice", "planner")
    r = console.sign_in(agent)
    assert r.status_code == 403 and "tenant-admin, auditor or operator" in r.text
    assert _signed_out(console)
    r = console.sign_in(agent[:-3] + "xyz")
    assert r.status_code == 401 and "invalid or revoked" in r.text
    assert agent[-12:] not in r.text
    assert _signed_out(console)


def test_console_auditor_reads_but_cannot_act(api: Api, console: ConsoleClient) -> None:
    auditor = api.agent_key("acme", "audrey", "desk", role="auditor")
    console.sign_in(auditor)
    for path in ["/users", "/erasures", "/audit", "/refusals", "/policy"]:
        assert console.get(path).status_code == 200, path
    assert console.get("/keys").status_code == 403
    assert console.get("/tenants").status_code == 403
    token = console.csrf("/users")
    assert console.post("/erasures", {"user_id": "alice", "csrf": token}).status_code == 403
    assert console.post("/policy", {"pii_email": "allow", "csrf": token}).status_code == 403
    assert (
        console.post("/keys", {"user_id": "a", "agent_id": "b", "csrf": token}).status_code == 403
    )
    policy = console.get("/policy").text
    assert "disabled" in policy and 'id="save-policy"' not in policy


def test_console_revoked_key_and_sign_out_end_the_session(api: Api, console: ConsoleClient) -> None:
    second_admin = api.agent_key("acme", "admin", "ops", role="tenant_admin")
    console.sign_in(second_admin)
    key_id = second_admin.split(".")[1]
    r = api.call("DELETE", f"/v1/admin/keys/{key_id}", api.tenant("acme"))
    assert r.status_code == 204
    assert _signed_out(console)

    console.sign_in(api.tenant("acme"))
    stolen = console.http.cookies.get(COOKIE)
    console.post("/logout", {}, token_from="/users")
    assert _signed_out(console)
    console.http.cookies.set(COOKIE, stolen, path="/console")
    assert _signed_out(console)  # the copied cookie died with the sign-out


def test_console_pages_never_show_memory_text(api: Api, console: ConsoleClient) -> None:
    agent = api.agent_key("acme", "alice", "planner")
    api.add(agent, NOTE)
    console.sign_in(api.tenant("acme"))
    users = console.get("/users").text
    assert re.search(r"alice</a></td>\s*<td class=\"num\">1</td>", users)
    for path in PAGES:
        page = console.get(path)
        assert page.status_code == 200, path
        for word in ("lantern", "orchard"):
            assert word not in page.text, (path, word)


def test_console_pages_forbid_scripts_and_framing(api: Api, console: ConsoleClient) -> None:
    console.sign_in(api.tenant("acme"))
    for path in [*PAGES, "/login"]:
        r = console.get(path)
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp
        assert "frame-ancestors 'none'" in csp and r.headers["x-frame-options"] == "DENY"
        assert r.headers["cache-control"] == "no-store"
        assert "<script" not in r.text and "http://" not in r.text and "https://" not in r.text


def test_console_issued_key_works_and_is_shown_once(api: Api, console: ConsoleClient) -> None:
    console.sign_in(api.tenant("acme"))
    form = {"user_id": "bob", "agent_id": "helper", "role": "agent"}
    r = console.post("/keys", form, token_from="/keys")
    assert r.status_code == 201
    secret = re.search(r'<pre id="secret">(mvk_[^<]+)</pre>', r.text)
    assert secret is not None
    api.add(secret.group(1), "bob prefers window seats on long trains")
    page = console.get("/keys").text
    assert secret.group(1) not in page and "bob" in page
    key_id = secret.group(1).split(".")[1]
    r = console.post(f"/keys/{key_id}/revoke", {}, token_from="/keys")
    assert r.status_code == 200 and f"Key <code>{key_id}</code> revoked" in r.text
    gone = api.call("GET", "/v1/memories", secret.group(1))
    assert gone.status_code == 401


def test_console_erasure_receipt_is_verified_and_downloads(
    api: Api, console: ConsoleClient
) -> None:
    api.add(api.agent_key("acme", "alice", "planner"), NOTE)
    console.sign_in(api.tenant("acme"))
    r = console.post("/erasures", {"user_id": "alice", "agent_id": ""}, token_from="/users/alice")
    assert r.status_code == 200 and 'id="verdict">✓ verified' in r.text
    job_id = str(r.url).rsplit("/", 1)[1]
    download = console.get(f"/erasures/{job_id}/receipt.json")
    assert "attachment" in download.headers["content-disposition"]
    keys = api.call("GET", "/v1/receipt-keys", None).json()["keys"]
    document = json.loads(download.text)
    assert verify_receipt(document, keys).ok and document["receipt"]["verified"] is True
    document["receipt"]["stores"][0]["deleted"] += 1
    assert not verify_receipt(document, keys).ok
    assert job_id in console.get("/erasures").text
    assert console.get("/erasures/nope").status_code == 404


def test_console_audit_export_verifies_and_page_sees_tampering(
    api: Api, console: ConsoleClient
) -> None:
    console.sign_in(api.tenant("acme"))
    api.agent_key("acme", "carol", "desk")
    page = console.get("/audit").text
    assert 'id="chain">✓ chain verified' in page
    filtered = console.get("/audit", params={"action": "key.issued"}).text
    assert "key.issued" in filtered and "<td>tenant.created</td>" not in filtered
    export = console.get("/audit/export")
    assert export.status_code == 200 and "attachment" in export.headers["content-disposition"]
    keys = api.call("GET", "/v1/receipt-keys", None).json()["keys"]
    assert verify_audit_export(export.text.splitlines(), keys).ok
    assert "audit.exported" in console.get("/audit").text

    with api.services.db.session("acme") as sess:
        sess.execute(
            update(AuditEventRow)
            .where(AuditEventRow.tenant_id == "acme", AuditEventRow.seq == 1)
            .values(actor="someone-else")
        )
    page = console.get("/audit").text
    assert "chain NOT verified" in page and "seq 1: hash does not match" in page


def test_console_policy_form_sets_the_rest_policy(api: Api, console: ConsoleClient) -> None:
    console.sign_in(api.tenant("acme"))
    form = {"pii_email": "refuse", "pii_phone": "allow", "ttl_memory": "30", "ttl_knowledge": ""}
    r = console.post("/policy", form, token_from="/policy")
    assert r.status_code == 200 and "Policy saved" in r.text and "Not available yet" in r.text
    policy = api.call("GET", "/v1/admin/policy", api.tenant("acme")).json()
    assert policy["pii"]["email"] == "refuse" and policy["pii"]["phone"] == "allow"
    assert policy["pii"]["card"] == "redact"
    assert policy["ttl_days"] == {"memory": 30.0, "knowledge": None}
    bad = console.post("/policy", {"ttl_memory": "soon"}, token_from="/policy")
    assert bad.status_code == 422 and "ttl_days.memory" in bad.text and "soon" not in bad.text


def test_console_operator_creates_and_deletes_tenants(api: Api, console: ConsoleClient) -> None:
    console.sign_in(OPERATOR_KEY)
    assert console.get("/users").status_code == 403
    r = console.post("/tenants", {"tenant_id": "globex"}, token_from="/tenants")
    assert r.status_code == 201
    admin = re.search(r'<pre id="secret">(mvk_[^<]+)</pre>', r.text)
    assert admin is not None
    assert api.call("GET", "/v1/admin/policy", admin.group(1)).status_code == 200
    wrong = console.post("/tenants/globex/delete", {"confirm": "glob"}, token_from="/tenants")
    assert wrong.status_code == 422
    assert api.services.tenants.exists("globex")
    r = console.post("/tenants/globex/delete", {"confirm": "globex"}, token_from="/tenants")
    assert r.status_code == 200 and 'id="verdict">✓ verified' in r.text
    assert not api.services.tenants.exists("globex")
    tenant_admin = ConsoleClient(api)
    tenant_admin.sign_in(api.tenant("acme"))
    assert tenant_admin.get("/tenants").status_code == 403


def test_console_reads_hold_under_row_level_security(make_services: ServicesFactory) -> None:
    """On PostgreSQL the app role is bound by RLS: every page reads through tenant sessions."""
    api = Api(make_services("postgres"))
    console = ConsoleClient(api)
    api.add(api.agent_key("acme", "alice", "planner"), NOTE)
    api.tenant("globex")
    console.sign_in(api.tenant("acme"))
    for path in PAGES:
        assert console.get(path).status_code == 200, path
    users = console.get("/users").text
    assert "alice" in users and "globex" not in users
    assert 'id="chain">✓ chain verified' in console.get("/audit").text
    r = console.post("/erasures", {"user_id": "alice"}, token_from="/erasures")
    assert 'id="verdict">✓ verified' in r.text


def test_console_erasure_page_shows_progress_until_the_receipt(
    api: Api, console: ConsoleClient
) -> None:
    api.add(api.agent_key("acme", "alice", "planner"), NOTE)
    jobs = api.client.app.state.compliance.erasures
    release = threading.Event()

    def hold(point: str) -> None:
        if point == "before:shred":
            assert release.wait(30)

    jobs.fault = hold
    api.client.app.state.erase_wait = 0.0
    console.sign_in(api.tenant("acme"))
    try:
        r = console.post("/erasures", {"user_id": "alice"}, token_from="/erasures")
        assert r.status_code == 200 and 'id="progress"' in r.text
        assert '<meta http-equiv="refresh" content="2">' in r.text and "verdict" not in r.text
        assert "receipt.json" not in r.text
        job_id = str(r.url).rsplit("/", 1)[1]
        assert console.get(f"/erasures/{job_id}/receipt.json").status_code == 404
    finally:
        release.set()
        jobs.wait()
        jobs.fault = None
    done = console.get(f"/erasures/{job_id}")
    assert 'id="verdict">✓ verified' in done.text and "http-equiv" not in done.text
