"""The write screen: refuse credentials, redact PII, gate quality, flag injections.

Every write (new notes, updates, shared notes, anything dialogue or consolidation writes) goes
through `Screen.check` before it is embedded or stored:

    screen = Screen()
    result = screen.check(text, policy=tenant_policy, shared=False)
    if result.verdict is Verdict.REFUSE:
        raise ScreenRefused(result.refusal_code, result.detector)
    store(result.text, flags=result.flags, redacted=result.redacted_types)

A result never carries a refused text or any matched value; see docs/screening.md for what each
detector catches, what it misses, and the measured figures.
"""

from memvault.screening._model import (
    PII_TYPES,
    Finding,
    PiiAction,
    ScreenPolicy,
    ScreenResult,
    Verdict,
)
from memvault.screening._screen import MIN_LENGTH, Screen

__all__ = [
    "MIN_LENGTH",
    "PII_TYPES",
    "Finding",
    "PiiAction",
    "Screen",
    "ScreenPolicy",
    "ScreenResult",
    "Verdict",
]
