"""Credentials in URLs, netrc lines, authorization headers and command-line flags."""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.screening._model import Finding
from memvault.screening._secret_values import (
    HEADER,
    PASSWORD,
    URL_PASSWORD,
    is_placeholder,
    looks_like_token,
)

# -- URLs, headers, CLI flags ------------------------------------------------------------------
_URL_CREDENTIALS = re.compile(
    r"\b[a-z][a-z0-9+.\-]{1,20}://(?P<user>[^\s:/?#@\"'<>]{1,100}):"
    r"(?P<pw>[^\s/?#\"'<>]{1,200})@(?=[A-Za-z0-9\[\-_.%])",
    re.IGNORECASE,
)
_NETRC = re.compile(r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<pw>\S+)", re.IGNORECASE)
_QUERY_SECRET = re.compile(
    r"[?&](?:access_token|token|api[_\-]?key|apikey|key|secret|client_secret|password|pwd|"
    r"sig|signature|auth|auth_token)=(?P<v>[^&\s#\"'<>]{8,})",
    re.IGNORECASE,
)
_BEARER = re.compile(
    r"\b(?:Bearer|Token|SSWS)\s*:?\s+(?P<v>[A-Za-z0-9._~+/\-]{12,}=*)|"
    r"(?i:authorization|x-api-key|api-key|x-auth-token|[a-z\-]*-token)\s*:\s*[\"']?"
    r"(?P<h>[A-Za-z0-9._~+/\-:]{16,}=*)",
)
_CLI_USER_PASS = re.compile(
    r"(?:^|\s)-u\s+[\"']?[^\s\"']+[\"']?\s+-p\s+[\"']?(?P<v>[^\s\"']+)|"
    r"(?:^|\s)(?:-u|--user)\s+[\"']?[^\s:\"']+:(?P<c>[^\s\"'@]{6,})[\"']?(?:\s|$)|"
    r"(?:^|\s)-(?:-?password|Password|-pass|pwd)(?:=|\s+)[\"']?(?P<f>[^\s\"']+)",
)
_CLI_VALUE_GROUPS = ("v", "c", "f")


def url_and_header_findings(text: str) -> Iterator[Finding]:
    """Passwords in URLs and netrc lines, secret URL queries, auth headers and CLI flags."""
    for m in _URL_CREDENTIALS.finditer(text):
        if not is_placeholder(m.group("pw")):
            yield Finding("url_embedded_password", URL_PASSWORD, m.start("pw"), m.end("pw"))
    for m in _NETRC.finditer(text):
        if not is_placeholder(m.group("pw")):
            yield Finding("netrc_password", URL_PASSWORD, m.start("pw"), m.end("pw"))
    for m in _QUERY_SECRET.finditer(text):
        if looks_like_token(m.group("v")) and not is_placeholder(m.group("v")):
            yield Finding("url_query_secret", URL_PASSWORD, m.start("v"), m.end("v"))
    for m in _BEARER.finditer(text):
        group = "v" if m.group("v") is not None else "h"
        value = m.group(group)
        if looks_like_token(value) and not is_placeholder(value):
            yield Finding("authorization_header", HEADER, m.start(group), m.end(group))
    for m in _CLI_USER_PASS.finditer(text):
        for group in _CLI_VALUE_GROUPS:
            value = m.group(group)
            if value is not None and not is_placeholder(value):
                yield Finding("cli_password", PASSWORD, m.start(group), m.end(group))
