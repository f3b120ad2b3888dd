"""Generic detectors: the gated entropy detector and the detect-secrets plugins.

detect-secrets 1.5.0 gives its vendor plugins and its keyword plugin; its high-entropy plugins are
left out (on one line of prose they flag ordinary words, "tokens", dates), and the gated entropy
detector here stands in for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memvault.screening._model import Finding
from memvault.screening._secret_values import (
    DETECT_SECRETS,
    ENTROPY,
    is_placeholder,
    shannon,
)

# -- gated entropy -----------------------------------------------------------------------------
_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_\-+/=.@:])[A-Za-z0-9][A-Za-z0-9_\-+/=.]{18,}[A-Za-z0-9=]")
_URLISH = re.compile(r"(?:https?|ftp)://\S*$|www\.\S*$", re.IGNORECASE)


def entropy_findings(text: str) -> Iterator[Finding]:
    """Long tokens that pass the entropy gate, outside URLs (split at dots and slashes if many)."""
    for m in _CANDIDATE.finditer(text):
        token = m.group(0)
        if "://" in text[max(0, m.start() - 3) : m.start()] or _URLISH.search(
            text[max(0, m.start() - 200) : m.start()]
        ):
            continue  # URL paths are addresses (shared docs, videos), not credentials
        for part in (
            re.split(r"[./]", token) if token.count(".") + token.count("/") > 2 else [token]
        ):
            if _entropy_gate(part):
                start = m.start() + token.find(part)
                yield Finding("high_entropy_token", ENTROPY, start, start + len(part))
                break


def _entropy_gate(token: str) -> bool:
    n = len(token)
    if n < 20:
        return False
    upper = sum(ch.isupper() for ch in token)
    lower = sum(ch.islower() for ch in token)
    digit = sum(ch.isdigit() for ch in token)
    if upper >= 2 and lower >= 2 and digit >= 2:
        return shannon(token) >= 3.7
    if upper == 0 and digit >= 4 and n >= 32 and re.search(r"[g-z]", token):
        # long lowercase base32/base36 keys; hex (git SHAs, digests) never reach here
        return shannon(token) >= 4.0 and "-" not in token
    return False


# -- detect-secrets --------------------------------------------------------------------------
_DETECT_SECRETS_PLUGINS: tuple[type[BasePlugin], ...] = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    BasicAuthDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    IbmCloudIamDetector,
    IbmCosHmacDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SoftlayerDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|[^A-Za-z]+")


def _plugin_name(plugin: BasePlugin) -> str:
    name = type(plugin).__name__.removesuffix("Detector")
    return "ds_" + "_".join(part.lower() for part in _CAMEL.split(name) if part)


class DetectSecretsPlugins:
    """The detect-secrets plugins, built once, run line by line over a text."""

    def __init__(self) -> None:
        self._plugins: tuple[BasePlugin, ...] = tuple(cls() for cls in _DETECT_SECRETS_PLUGINS)
        self._keyword_plugin = KeywordDetector()
        self._names = {id(p): _plugin_name(p) for p in self._plugins}

    def findings(self, text: str) -> Iterator[Finding]:
        """Every plugin finding in `text`, line by line (spans index `text`)."""
        offset = 0
        for line in text.splitlines(keepends=True):
            for plugin in self._plugins:
                for value in plugin.analyze_string(line):
                    yield self._locate(self._names[id(plugin)], DETECT_SECRETS, line, value, offset)
            for value in self._keyword_plugin.analyze_string(line):
                if value and not is_placeholder(value) and not value.isspace():
                    yield self._locate("ds_keyword", DETECT_SECRETS, line, value, offset)
            offset += len(line)

    @staticmethod
    def _locate(detector: str, family: str, line: str, value: str, offset: int) -> Finding:
        at = line.find(value)
        start = offset + max(at, 0)
        return Finding(detector, family, start, start + (len(value) if at >= 0 else len(line)))
