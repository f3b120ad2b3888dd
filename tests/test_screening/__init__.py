"""Tests of the write screen (memvault.screening)."""
