"""The audit log: its hash-chained writer, its row format and its signed checkpoints.

Beneath both the vault (which appends to it) and compliance (which verifies and exports it)."""
