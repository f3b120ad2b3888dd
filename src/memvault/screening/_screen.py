"""The write screen: one call per write, before anything is embedded or stored."""

from __future__ import annotations

import logging

from memvault.screening._credentials import CredentialScanner
from memvault.screening._flags import (
    EPHEMERAL,
    SUSPICIOUS,
    ephemeral_findings,
    injection_findings,
)
from memvault.screening._model import (
    Finding,
    PiiAction,
    ScreenPolicy,
    ScreenResult,
    Verdict,
)
from memvault.screening._pii import pii_findings, redact

# Only detector names and counts are ever logged here, never text or matched values.
_log = logging.getLogger(__name__)

MIN_LENGTH = 10
"""Texts shorter than this (after stripping whitespace) are refused as `too_short`."""

_DEFAULT_POLICY = ScreenPolicy()


class Screen:
    """Screens one text per write: quality, credentials, PII, then ephemeral/injection flags.

    Order: text under `MIN_LENGTH` characters is refused `too_short`; any credential is refused
    `credential_refused`; PII is redacted, refused (`pii_refused`) or kept per the policy; the
    redacted text is then flagged `ephemeral` and/or `suspicious`, and a `suspicious` text bound
    for the shared scope is refused `suspicious_shared` unless the policy allows it.

    All detectors are built in the constructor, so a broken install fails there, not on the
    first write. One instance is safe to share between threads: it holds no per-call state.
    """

    def __init__(self) -> None:
        self._credentials = CredentialScanner()
        # run every detector once so regex compilation and lazy imports happen now
        self.check("warm-up text for the screen, 2026-01-01: nothing to find here.")

    def check(
        self, text: str, *, policy: ScreenPolicy | None = None, shared: bool = False
    ) -> ScreenResult:
        """Screen `text` for a write; `shared` says the write targets the shared scope."""
        policy = policy or _DEFAULT_POLICY
        if len(text.strip()) < MIN_LENGTH:
            _log.debug("screen refused: too_short")
            return ScreenResult.refused("too_short", "quality")

        credentials = self._credentials.findings(text)
        if credentials:
            first = credentials[0]
            _log.debug("screen refused: credential by %s", first.detector)
            return ScreenResult.refused("credential_refused", first.detector, tuple(credentials))

        pii = pii_findings(text)
        for finding in pii:
            if policy.action_for(finding.detector) is PiiAction.REFUSE:
                _log.debug("screen refused: pii %s", finding.detector)
                return ScreenResult.refused("pii_refused", finding.detector, tuple(pii))
        to_redact = [f for f in pii if policy.action_for(f.detector) is PiiAction.REDACT]
        redacted = redact(text, to_redact)
        redacted_types = tuple(dict.fromkeys(f.detector for f in to_redact))

        flag_findings: list[Finding] = [
            *ephemeral_findings(redacted),
            *injection_findings(redacted),
        ]
        flags = frozenset(EPHEMERAL if f.family == EPHEMERAL else SUSPICIOUS for f in flag_findings)
        findings = tuple(pii) + tuple(sorted(flag_findings, key=lambda f: f.start))

        if shared and SUSPICIOUS in flags and not policy.allow_suspicious_shared:
            detector = next(f.detector for f in flag_findings if f.family != EPHEMERAL)
            _log.debug("screen refused: suspicious_shared by %s", detector)
            return ScreenResult.refused("suspicious_shared", detector, findings)

        if redacted_types or flags:
            _log.debug(
                "screen accepted: redacted=%s flags=%s", ",".join(redacted_types), sorted(flags)
            )
        return ScreenResult(
            verdict=Verdict.ACCEPT,
            text=redacted,
            findings=findings,
            flags=flags,
            redacted_types=redacted_types,
        )
