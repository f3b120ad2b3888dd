"""A-MEM never relates a dedicated agent's note with another agent's: its candidates come from
its own partition only, and other agents' candidates never from it. HTTP, both backends."""

from __future__ import annotations

from sqlalchemy import text

from memvault.amem.wiring import installed
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.test_dedicated.conftest import TENANT, USER, dedicated_key

NEAR = "Alice parks her red bicycle in the garage next to the lawn mower"
NEARER = "Alice parks her red bicycle in the garage beside the lawn mower"


def _run_jobs(api: Api) -> None:
    amem = installed(api.services)
    assert amem is not None and amem.jobs is not None
    for _ in range(5):
        if not amem.jobs.run_due(TENANT):
            break


def _pairs(api: Api) -> list[tuple[str, str, str]]:
    """Every link or relation as (kind, agent of one end, agent of the other)."""
    with api.services.db.session(TENANT) as sess:
        rows = sess.execute(
            text(
                "SELECT l.kind, a.agent_id, b.agent_id FROM links l "
                "JOIN notes a ON a.tenant_id = l.tenant_id AND a.id = l.src_id "
                "JOIN notes b ON b.tenant_id = l.tenant_id AND b.id = l.dst_id "
                "WHERE l.tenant_id = :t"
            ),
            {"t": TENANT},
        ).all()
    return [(str(k), str(a), str(b)) for k, a, b in rows]


def test_amem_relates_a_dedicated_agent_only_with_itself(
    make_services: ServicesFactory, backend: str
) -> None:
    api = Api(make_services(backend, amem=True))
    main = api.agent_key(TENANT, USER, "main")
    helper = api.agent_key(TENANT, USER, "helper")
    sandbox = dedicated_key(api, "sandbox")
    api.add(main, NEAR, visibility="shared")
    api.add(main, NEAR + " on weekdays")
    _run_jobs(api)
    api.add(sandbox, NEAR)  # near-identical to main's: A-MEM must not see main's
    _run_jobs(api)
    api.add(sandbox, NEARER)
    _run_jobs(api)
    api.add(helper, NEARER + " in the evening")  # must not see sandbox's
    _run_jobs(api)
    pairs = _pairs(api)
    crossing = [p for p in pairs if "sandbox" in p[1:] and p[1] != p[2]]
    assert crossing == [], crossing
    # positive control: A-MEM ran, and related sandbox's own near-identical notes
    assert any(p[1] == p[2] == "sandbox" for p in pairs), pairs
