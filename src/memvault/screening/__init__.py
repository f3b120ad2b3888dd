"""The write screen: refuse credentials, redact PII, gate quality, flag injections.

Every write (new notes, updates, shared notes, anything dialogue or consolidation writes) goes
through `Screen.check` before it is embedded or stored, and every other stored string that is
not an identifier (`source`, each topic) through `Screen.check_field`:

    screen = Screen()
    result = screen.check(text, policy=tenant_policy, shared=False, pseudonym=tenant_pseudonym)
    if result.verdict is Verdict.REFUSE:
        raise ScreenRefused(result.refusal_code, result.detector)
    store(result.text, flags=result.flags, redacted=result.redacted_types)

    topic = screen.check_field(raw_topic, field="topics", policy=tenant_policy,
                               pseudonym=tenant_pseudonym)

`tenant_pseudonym(pii_type, canonical_value)` returns a few lowercase hex characters (an HMAC
under the tenant's index key, truncated), so redacted PII reads `[PHONE:7f3a9c]`.

Identifiers (user, agent, tenant, reader and session ids) are stored in clear; where one enters,
`id_credential(value)` names the credential format detector it matches, if any (see `_ids`).

A result never carries a refused text or any matched value; see docs/screening.md for what each
detector catches, what it misses, and the measured figures.
"""

from memvault.screening._ids import id_credential
from memvault.screening._model import (
    PII_TYPES,
    Finding,
    PiiAction,
    ScreenPolicy,
    ScreenResult,
    Verdict,
)
from memvault.screening._normalise import Normalised, normalise
from memvault.screening._pii import Pseudonym
from memvault.screening._screen import MIN_LENGTH, Screen

__all__ = [
    "MIN_LENGTH",
    "PII_TYPES",
    "Finding",
    "Normalised",
    "PiiAction",
    "Pseudonym",
    "Screen",
    "ScreenPolicy",
    "ScreenResult",
    "Verdict",
    "id_credential",
    "normalise",
]
