"""Canonical JSON and RFC 3339 times for the compliance wing: `memvault.canonical`, re-exported.

The one definition lives in `memvault.canonical` (below the vault, the keyring and this wing), so
the audit chain's writer and its offline verifier cannot drift apart. This module keeps the
names the compliance code and its callers have always imported.
"""

from __future__ import annotations

from memvault.canonical import NotCanonical, canonical_json, parse_rfc3339, rfc3339

__all__ = ["NotCanonical", "canonical_json", "parse_rfc3339", "rfc3339"]
