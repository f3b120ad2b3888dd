"""Ids that are credentials are refused where ids enter and get stored (issue 33): a key's user
and agent, a tenant, a note's readers, a session. The answer names the field and the detector,
never the value; random-looking ids that are not credentials still pass."""

from __future__ import annotations

import uuid

import pytest

from memvault.errors import ScreenRefused
from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

# Built from parts so the repository holds no literal token.
AWS_KEY_ID = "AKIA" + "Q7VZ3K2LMN4PRSTW"
AWS_LOOKALIKE = "AKI\u0410" + "Q7VZ3K2LMN4PRSTW"  # a Cyrillic А
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
STRIPE_KEY = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
CREDENTIAL_IDS = {
    AWS_KEY_ID: "aws_access_key",
    AWS_LOOKALIKE: "aws_access_key",
    GITHUB_TOKEN: "github_token",
    GITHUB_TOKEN.replace("_", "-"): "github_token",
    STRIPE_KEY: "stripe_key",
}


def _refusal(response: object, field: str, value: str, detector: str) -> None:
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    error = response.json()["error"]  # type: ignore[attr-defined]
    assert error["code"] == "credential_refused"
    assert f"{field} refused by {detector}" in error["message"]
    assert value not in response.text  # type: ignore[attr-defined]


def test_admin_keys_refuse_user_and_agent_ids_that_are_credentials(
    make_services: ServicesFactory,
) -> None:
    api = Api(make_services("sqlite"))
    admin = api.tenant("t1")
    for value, detector in CREDENTIAL_IDS.items():
        for field, other in (("user_id", "agent_id"), ("agent_id", "user_id")):
            body = {field: value, other: "alice", "role": "agent"}
            _refusal(api.call("POST", "/v1/admin/keys", admin, json=body), field, value, detector)
    listed = api.call("GET", "/v1/admin/keys", admin)
    if listed.status_code == 200:
        assert all(value not in listed.text for value in CREDENTIAL_IDS)
    # Ids that only look random are not credentials.
    for ordinary in (str(uuid.uuid4()), uuid.uuid4().hex, "user-2NNEqL2nrIRdJ194ndJqAHwEfxC"):
        body = {"user_id": ordinary, "agent_id": "a1", "role": "agent"}
        assert api.call("POST", "/v1/admin/keys", admin, json=body).status_code == 201


def test_tenants_readers_and_sessions_refuse_credential_ids(
    make_services: ServicesFactory,
) -> None:
    api = Api(make_services("sqlite"))
    answer = api.call("POST", "/v1/operator/tenants", OPERATOR_KEY, json={"tenant_id": AWS_KEY_ID})
    _refusal(answer, "tenant_id", AWS_KEY_ID, "aws_access_key")
    key = api.agent_key("t1", "alice", "a1")
    text = "Alice keeps the spare house key under the blue flower pot"
    answer = api.call("POST", "/v1/memories", key, json={"text": text, "readers": [AWS_KEY_ID]})
    _refusal(answer, "readers", AWS_KEY_ID, "aws_access_key")
    answer = api.call("POST", "/v1/memories", key, json={"text": text, "session_id": AWS_KEY_ID})
    _refusal(answer, "session_id", AWS_KEY_ID, "aws_access_key")
    note = api.add(key, text, readers=["a2"])
    answer = api.call("PATCH", f"/v1/memories/{note['id']}", key, json={"readers": [AWS_KEY_ID]})
    _refusal(answer, "readers", AWS_KEY_ID, "aws_access_key")


def test_the_service_refuses_credential_ids_too(make_services: ServicesFactory) -> None:
    services = make_services("sqlite")
    services.tenants.create("t1")
    with pytest.raises(ScreenRefused) as refused:
        services.keys.issue("t1", AWS_KEY_ID, "a1", "agent")  # the CLI's and console's path
    assert refused.value.detector == "aws_access_key"
    assert AWS_KEY_ID not in str(refused.value)
    with pytest.raises(ScreenRefused):
        services.tenants.create(STRIPE_KEY.replace("_", "-"))
    from memvault.scope import validate_new_id

    assert validate_new_id("alice.smith@example.com", "user_id") == "alice.smith@example.com"
