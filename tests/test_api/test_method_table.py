"""The guard's method table answers every path as a scan of every route's regex would."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.routing import iter_route_contexts

from memvault.api.app import create_app
from memvault.api.boundary import MethodTable, literal_prefix
from memvault.runtime.factory import Services

NOTE_ID = "0190b3c4-1234-7abc-8def-0123456789ab"


def scan(routes: list[Any], path: str) -> frozenset[str] | None:
    """The table's contract, the slow way: every route's regex, literal routes first."""
    literal: set[str] = set()
    templated: set[str] = set()
    for context in iter_route_contexts(routes):
        regex, methods = getattr(context, "path_regex", None), getattr(context, "methods", None)
        if regex is None or not methods or not regex.match(path):
            continue
        (templated if getattr(context, "param_convertors", None) else literal).update(methods)
    if literal:
        return frozenset(literal)
    return frozenset(templated) if templated else None


def test_every_route_and_near_miss_gets_the_scanned_answer(
    make_services: Callable[..., Services],
) -> None:
    routes = list(create_app(make_services("sqlite")).routes)
    table = MethodTable(routes)
    paths = {"/", "/nope", "/v1", "/v1/memories/", "/v1/memories/search/x", "/healthz/"}
    for context in iter_route_contexts(routes):
        template = getattr(context, "path_format", None)
        if not template:
            continue
        concrete = re.sub(r"\{[^}]+\}", NOTE_ID, template)
        paths |= {template, concrete, concrete + "/", concrete[:-1], concrete + "x"}
    assert len(paths) > 100
    for path in sorted(paths):
        assert table.allowed(path) == scan(routes, path), path
    assert table.allowed("/v1/memories/search") == frozenset({"POST"})
    assert table.allowed(f"/v1/memories/{NOTE_ID}") == frozenset({"GET", "PATCH", "DELETE"})


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("^/v1/memories$", ("/v1/memories", True)),
        ("^/v1/memories/(?P<note_id>[^/]+)$", ("/v1/memories/", False)),
        (r"^/console/app\.js$", ("/console/app.js", True)),
        (r"^/a\d+$", ("/a", False)),
        ("^/files/(?P<path>.*)$", ("/files/", False)),
    ],
)
def test_literal_prefix_stops_at_the_first_pattern_character(
    pattern: str, expected: tuple[str, bool]
) -> None:
    assert literal_prefix(pattern) == expected
