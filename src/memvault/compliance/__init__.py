"""Compliance: canonical JSON, Ed25519-signed documents (export heads, erasure receipts) and the
offline verification auditors run. Formats follow DESIGN.md "Compliance formats" exactly."""
