"""Fixtures shared by the compliance tests."""

from __future__ import annotations

import pytest

from tests.apiclient import Api
from tests.conftest import ServicesFactory


@pytest.fixture
def api(make_services: ServicesFactory, backend: str) -> Api:
    return Api(make_services(backend))
