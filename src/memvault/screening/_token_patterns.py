"""Published token formats of cloud and SaaS vendors, key blocks, JWTs and password hashes.

Each regex names the vendor's prefix and the shape of the rest. Beside the table,
`aws_pair_findings` finds a bare AWS secret access key in a text that also holds an access key id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memvault.screening._model import Finding
from memvault.screening._secret_values import (
    HEADER,
    JWT,
    PASSWORD_HASH,
    PRIVATE_KEY,
    VENDOR,
    is_placeholder,
    shannon,
)


@dataclass(frozen=True, slots=True)
class _Pattern:
    detector: str
    family: str
    regex: re.Pattern[str]
    group: int = 0


def _p(detector: str, family: str, pattern: str, group: int = 0, flags: int = 0) -> _Pattern:
    return _Pattern(detector, family, re.compile(pattern, flags), group)


_B = r"(?<![A-Za-z0-9_\-])"  # token start: not glued to a preceding word
_E = r"(?![A-Za-z0-9_\-])"  # token end

# Published token formats. Each regex names the vendor's prefix and the shape of the rest.
_VENDOR_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        "aws_access_key",
        VENDOR,
        _B + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|"
        r"ANPA|ANVA|APKA)[A-Z0-9]{16}" + _E,
    ),
    _p(
        "github_token",
        VENDOR,
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|"
        r"github_pat_[A-Za-z0-9_]{50,255})",
    ),
    _p(
        "gitlab_token",
        VENDOR,
        _B + r"(?:gl(?:pat|ptt|dt|rt|cbt|soat|ffct|imt|agent|oas)-"
        r"[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,})",
    ),
    _p(
        "slack_token",
        VENDOR,
        _B + r"(?:xox[abposrec]-[A-Za-z0-9\-]{10,}|"
        r"xapp-[A-Za-z0-9\-/]{10,})",
    ),
    _p("slack_webhook", VENDOR, r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}"),
    _p("stripe_key", VENDOR, _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _p("anthropic_key", VENDOR, _B + r"sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_\-]{20,}"),
    _p(
        "openai_key",
        VENDOR,
        _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"
        r"T3BlbkFJ[A-Za-z0-9_\-]{10,}|"
        + _B
        + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|"
        + _B
        + r"sk-[A-Za-z0-9]{48}"
        + _E,
    ),
    _p("google_api_key", VENDOR, _B + r"AIza[0-9A-Za-z_\-]{35}"),
    _p("google_oauth_secret", VENDOR, _B + r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    _p("google_oauth_token", VENDOR, _B + r"ya29\.[0-9A-Za-z_\-]{20,}"),
    _p("sendgrid_key", VENDOR, _B + r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}"),
    _p("npm_token", VENDOR, _B + r"npm_[A-Za-z0-9]{36}" + _E),
    _p("pypi_token", VENDOR, _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    _p("telegram_bot_token", VENDOR, r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_\-]{30,34}" + _E),
    _p(
        "azure_connection_string",
        VENDOR,
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature|"
        r";Secret)\s*=\s*[A-Za-z0-9+/%]{20,}={0,2}",
    ),
    _p("azure_devops_pat", VENDOR, _B + r"[A-Za-z0-9]{52}JQQJ9[0-9][A-Za-z0-9]{20,}"),
    _p("huggingface_token", VENDOR, _B + r"hf_[A-Za-z]{30,40}" + _E),
    _p("docker_hub_token", VENDOR, _B + r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}"),
    _p("grafana_token", VENDOR, _B + r"(?:glc_|glsa_)[A-Za-z0-9_\-=+/]{24,}"),
    _p("groq_key", VENDOR, _B + r"gsk_[A-Za-z0-9]{40,}"),
    _p(
        "newrelic_key",
        VENDOR,
        _B + r"(?:NRAK|NRII|NRIQ|NRRA|NRAA|NRJS)-[A-Za-z0-9_\-]{19,}|"
        r"\b[0-9a-f]{36}NRAL\b|" + _B + r"eu01xx[0-9a-f]{30}NRAL\b",
    ),
    _p(
        "hashicorp_vault_token",
        VENDOR,
        _B + r"(?:hv[sbr]\.[A-Za-z0-9_\-]{24,}|"
        r"[sbr]\.(?=[A-Za-z]*\d)[A-Za-z0-9]{24}" + _E + r")",
    ),
    _p("shopify_token", VENDOR, _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    _p("digitalocean_token", VENDOR, _B + r"do[opr]_v1_[a-f0-9]{64}"),
    _p("square_token", VENDOR, _B + r"(?:sandbox-)?sq0(?:atp|csp|atb)-[A-Za-z0-9_\-]{22,}"),
    _p("postman_key", VENDOR, _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _p("rubygems_key", VENDOR, _B + r"rubygems_[a-f0-9]{48}"),
    _p("tavily_key", VENDOR, _B + r"tvly-[A-Za-z0-9]{30,}"),
    _p("jina_key", VENDOR, _B + r"jina_[a-f0-9]{32}[A-Za-z0-9_]{20,}"),
    _p("sourcegraph_token", VENDOR, _B + r"sgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}"),
    _p("segment_token", VENDOR, _B + r"sgp_[A-Za-z0-9]{64}"),
    _p("age_secret_key", VENDOR, r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    _p("atlassian_token", VENDOR, _B + r"ATATT3[A-Za-z0-9_\-=]{50,}"),
    _p("bitbucket_app_password", VENDOR, _B + r"ATBB[A-Za-z0-9_\-]{28,}"),
    _p("artifactory_key", VENDOR, _B + r"AKCp[A-Za-z0-9]{60,}"),
    _p("databricks_token", VENDOR, _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E),
    _p("dependency_track_key", VENDOR, _B + r"odt_[A-Za-z0-9]{32,}"),
    _p(
        "doppler_token",
        VENDOR,
        _B + r"dp\.(?:ct|pt|st|sa|scim|audit)\.(?:[a-z0-9_\-]+\.)?"
        r"[A-Za-z0-9]{40,}",
    ),
    _p("dropbox_token", VENDOR, _B + r"sl\.[A-Za-z0-9_\-]{60,}"),
    _p(
        "facebook_token",
        VENDOR,
        _B + r"EAA[A-Za-z0-9]{8,}ZD[A-Za-z0-9]{20,}|" + _B + r"EAACEdEose0cBA[A-Za-z0-9]{20,}",
    ),
    _p("mailgun_key", VENDOR, _B + r"key-[a-f0-9]{32}" + _E),
    _p("mailchimp_key", VENDOR, _B + r"[a-f0-9]{32}-us\d{1,2}" + _E),
    _p("twilio_key", VENDOR, _B + r"(?:SK|AC)[a-f0-9]{32}" + _E),
    _p("firecrawl_key", VENDOR, _B + r"fc-[a-f0-9]{32}" + _E),
    _p("twitch_stream_key", VENDOR, _B + r"live_\d{6,12}_[A-Za-z0-9]{25,}"),
    _p("nuget_key", VENDOR, _B + r"oy2[a-z0-9]{43}" + _E),
    _p("salesforce_token", VENDOR, _B + r"00[A-Za-z0-9]{13}![A-Za-z0-9_.]{80,}"),
    _p("mapbox_token", VENDOR, _B + r"[st]k\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{10,}"),
    _p("stackhawk_key", VENDOR, _B + r"hawk\.[A-Za-z0-9_\-]{20}\.[A-Za-z0-9_\-]{20}"),
    _p(
        "kubernetes_bootstrap_token",
        VENDOR,
        r"(?i:bootstrap[_\-]?token)[\"'\s:=]+"
        r"[a-z0-9]{6}\.[a-z0-9]{16}\b|--tls-bootstrap-token\s+[a-z0-9]{6}\.[a-z0-9]{16}\b",
    ),
    _p(
        "okta_token",
        VENDOR,
        r"(?i:okta|SSWS)[\w\-\"'\s:=]{0,30}?" + _B + r"00[A-Za-z0-9_\-]{40}" + _E,
    ),
    _p("truenas_key", VENDOR, r"(?<![\w\-])\d{1,3}-[A-Za-z0-9]{60,70}" + _E),
    _p("hashicorp_unseal_key", VENDOR, r"(?i:unseal(?:\s+key\s*\d*)?)\s*:?\s*[A-Za-z0-9+/]{40,}"),
    _p(
        "msteams_webhook",
        VENDOR,
        r"(?:outlook\.office(?:365)?\.com|webhook\.office\.com)/"
        r"webhook[b2]?/[a-f0-9\-]{36}@[a-f0-9\-]{36}/IncomingWebhook/[a-f0-9]{32}",
    ),
)

_STRUCTURE_PATTERNS: tuple[_Pattern, ...] = (
    _p("private_key_block", PRIVATE_KEY, r"-----BEGIN[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----"),
    _p("private_key_base64", PRIVATE_KEY, r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}"),
    _p("putty_private_key", PRIVATE_KEY, r"PuTTY-User-Key-File-\d"),
    _p("jwt", JWT, _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # base64 of a JSON object ('{"'): API tokens and JWT-like blobs with an unusual header
    _p("encoded_json_token", JWT, _B + r"eyJ[A-Za-z0-9_\-+/]{30,}={0,2}"),
    _p(
        "password_hash",
        PASSWORD_HASH,
        r"\$(?:1|2[abxy]?|5|6|7|8|9|y|gy|argon2(?:id|i|d))\$"
        r"[^\s$]{1,60}\$[./A-Za-z0-9+]{16,}",
    ),
    _p("kerberos_hash", PASSWORD_HASH, r"\$krb5(?:asrep|tgs|pa)\$\d+\$"),
    _p("http_basic_auth", HEADER, r"(?i:authorization)\s*:\s*Basic\s+[A-Za-z0-9+/]{8,}={0,2}"),
)

_PATTERNS = _VENDOR_PATTERNS + _STRUCTURE_PATTERNS


def token_pattern_findings(text: str) -> Iterator[Finding]:
    """Every match of the vendor and structure patterns in `text`, pattern by pattern."""
    for pattern in _PATTERNS:
        for m in pattern.regex.finditer(text):
            yield Finding(
                pattern.detector,
                pattern.family,
                m.start(pattern.group),
                m.end(pattern.group),
            )


# -- AWS: a bare secret access key beside an access key id ------------------------------------
_AWS_KEY_ID = re.compile(_B + r"(?:AKIA|ASIA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def aws_pair_findings(text: str) -> Iterator[Finding]:
    """40 characters of base64 in a text that also holds an access key id: the pair's secret."""
    if _AWS_KEY_ID.search(text) is None:
        return
    for m in _AWS_SECRET.finditer(text):
        value = m.group(0)
        if _AWS_KEY_ID.fullmatch(value[:20]) is not None and value[20:].isalnum():
            continue  # two ids glued together are not a secret
        mixed = (
            any(ch.isupper() for ch in value)
            and any(ch.islower() for ch in value)
            and any(ch.isdigit() or ch in "/+" for ch in value)
        )
        if mixed and shannon(value) >= 3.5 and not is_placeholder(value):
            yield Finding("aws_secret_access_key", VENDOR, m.start(), m.end())
