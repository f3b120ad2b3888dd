"""Credential checks for identifiers: user, agent, tenant, reader and session ids.

Ids are stored in clear (key rows, note owners and readers), so an id that is a credential would
put the credential at rest. `id_credential` runs the write screen's format detectors over an id:
the vendor token patterns and the detect-secrets plugins, on the id's views (escapes decoded,
look-alikes folded) and on the id with `-` read as `_` (the importer rewrites `ghp_…` to
`ghp-…` to fit the id grammar). The entropy detector is left out on purpose: random ids (UUIDs,
Firebase or Clerk user ids) are high-entropy by design and are not credentials.
"""

from __future__ import annotations

import threading

from memvault.screening._entropy import DetectSecretsPlugins
from memvault.screening._normalise import normalise
from memvault.screening._token_patterns import token_pattern_findings
from memvault.screening._views import views

MAX_ID_SCAN = 1024
"""Longer values are cut before the scan (an id is at most 128 characters anyway)."""

_lock = threading.Lock()
_plugins: DetectSecretsPlugins | None = None


def _detect_secrets() -> DetectSecretsPlugins:
    global _plugins
    with _lock:
        if _plugins is None:
            _plugins = DetectSecretsPlugins()
        return _plugins


def id_credential(value: str) -> str | None:
    """The name of the first credential detector that matches the id `value`, else None.

    Never returns, logs or raises with the value itself.
    """
    text = normalise(value[:MAX_ID_SCAN]).scan
    candidates = [text]
    if "-" in text:
        candidates.append(text.replace("-", "_"))
    plugins = _detect_secrets()
    for candidate in candidates:
        for view in views(candidate):
            for finding in token_pattern_findings(view.text):
                return finding.detector
            for finding in plugins.findings(view.text):
                return finding.detector
    return None
