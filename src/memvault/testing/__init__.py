"""Test doubles shipped with memvault, for our tests and for users' (like `tink.testing`)."""

from memvault.testing.fake_kms import FakeKms
from memvault.testing.null_cipher import NullAead, NullKeyring

__all__ = ["FakeKms", "NullAead", "NullKeyring"]
