"""No log line carries a user or agent id (issue 33): the audit log keeps user ids only as keyed
pseudonyms, and an erased user's id must be in no file after the erase. Everything below runs
through the real app with memvault's loggers at DEBUG, as `memvault serve` configures them."""

from __future__ import annotations

import logging

import pytest

from tests.apiclient import Api
from tests.conftest import ServicesFactory

USER = "usrqlogzed"
AGENT = "agtqlogzed"
OTHER_AGENT = "agtqlogkept"


def test_an_erase_logs_no_user_or_agent_id(
    make_services: ServicesFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # As `memvault serve` configures logging (`configure_logging`): memvault's loggers at the
    # chosen level (DEBUG here), other libraries at WARNING and above.
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.DEBUG, logger="memvault")
    api = Api(make_services("sqlite"))
    admin = api.tenant("t1")
    key = api.agent_key("t1", USER, AGENT)
    other = api.agent_key("t1", USER, OTHER_AGENT)
    api.add(key, "The user keeps the canoe paddles in the garden shed")
    api.add(other, "The user waters the tomatoes every other evening")
    api.call("GET", "/v1/admin/export", admin, params={"user_id": USER})
    rotate = {"user_id": USER, "agent_id": OTHER_AGENT}
    assert api.call("POST", "/v1/admin/keys/rotate", admin, json=rotate).status_code == 202
    body = {"user_id": USER, "agent_id": AGENT}
    assert api.call("POST", "/v1/admin/erase", admin, json=body).status_code == 200
    body = {"user_id": USER}
    assert api.call("POST", "/v1/admin/erase", admin, json=body).status_code == 200

    # Every record but the test client's own (httpx logs the URL it requests).
    server = [r for r in caplog.records if not r.name.startswith("httpx")]
    assert any(r.name == "memvault.access" for r in server)
    lines = [record.getMessage() + " " + repr(record.__dict__) for record in server]
    assert any("keys shredded" in line for line in lines)  # the erase did log, without ids
    for needle in (USER, AGENT, OTHER_AGENT):
        leaking = [line.split(" {", 1)[0] for line in lines if needle in line]
        assert not leaking, (needle, leaking[:3])
