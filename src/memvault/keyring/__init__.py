"""memvault's key management: envelope encryption per scope, a separate keystore, crypto-shredding.

Shaped like Tink: callers get AEAD handles (`Keyring.aead_for(scope) -> ScopeAead`) and keyed-hash
handles (`Keyring.index_key(tenant) -> IndexKey`), never raw keys or nonces, and associated data is
required. Key hierarchy: master key (a `MasterKeyProvider`) wraps tenant keys; a tenant key wraps
its scopes' data keys and its index key. See docs/keyring.md.
"""

from memvault.keyring._aead import (
    FORMAT_VERSION,
    ScopeAead,
    associated_data,
    envelope_key_version,
)
from memvault.keyring._checkpoints import AuditCheckpoints
from memvault.keyring._index_key import IndexKey
from memvault.keyring._keyring import Keyring
from memvault.keyring._keystore import ScrubFailed
from memvault.keyring._master import (
    DEFAULT_MASTER_KEY_ENV,
    EnvMasterKey,
    FileMasterKey,
    MasterKeyProvider,
    install_master_key_file,
    remove_master_key_file,
)
from memvault.keyring._signing import SigningKeys

__all__ = [
    "DEFAULT_MASTER_KEY_ENV",
    "FORMAT_VERSION",
    "AuditCheckpoints",
    "EnvMasterKey",
    "FileMasterKey",
    "IndexKey",
    "Keyring",
    "MasterKeyProvider",
    "ScopeAead",
    "ScrubFailed",
    "SigningKeys",
    "associated_data",
    "envelope_key_version",
    "install_master_key_file",
    "remove_master_key_file",
]
