"""The API contract at the HTTP boundary: what every request is checked for before a route body
runs, the error shape of every failure, and the OpenAPI document that describes both."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault.api.app import create_app
from memvault.api.boundary import MAX_BODY_BYTES
from memvault.errors import IndexError_
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

JSON = {"content-type": "application/json"}
SURROGATE = '"\\ud800"'  # a lone surrogate, as JSON text (json.dumps writes the same)


@pytest.fixture
def api(make_services: ServicesFactory) -> Api:
    return Api(make_services("sqlite"))


@pytest.fixture
def agent(api: Api) -> str:
    return api.agent_key("acme", "alice", "assistant")


def raw(api: Api, method: str, path: str, key: str | None, body: bytes | str) -> Any:
    content = body.encode() if isinstance(body, str) else body
    return api.call(method, path, key, content=content, headers=dict(JSON))


def assert_error(r: Any, status: int, code: str | None = None) -> dict[str, str]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    if code is not None:
        assert body["error"]["code"] == code
    return dict(body["error"])


# --- 2. Invalid Unicode is a 422 before anything is written -------------------------------------


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ('"text": ' + SURROGATE, "text"),
        ('"text": "a fine note", "topics": [' + SURROGATE + "]", "topics.0"),
        ('"text": "a fine note", "source": ' + SURROGATE, "source"),
        ('"text": "a fine note", "readers": [' + SURROGATE + "]", "readers.0"),
        ('"text": "a fine\\u0000note"', "text"),
        ('"text": "a fine note", "topics": ["ok\\u0000"]', "topics.0"),
    ],
)
def test_invalid_unicode_or_nul_on_add_is_422_and_nothing_is_stored(
    api: Api, agent: str, fields: str, name: str
) -> None:
    r = raw(api, "POST", "/v1/memories", agent, "{" + fields + "}")
    assert name in assert_error(r, 422, "invalid_request")["message"]
    assert "\\ud800" not in r.text and "\ud800" not in r.text
    assert api.call("GET", "/v1/memories", agent).json()["total"] == 0


def test_a_surrogate_in_a_patch_is_422_and_the_note_is_unchanged(api: Api, agent: str) -> None:
    note = api.add(agent, "The user waters the ferns on Sundays", topics=["plants"])
    for fields in (
        '"topics": [' + SURROGATE + "]",
        '"text": ' + SURROGATE,
        '"source": ' + SURROGATE,
        '"readers": [' + SURROGATE + "]",
    ):
        r = raw(api, "PATCH", f"/v1/memories/{note['id']}", agent, "{" + fields + "}")
        assert_error(r, 422, "invalid_request")
    r = api.call("GET", f"/v1/memories/{note['id']}", agent)
    assert r.status_code == 200
    assert r.json()["text"] == note["text"] and r.json()["topics"] == ["plants"]
    assert api.search(agent, "ferns")[0]["id"] == note["id"]


def test_a_surrogate_in_a_search_is_422(api: Api, agent: str) -> None:
    r = raw(api, "POST", "/v1/memories/search", agent, '{"query": ' + SURROGATE + "}")
    assert "query" in assert_error(r, 422, "invalid_request")["message"]
    body = '{"query": "ferns", "topics": [' + SURROGATE + "]}"
    r = raw(api, "POST", "/v1/memories/search", agent, body)
    assert "topics" in assert_error(r, 422, "invalid_request")["message"]


def test_a_surrogate_in_admin_and_operator_bodies_is_422(api: Api) -> None:
    admin = api.tenant("acme")
    r = raw(api, "POST", "/v1/admin/keys", admin, '{"user_id": ' + SURROGATE + ', "agent_id": "a"}')
    assert "user_id" in assert_error(r, 422, "invalid_request")["message"]
    r = raw(api, "POST", "/v1/admin/erase", admin, '{"user_id": ' + SURROGATE + "}")
    assert_error(r, 422, "invalid_request")
    r = raw(api, "POST", "/v1/operator/tenants", OPERATOR_KEY, '{"tenant_id": ' + SURROGATE + "}")
    assert "tenant_id" in assert_error(r, 422, "invalid_request")["message"]


# --- 3. Ids are exact ---------------------------------------------------------------------------


@pytest.mark.parametrize("tenant", ["acme\n", "acme\r\n", "-acme", "ac me", "a" * 129, ""])
def test_a_tenant_id_outside_the_grammar_is_422(api: Api, tenant: str) -> None:
    r = api.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": tenant})
    error = assert_error(r, 422, "invalid_request")
    assert "tenant_id" in error["message"]
    r = api.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": "acme"})
    assert r.status_code == 201


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/admin/keys", {"user_id": "alice\n", "agent_id": "a1"}),
        ("/v1/admin/keys", {"user_id": "alice", "agent_id": "a1\n"}),
        ("/v1/admin/erase", {"user_id": "alice\n"}),
        ("/v1/admin/erase", {"user_id": "alice", "agent_id": "a1\n"}),
    ],
)
def test_user_and_agent_ids_with_a_trailing_newline_are_422(
    api: Api, path: str, body: dict[str, str]
) -> None:
    assert_error(api.call("POST", path, api.tenant("acme"), json=body), 422, "invalid_request")


def test_readers_with_a_trailing_newline_are_422(api: Api, agent: str) -> None:
    r = api.call("POST", "/v1/memories", agent, json={"text": "A note", "readers": ["bob\n"]})
    assert "readers.0" in assert_error(r, 422, "invalid_request")["message"]


def test_a_link_target_must_be_a_note_id(api: Api, agent: str) -> None:
    note = api.add(agent, "The user's bike is a green gravel bike")
    r = api.call("POST", f"/v1/memories/{note['id']}/links", agent, json={"target_id": "x\n"})
    assert "target_id" in assert_error(r, 422, "invalid_request")["message"]


def test_a_malformed_note_id_in_the_path_is_404(api: Api, agent: str) -> None:
    assert_error(api.call("GET", "/v1/memories/not-a-uuid", agent), 404, "not_found")


# --- 4. Numbers are bounded ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "query", [f"offset={2**63}", "offset=1000001", "offset=-1", "limit=0", "limit=1001"]
)
def test_list_parameters_out_of_range_are_422(api: Api, agent: str, query: str) -> None:
    r = api.call("GET", f"/v1/memories?{query}", agent)
    assert query.split("=")[0] in assert_error(r, 422, "invalid_request")["message"]


def test_list_parameters_at_their_bounds_are_accepted(api: Api, agent: str) -> None:
    assert api.call("GET", "/v1/memories?offset=1000000&limit=1000", agent).status_code == 200
    assert api.call("GET", "/v1/memories?offset=0&limit=1", agent).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "limit": 101},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 2**63},
        {"query": "x", "limit": True},
        {"query": "x", "limit": 5.0},
    ],
)
def test_search_limit_outside_its_range_or_type_is_422(
    api: Api, agent: str, body: dict[str, Any]
) -> None:
    assert_error(api.call("POST", "/v1/memories/search", agent, json=body), 422)


@pytest.mark.parametrize("ttl", [0, -1, 36_501, 1e308, "7"])
def test_ttl_days_outside_its_range_is_422(api: Api, agent: str, ttl: Any) -> None:
    r = api.call("POST", "/v1/memories", agent, json={"text": "A passing note", "ttl_days": ttl})
    assert "ttl_days" in assert_error(r, 422, "invalid_request")["message"]


def test_numbers_too_long_to_parse_are_a_4xx(api: Api, agent: str) -> None:
    r = raw(
        api, "POST", "/v1/memories/search", agent, '{"query": "x", "limit": 1' + "0" * 5000 + "}"
    )
    assert 400 <= r.status_code < 500
    assert_error(r, r.status_code)


# --- 11. Unparseable, over-deep and oversized bodies -------------------------------------------


@pytest.mark.parametrize("body", ['{"text": ', "{'text': 'x'}", "[1,]", "\x00", '{"text": "x"}}'])
def test_unparseable_json_is_400_in_the_error_shape(api: Api, agent: str, body: str) -> None:
    assert_error(raw(api, "POST", "/v1/memories", agent, body), 400, "malformed_json")


@pytest.mark.parametrize(
    "body",
    [
        "[" * 10_000 + "]" * 10_000,
        "{" + '"a":{' * 5_000 + "}" * 5_001,
        '{"text": ' + "[" * 100 + "]" * 100 + "}",
        "[" * 100_000,  # unbalanced too
    ],
)
def test_over_deep_json_is_400_never_a_500(api: Api, agent: str, body: str) -> None:
    for path in ("/v1/memories", "/v1/memories/search"):
        assert_error(raw(api, "POST", path, agent, body), 400, "body_too_deep")


def test_brackets_inside_strings_do_not_count_as_depth(api: Api, agent: str) -> None:
    text = "The user wrote " + "[{" * 200 + ' "quoted \\" [ brackets'
    assert api.add(agent, text)["text"] == text


def test_an_oversized_body_is_413(api: Api, agent: str) -> None:
    body = '{"text": "' + "x" * MAX_BODY_BYTES + '"}'
    assert_error(raw(api, "POST", "/v1/memories", agent, body), 413, "body_too_large")


def test_100k_unknown_fields_give_a_short_error(api: Api, agent: str) -> None:
    body = "{" + ",".join(f'"f{i}":0' for i in range(100_000)) + "}"
    r = raw(api, "POST", "/v1/memories", agent, body)
    error = assert_error(r, 422, "invalid_request")
    assert len(r.content) < 2_000
    assert "more problems" in error["message"]


def test_a_huge_unknown_field_name_is_cut_in_the_message(api: Api, agent: str) -> None:
    name = "secretish" * 10_000
    r = api.call("POST", "/v1/memories", agent, json={"text": "A note", name: 1})
    error = assert_error(r, 422, "invalid_request")
    assert len(r.content) < 1_000 and name not in error["message"]


def test_validation_messages_never_echo_values(api: Api, agent: str) -> None:
    marker = "zz-marker-AKIAIOSFODNN7EXAMPLE"
    for body in (
        {"text": "A note", "visibility": marker},
        {"text": "A note", "readers": [marker + "!"]},
        {"text": "A note", "topics": [marker * 10]},
        {"text": "A note", "ttl_days": marker},
    ):
        r = api.call("POST", "/v1/memories", agent, json=body)
        assert r.status_code == 422 and "zz-marker" not in r.text


# --- 11. 405 carries Allow ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/v1/memories", {"GET", "POST"}),
        ("OPTIONS", "/v1/memories", {"GET", "POST"}),
        ("GET", "/v1/memories/search", {"POST"}),
        ("PATCH", "/v1/memories/search", {"POST"}),  # not a PATCH of a note called "search"
        ("DELETE", "/v1/memories/search", {"POST"}),
        ("PUT", "/v1/memories/01a22d1e-06ce-7dff-8c4a-d19a4cfb66cd", {"GET", "PATCH", "DELETE"}),
        ("DELETE", "/v1/admin/policy", {"GET", "PUT"}),
        ("POST", "/healthz", {"GET"}),
    ],
)
def test_405_lists_every_method_of_the_path_in_allow(
    api: Api, agent: str, method: str, path: str, allow: set[str]
) -> None:
    r = api.call(method, path, agent)
    assert_error(r, 405, "method_not_allowed")
    assert {m.strip() for m in r.headers["allow"].split(",")} == allow


def test_an_unknown_path_is_404_in_the_error_shape(api: Api, agent: str) -> None:
    assert_error(api.call("GET", "/v1/nothing-here", agent), 404, "not_found")


# --- 11. Unhandled errors -----------------------------------------------------------------------


def test_an_unhandled_exception_is_a_json_500_with_a_logged_correlation_id(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(api.services, operator_key=OPERATOR_KEY)
    secret = "value-from-the-request-s3cr3t"

    @app.post("/boom", include_in_schema=False)
    def boom(body: dict[str, str]) -> None:
        raise RuntimeError(body["text"])

    @app.get("/index-down", include_in_schema=False)
    def index_down() -> None:
        raise IndexError_("shard /srv/memvault/index/acme is locked")

    client = TestClient(app)  # raise_server_exceptions stays on: nothing may escape the app
    with caplog.at_level(logging.INFO):
        r = client.post("/boom", json={"text": secret})
    error = assert_error(r, 500, "internal_error")
    cid = r.headers["x-correlation-id"]
    assert re.fullmatch(r"internal error \(correlation id [0-9a-f]{16}\)", error["message"])
    assert cid in error["message"]
    assert secret not in r.text and "RuntimeError" not in r.text
    logged = [rec.getMessage() for rec in caplog.records if cid in rec.getMessage()]
    assert logged and "RuntimeError" in logged[0]
    assert all(secret not in rec.getMessage() for rec in caplog.records)

    r = client.get("/index-down")
    error = assert_error(r, 500, "index_error")
    assert "/srv" not in r.text and r.headers["x-correlation-id"] in error["message"]
    metrics = client.get("/metrics", headers={"Authorization": f"Bearer {OPERATOR_KEY}"}).text
    assert 'route="/boom",status="500"' in metrics


def test_the_guard_stays_outermost_when_middleware_is_added_later(api: Api) -> None:
    app = create_app(api.services, operator_key=OPERATOR_KEY)

    class Exploding:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == "/healthz":
                raise RuntimeError("a middleware bug")
            await self.inner(scope, receive, send)

    app.add_middleware(Exploding)
    client = TestClient(app)
    assert_error(client.get("/healthz"), 500, "internal_error")
    r = client.put("/healthz")  # the guard answers before the later middleware runs
    assert_error(r, 405, "method_not_allowed")


# --- 11. The OpenAPI document is the contract ---------------------------------------------------


PUBLIC = {("get", "/healthz"), ("get", "/v1/receipt-keys")}
TOKEN_ONLY = {("get", "/metrics")}  # the operator key or the metrics token: 401, never 403


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def test_openapi_declares_the_bearer_scheme_on_every_protected_operation(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes == {"bearerAuth": {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}}
    for method, path, op in operations(spec):
        if (method, path) in PUBLIC:
            assert not op.get("security"), (method, path)
        elif (method, path) in TOKEN_ONLY:
            assert op["security"] == [{"bearerAuth": []}], (method, path)
            assert "401" in op["responses"] and "403" not in op["responses"], (method, path)
        else:
            assert op["security"] == [{"bearerAuth": []}], (method, path)
            assert {"401", "403"} <= set(op["responses"]), (method, path)


def test_every_error_response_uses_error_body_and_no_fastapi_default_is_left(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(spec)
    assert "ValidationError" not in spec["components"]["schemas"]
    body = spec["components"]["schemas"]["ErrorBody"]
    assert body["required"] == ["error"]
    detail = spec["components"]["schemas"]["ErrorDetail"]
    assert set(detail["required"]) == {"code", "message"}
    for method, path, op in operations(spec):
        errors = {s: r for s, r in op["responses"].items() if int(s) >= 400}
        assert "500" in errors, (method, path)
        keyed = op.get("security") and (method, path) not in TOKEN_ONLY  # an API key's route
        if op.get("parameters") or op.get("requestBody") or keyed:
            assert "422" in errors, (method, path)
        if op.get("requestBody"):
            assert {"400", "413"} <= set(errors), (method, path)
        if "{" in path:
            assert "404" in errors, (method, path)
        for response in errors.values():
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)


def test_openapi_content_types_and_empty_204s(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    metrics = spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(metrics) == ["text/plain; version=0.0.4; charset=utf-8"]
    audit = spec["paths"]["/v1/admin/audit"]["get"]["responses"]["200"]["content"]
    assert list(audit) == ["application/x-ndjson"]
    for method, path, op in operations(spec):
        if "204" in op["responses"]:
            assert "content" not in op["responses"]["204"], (method, path)


def test_the_served_content_types_match_the_document(api: Api) -> None:
    r = api.metrics()
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    r = api.call("GET", "/v1/admin/audit", api.tenant("acme"))
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    for line in r.text.splitlines():
        json.loads(line)


def test_openapi_documents_id_patterns_and_bounds(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    id_pattern = "^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$"
    assert schemas["CreateTenant"]["properties"]["tenant_id"]["pattern"] == id_pattern
    assert schemas["IssueKey"]["properties"]["user_id"]["pattern"] == id_pattern
    readers = schemas["AddMemory"]["properties"]["readers"]["anyOf"][0]["items"]
    assert readers["pattern"] == id_pattern
    params = {
        p["name"]: p["schema"]
        for _method, _path, op in operations(spec)
        for p in op.get("parameters", ())
    }
    assert params["note_id"]["pattern"].startswith("^[0-9a-fA-F]{8}-")
    assert params["key_id"]["pattern"] == "^[0-9a-f]{16}$"
    assert params["tenant_id"]["pattern"] == id_pattern
    assert params["offset"]["minimum"] == 0 and params["offset"]["maximum"] == 1_000_000
    assert params["limit"]["minimum"] == 1 and params["limit"]["maximum"] == 1_000
    search = schemas["SearchMemories"]["properties"]["limit"]
    assert (search["minimum"], search["maximum"]) == (1, 100)


def test_docs_work_offline(api: Api) -> None:
    r = api.client.get("/docs")
    assert r.status_code == 200 and "SwaggerUIBundle" in r.text
    assert not re.search(r"(?i)\b(?:https?:)?//[a-z0-9.-]+", r.text), "a URL outside the server"
    assets = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert len(assets) >= 3
    for asset in assets:
        assert asset.startswith("/"), asset
        assert api.client.get(asset).status_code == 200, asset
    assert "validatorUrl" in r.text  # no badge fetched from the online validator
    assert api.client.get("/redoc").status_code == 404  # ReDoc would load from a CDN
