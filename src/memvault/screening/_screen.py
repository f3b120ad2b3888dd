"""The write screen: one call per stored string, before anything is embedded or stored."""

from __future__ import annotations

import logging
import re

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
from memvault.screening._normalise import Normalised, fold_punctuation, normalise
from memvault.screening._pii import Pseudonym, pii_findings, redact

# Only detector names, codes and field names are ever logged here, never text or values.
_log = logging.getLogger(__name__)

MIN_LENGTH = 10
"""Texts shorter than this (after normalising and stripping whitespace) are refused `too_short`."""

_DEFAULT_POLICY = ScreenPolicy()
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class Screen:
    """Screens what a write stores: note text with `check`, short fields with `check_field`.

    Both normalise first (NFKC, invisible characters removed; see `normalise`) and scan the
    normalised text; the accepted `ScreenResult.text` is that normalised text with PII replaced.

    `check` order: text under `MIN_LENGTH` characters is refused `too_short`; any credential is
    refused `credential_refused`; PII is redacted, refused (`pii_refused`) or kept per the policy;
    the redacted text is then flagged `ephemeral` and/or `suspicious`, and a `suspicious` text
    bound for the shared scope is refused `suspicious_shared` unless the policy allows it.

    All detectors are built in the constructor, so a broken install fails there, not on the
    first write. One instance is safe to share between threads: it holds no per-call state.
    """

    def __init__(self) -> None:
        self._credentials = CredentialScanner()
        # run every detector once so regex compilation and lazy imports happen now
        self.check("warm-up text for the screen, 2026-01-01: nothing to find here.")
        self.check_field("warm-up ｆｉｅｌｄ", field="warmup")

    def check(
        self,
        text: str,
        *,
        policy: ScreenPolicy | None = None,
        shared: bool = False,
        pseudonym: Pseudonym | None = None,
    ) -> ScreenResult:
        """Screen a note's `text`; `shared` says the write targets the shared scope.

        `pseudonym(pii_type, canonical_value)`, when given, returns 4 to 16 lowercase hex
        characters (a truncated HMAC under the tenant's key) and redacted PII becomes
        `[PHONE:7f3a9c]`; without it, `[PHONE]`. The value is canonical per type first
        (phone E.164, email casefolded, …), so spellings of one value share a pseudonym.
        """
        policy = policy or _DEFAULT_POLICY
        norm = normalise(text)
        if len(norm.text.strip()) < MIN_LENGTH:
            _log.debug("screen refused: too_short")
            return ScreenResult.refused("too_short", "quality")

        refusal = self._credential_refusal(norm, "text")
        if refusal is not None:
            return refusal
        screened = _screen_pii(norm, policy, pseudonym, "text")
        if isinstance(screened, ScreenResult):
            return screened
        redacted, pii, redacted_types = screened

        flag_findings: list[Finding] = [
            *ephemeral_findings(fold_punctuation(redacted)),
            *injection_findings(fold_punctuation(redacted)),
        ]
        flags = frozenset(EPHEMERAL if f.family == EPHEMERAL else SUSPICIOUS for f in flag_findings)
        findings = pii + tuple(sorted(flag_findings, key=lambda f: f.start))

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

    def check_field(
        self,
        value: str,
        *,
        field: str,
        policy: ScreenPolicy | None = None,
        pseudonym: Pseudonym | None = None,
    ) -> ScreenResult:
        """Screen one short stored string that is not note text: a `source`, a topic.

        Same normalisation, credential refusal (`credential_refused`) and PII policy
        (`pii_refused`, or placeholders as in `check`) as note text, but no length rule and no
        flags: a two-letter topic is fine, and neither `ephemeral` nor `suspicious` applies.
        `field` names the field in the screen's debug log (a lowercase identifier, never a value).
        """
        if _FIELD_NAME.fullmatch(field) is None:
            raise ValueError("field must be a lowercase identifier such as 'source' or 'topics'")
        policy = policy or _DEFAULT_POLICY
        norm = normalise(value)
        refusal = self._credential_refusal(norm, field)
        if refusal is not None:
            return refusal
        screened = _screen_pii(norm, policy, pseudonym, field)
        if isinstance(screened, ScreenResult):
            return screened
        redacted, pii, redacted_types = screened
        if redacted_types:
            _log.debug("field screen accepted %s: redacted=%s", field, ",".join(redacted_types))
        return ScreenResult(
            verdict=Verdict.ACCEPT, text=redacted, findings=pii, redacted_types=redacted_types
        )

    def _credential_refusal(self, norm: Normalised, field: str) -> ScreenResult | None:
        credentials = self._credentials.findings(norm.scan)
        if not credentials:
            return None
        mapped = tuple(_to_input(norm, f) for f in credentials)
        first = mapped[0]
        _log.debug("screen refused %s: credential by %s", field, first.detector)
        return ScreenResult.refused("credential_refused", first.detector, mapped)


def _to_input(norm: Normalised, finding: Finding) -> Finding:
    start, end = norm.input_span(finding.start, finding.end)
    return Finding(finding.detector, finding.family, start, end)


def _screen_pii(
    norm: Normalised, policy: ScreenPolicy, pseudonym: Pseudonym | None, field: str
) -> ScreenResult | tuple[str, tuple[Finding, ...], tuple[str, ...]]:
    """A `pii_refused` result, or (redacted text, PII findings on the input, redacted types)."""
    pii = pii_findings(norm.scan)
    mapped = tuple(_to_input(norm, f) for f in pii)
    for finding in pii:
        if policy.action_for(finding.detector) is PiiAction.REFUSE:
            _log.debug("screen refused %s: pii %s", field, finding.detector)
            return ScreenResult.refused("pii_refused", finding.detector, mapped)
    to_redact = [f for f in pii if policy.action_for(f.detector) is PiiAction.REDACT]
    redacted = redact(norm.text, to_redact, pseudonym, values_from=norm.scan)
    redacted_types = tuple(dict.fromkeys(f.detector for f in to_redact))
    return redacted, mapped, redacted_types
