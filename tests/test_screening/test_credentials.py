"""Credentials are refused per detector family; near-misses are accepted."""

from __future__ import annotations

import base64
import json

import pytest

from memvault.screening import Screen, Verdict
from tests.test_screening.conftest import ALNUM, HEX, UPPER_DIGITS, URLSAFE, fake


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _jwt() -> str:
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    payload = _b64url({"sub": "1234567890", "name": "Fake User", "iat": 1516239022})
    return f"{header}.{payload}.{fake('', 43, URLSAFE)}"


def _pem() -> str:
    begin = "-----BEGIN " + "RSA PRIVATE KEY-----"
    body = fake("MIIEpAIBAAKCAQEA", 60, ALNUM + "+/")
    return f"{begin}\n{body}\n-----END RSA PRIVATE KEY-----"


VENDOR_TOKENS: dict[str, str] = {
    "aws": "AKIA" + fake("", 16, UPPER_DIGITS),
    "github": "ghp_" + fake("", 36),
    "github_fine_grained": "github_pat_" + fake("", 82, ALNUM + "_"),
    "gitlab": "glpat-" + fake("", 20, URLSAFE),
    "slack": "xoxb-"
    + fake("", 12, "0123456789")
    + "-"
    + fake("", 13, "0123456789")
    + "-"
    + fake("", 24),
    "stripe": "sk_live_" + fake("", 24),
    "openai": "sk-proj-" + fake("", 64, URLSAFE),
    "anthropic": "sk-ant-api03-" + fake("", 93, URLSAFE),
    "google": "AIza" + fake("", 35, URLSAFE),
    "sendgrid": "SG." + fake("", 22, URLSAFE) + "." + fake("", 43, URLSAFE),
    "npm": "npm_" + fake("", 36),
    "pypi": "pypi-AgEIcHlwaS5vcmc" + fake("", 70, URLSAFE),
    "telegram": "5839571234:AA" + fake("", 33, URLSAFE),
    "huggingface": "hf_" + fake("", 34, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
}


@pytest.mark.parametrize("vendor", sorted(VENDOR_TOKENS))
def test_check_vendor_token_in_prose_refused(screen: Screen, vendor: str) -> None:
    token = VENDOR_TOKENS[vendor]
    result = screen.check(f"Here is the {vendor} key for the deploy job: {token} keep it safe")
    assert result.verdict is Verdict.REFUSE
    assert result.refusal_code == "credential_refused"
    assert result.detector


@pytest.mark.parametrize(
    ("text", "family"),
    [
        (
            "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey="
            + fake("", 86, ALNUM + "+/")
            + "==;EndpointSuffix=core.windows.net",
            "vendor_token",
        ),
        (f"the deploy key is below\n{_pem()}", "private_key"),
        (f"session cookie for the admin UI: {_jwt()}", "jwt"),
        ("db is postgresql://app:" + fake("Pw", 10) + "@db.internal:5432/prod", "url_password"),
        ("clone with https://deploy:" + fake("", 12) + "@git.example.org/team/repo.git", None),
        ("password: " + fake("Tr0", 9, ALNUM + "!&%"), "password"),
        ("DB_PASSWORD=" + fake("", 14), "password"),
        ('api_key = "' + fake("", 32, HEX) + '"', None),
        ("my password is hunter2", "password"),
        ("My password is swordfish.", "password"),
        ("The wifi password is 'correct horse battery'", "password"),
        ("the new password was changed to Blue42Sky!", "password"),
        ("我的密码是abc12345，别告诉别人", "password"),
        ("服务器登录密码：Zx9kq2mP", "password"),
        ("邮箱密码为 qwerty789", "password"),
        ("curl -H 'Authorization: Bearer " + fake("", 40, URLSAFE) + "' https://api.x.io", None),
        ("$6$rounds=5000$" + fake("", 16) + "$" + fake("", 86, ALNUM + "./"), "password_hash"),
    ],
)
def test_check_credential_family_refused(screen: Screen, text: str, family: str | None) -> None:
    result = screen.check(text)
    assert result.refusal_code == "credential_refused"
    if family is not None:
        assert family in {f.family for f in result.findings}


NEAR_MISSES = [
    "reset the password policy for the whole team",
    "we need a bigger token budget for the summarizer",
    "fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b yesterday",
    "ticket 123e4567-e89b-12d3-a456-426614174000 is closed now",
    "set api_key to <YOUR_API_KEY> in the config file",
    "export OPENAI_API_KEY=${OPENAI_API_KEY} before running",
    'password = os.getenv("DB_PASSWORD") in settings.py',
    "my password is strong",
    "my password is too short, the site says",
    "The password is written on a sticky note under the keyboard",
    "I forgot my password again, so annoying",
    "max_tokens: 4096 for the summary model",
    "The token ring network was popular in the 90s",
    "Use the secret sauce recipe from grandma",
    "My PIN is in the drawer next to the passport",
    "password: none required for the guest network",
    "我今天去公园散步，天气很好，心情也不错。",
    "密码是什么？我忘记了，得去重置一下",
    "美国特勤局（英文：United Secret Service，缩写USSS）是美国联邦政府的执法机构",
    "sha256 digest e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 ok",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
]
"""Prose about credentials, and values shaped like secrets that are not: accepted."""


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_check_near_miss_accepted(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.verdict is Verdict.ACCEPT, result.detector


def test_check_refused_findings_hold_no_value(screen: Screen) -> None:
    token = VENDOR_TOKENS["github"]
    result = screen.check(f"token for CI: {token}")
    assert result.text == ""
    assert token not in repr(result)
    for finding in result.findings:
        assert {type(v) for v in (finding.start, finding.end)} == {int}
        assert token not in finding.detector and token not in finding.family
    spans = [(f.start, f.end) for f in result.findings]
    text = f"token for CI: {token}"
    assert any(text[s:e] == token for s, e in spans)


def _aws_secret(seed: int = 7) -> str:
    return fake("", 38, ALNUM + "/+", seed=seed) + "Zq"


@pytest.mark.parametrize(
    "layout",
    [
        "{id} {secret}",
        "backup user: {id}\n{secret}\n",
        "{id},{secret},us-east-1",
        "the id is {id} and the other half is {secret} for the backup job",
    ],
)
def test_check_aws_secret_beside_access_key_id_refused(screen: Screen, layout: str) -> None:
    key_id = "AKIA" + fake("", 16, UPPER_DIGITS)
    secret = _aws_secret()
    text = layout.format(id=key_id, secret=secret)
    result = screen.check(text)
    assert result.refusal_code == "credential_refused"
    pair = [f for f in result.findings if f.detector == "aws_secret_access_key"]
    assert [text[f.start : f.end] for f in pair] == [secret]


def test_check_aws_secret_with_session_key_id_found(screen: Screen) -> None:
    text = "ASIA" + fake("", 16, UPPER_DIGITS) + " " + _aws_secret(seed=3)
    assert "aws_secret_access_key" in {f.detector for f in screen.check(text).findings}


@pytest.mark.parametrize(
    "other",
    [
        "3f786850e387550fdab836ed7e6dc881de23001b",  # a git SHA: no capitals
        "a" * 40,  # a placeholder
    ],
)
def test_check_aws_pair_needs_a_secret_shaped_value(screen: Screen, other: str) -> None:
    text = "AKIA" + fake("", 16, UPPER_DIGITS) + " " + other
    detectors = {f.detector for f in screen.check(text).findings}
    assert "aws_secret_access_key" not in detectors


def test_check_bare_forty_chars_without_key_id_not_aws_secret(screen: Screen) -> None:
    text = "note " + _aws_secret() + " is an upload id"
    detectors = {f.detector for f in screen.check(text).findings}
    assert "aws_secret_access_key" not in detectors
