"""Value types of the write screen: verdicts, findings, results and the per-tenant policy.

A result never carries a refused text or a matched value: findings hold a detector name and a span.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from memvault.errors import InvalidRequest


class Verdict(StrEnum):
    """Whether a text may be written."""

    ACCEPT = "accept"
    REFUSE = "refuse"


class PiiAction(StrEnum):
    """What the screen does with one PII type: replace it, refuse the write, or keep it."""

    REDACT = "redact"
    REFUSE = "refuse"
    ALLOW = "allow"


PII_TYPES: tuple[str, ...] = ("email", "phone", "card", "iban", "ssn", "ip", "national_id")
"""The PII types the screen knows (policy keys and `ScreenResult.redacted_types` entries).

Each is redacted as a typed placeholder: `[EMAIL]`, `[PHONE]`, `[CARD]`, `[IBAN]`, `[SSN]`,
`[IP]`, `[NATIONAL_ID]` (national ids checked by their checksums, passport numbers), or with
a pseudonym function `[PHONE:7f3a9c]`, a keyed pseudonym of the value's canonical form (phone
E.164, email casefolded, card/SSN digits, IBAN and national id upper-case alphanumerics, IP
`ipaddress` form). Placeholders pass a second screening unchanged.
"""

REFUSAL_CODES: frozenset[str] = frozenset(
    {"credential_refused", "too_short", "pii_refused", "suspicious_shared"}
)
FLAGS: frozenset[str] = frozenset({"ephemeral", "suspicious"})


@dataclass(frozen=True, slots=True)
class Finding:
    """One detection: which detector fired, its family, and where (never what).

    Credential and PII spans index the text given to `Screen.check` / `check_field` (the screen
    reads its normalised form and maps positions back); ephemeral and injection spans index the
    redacted text (`ScreenResult.text`), which is what those detectors read.
    """

    detector: str
    family: str
    start: int
    end: int


def _default_pii() -> Mapping[str, PiiAction]:
    return {name: PiiAction.REDACT for name in PII_TYPES}


@dataclass(frozen=True, slots=True)
class ScreenPolicy:
    """A tenant's screen settings.

    `pii` maps each PII type to an action; types left out keep the default, redact.
    `allow_suspicious_shared` lets text flagged `suspicious` into the shared scope.
    """

    pii: Mapping[str, PiiAction] = field(default_factory=_default_pii)
    allow_suspicious_shared: bool = False

    def __post_init__(self) -> None:
        unknown = sorted(set(self.pii) - set(PII_TYPES))
        if unknown:
            raise InvalidRequest(f"unknown PII type in policy: {', '.join(unknown)}")
        merged: dict[str, PiiAction] = dict(_default_pii())
        for name, action in self.pii.items():
            try:
                merged[name] = PiiAction(action)
            except ValueError:
                raise InvalidRequest(f"invalid action for PII type {name}") from None
        object.__setattr__(self, "pii", MappingProxyType(merged))

    def action_for(self, pii_type: str) -> PiiAction:
        """The action for one PII type."""
        return self.pii[pii_type]


@dataclass(frozen=True, slots=True)
class ScreenResult:
    """The screen's answer for one write.

    On refusal `text` is empty, `refusal_code` says why and `detector` names the detector; the
    refused text is never kept. On acceptance `text` is the text to store: the normalised input
    (NFKC, invisible characters removed, full-width punctuation kept) with PII replaced by typed
    placeholders (`[PHONE]`, or `[PHONE:7f3a9c]` with a pseudonym function). `redacted_types`
    lists the replaced types (lower-case `PII_TYPES` names) in order of first appearance and
    `flags` holds `ephemeral` and/or `suspicious` (never set by `Screen.check_field`).
    """

    verdict: Verdict
    text: str
    findings: tuple[Finding, ...] = ()
    flags: frozenset[str] = frozenset()
    redacted_types: tuple[str, ...] = ()
    refusal_code: str | None = None
    detector: str | None = None

    @property
    def accepted(self) -> bool:
        """True when the text may be written."""
        return self.verdict is Verdict.ACCEPT

    @classmethod
    def refused(cls, code: str, detector: str, findings: tuple[Finding, ...] = ()) -> ScreenResult:
        """A refusal that carries no text."""
        return cls(
            verdict=Verdict.REFUSE,
            text="",
            findings=findings,
            refusal_code=code,
            detector=detector,
        )
