"""A form-filling client over the console (TestClient): sign in, read CSRF tokens, post forms."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.apiclient import Api
from tests.conftest import ServicesFactory

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class ConsoleClient:
    """One browser-like visitor of the console: its own cookie jar, forms with their tokens."""

    def __init__(self, api: Api) -> None:
        from fastapi.testclient import TestClient

        self.api = api
        self.http = TestClient(api.client.app)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.http.get(f"/console{path}", **kw)

    def csrf(self, path: str) -> str:
        page = self.get(path)
        assert page.status_code == 200, page.text
        found = CSRF.search(page.text)
        assert found is not None, f"no form token on {path}"
        return found.group(1)

    def post(
        self, path: str, form: dict[str, str], *, token_from: str | None = None, **kw: Any
    ) -> httpx.Response:
        data = dict(form)
        if token_from is not None:
            data["csrf"] = self.csrf(token_from)
        return self.http.post(f"/console{path}", data=data, **kw)

    def sign_in(self, key: str) -> httpx.Response:
        return self.post("/login", {"api_key": key}, token_from="/login")


@pytest.fixture
def api(make_services: ServicesFactory) -> Api:
    return Api(make_services("sqlite"))


@pytest.fixture
def console(api: Api) -> ConsoleClient:
    return ConsoleClient(api)
