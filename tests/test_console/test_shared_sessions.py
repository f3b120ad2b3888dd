"""Console sessions live in the database: one session on every worker, ended everywhere at once.

Two apps over one data store stand for two `memvault serve` workers. Before migration 0011 each
process sealed its cookies under its own random key, so a session opened on one worker was
refused by the other (and a sign-out reached only the worker that served it)."""

from __future__ import annotations

from sqlalchemy import select

from memvault.console.session import COOKIE
from memvault.store.models import ConsoleSessionRow
from tests.apiclient import Api
from tests.conftest import ServicesFactory
from tests.test_console.conftest import ConsoleClient


def test_console_session_is_shared_by_workers_and_stored_as_a_digest(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    worker_a, worker_b = Api(services), Api(services)
    admin = worker_a.tenant("acme")
    on_a, on_b = ConsoleClient(worker_a), ConsoleClient(worker_b)
    assert on_a.sign_in(admin).status_code == 200
    assert on_a.get("/users", follow_redirects=False).status_code == 200
    cookie = on_a.http.cookies.get(COOKIE)
    assert cookie
    on_b.http.cookies.set(COOKIE, cookie, path="/console")
    # the session made on A opens on B
    assert on_b.get("/users", follow_redirects=False).status_code == 200

    with services.db.session(None) as sess:
        rows = list(sess.execute(select(ConsoleSessionRow)).scalars())
    stored = b"".join(row.id_digest.encode() + bytes(row.sealed) for row in rows)
    assert rows and cookie.encode() not in stored
    for part in admin.split("."):
        assert part.encode() not in stored  # neither the token nor the key is in the database

    assert on_b.post("/logout", {}, token_from="/users").status_code == 200
    page = on_a.get("/users", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].endswith("/login")
