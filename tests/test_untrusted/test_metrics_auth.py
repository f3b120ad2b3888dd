"""`/metrics` names every tenant's routes and refusals: it answers only a credential."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from tests.apiclient import OPERATOR_KEY, Api
from tests.conftest import ServicesFactory

METRICS_TOKEN = "mvmetrics_0123456789abcdefghijklmnop"


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    services = make_services(backend)
    services.settings = services.settings.model_copy(
        update={"metrics_token": SecretStr(METRICS_TOKEN)}
    )
    return Api(services)


def scrape(api: Api, authorization: str | None) -> tuple[int, str]:
    headers = {} if authorization is None else {"Authorization": authorization}
    r = api.client.get("/metrics", headers=headers)
    return r.status_code, r.text


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic " + METRICS_TOKEN,
        "Bearer " + METRICS_TOKEN[:-1],
        "Bearer " + METRICS_TOKEN + "x",
        "Bearer " + OPERATOR_KEY.upper(),
    ],
)
def test_metrics_without_a_credential_is_401_and_shows_no_counter(
    api: Api, authorization: str | None
) -> None:
    api.agent_key("acme", "alice", "planner")  # some traffic to count
    status, body = scrape(api, authorization)
    assert status == 401, body
    assert "memvault_requests" not in body and "acme" not in body


def test_an_agent_or_admin_key_does_not_read_metrics(api: Api) -> None:
    agent = api.agent_key("acme", "alice", "planner")
    for key in (agent, api.tenant("acme")):
        assert scrape(api, f"Bearer {key}")[0] == 401


@pytest.mark.parametrize("credential", [OPERATOR_KEY, METRICS_TOKEN])
def test_the_operator_key_or_the_metrics_token_reads_metrics(api: Api, credential: str) -> None:
    api.agent_key("acme", "alice", "planner")
    status, body = scrape(api, f"Bearer {credential}")
    assert status == 200 and "memvault_requests" in body


def test_without_operator_key_or_token_metrics_answers_no_one(
    make_services: ServicesFactory,
) -> None:
    from fastapi.testclient import TestClient

    from memvault.api.app import create_app

    client = TestClient(create_app(make_services("sqlite")))
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 401
