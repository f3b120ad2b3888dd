"""The one-time upgrade of API key digests from plain SHA-256 to HMACs under the pepper.

Releases before issue 36 stored `sha256(secret)` in `api_keys.secret_sha256`, a digest anyone who
can write SQL can compute: a row inserted with one authenticated. The HMAC digest
(`IndexKey.api_key_digest`) is a keyed function of that same SHA-256, so every existing key is
upgraded in place, without its secret and without re-issuing it, at the first start of this
release (`open_services`, after the keystore is bound to the database). The keystore then records
that the upgrade ran, and it never runs again: a plain digest written later, which is exactly
what a forger writes, is neither upgraded nor accepted (`ApiKeys.verify` compares HMACs only).
"""

from __future__ import annotations

import logging
import re

from sqlalchemy import select, update

from memvault.keyring import Keyring
from memvault.store.database import Database
from memvault.store.models import ApiKeyRow

log = logging.getLogger(__name__)
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def upgrade_legacy_digests(db: Database, keyring: Keyring) -> int:
    """Upgrade every plain SHA-256 digest to an HMAC, once per deployment; returns how many.

    Safe to run from several workers at once: a row is changed only while it still holds the
    plain digest it was read with. Does nothing once the keystore records that it ran.
    """
    if keyring.api_key_digests_upgraded():
        return 0
    upgraded = 0
    for tenant in db.tenant_ids():
        with db.session(tenant) as sess:
            rows = sess.execute(
                select(ApiKeyRow.key_id, ApiKeyRow.secret_sha256).where(
                    ApiKeyRow.tenant_id == tenant
                )
            ).all()
            legacy = [(str(k), str(d)) for k, d in rows if _SHA256_HEX.fullmatch(str(d))]
            if not legacy:
                continue
            pepper = keyring.api_key_pepper(tenant, create=True)
            assert pepper is not None
            for key_id, plain in legacy:
                sess.execute(
                    update(ApiKeyRow)
                    .where(
                        ApiKeyRow.tenant_id == tenant,
                        ApiKeyRow.key_id == key_id,
                        ApiKeyRow.secret_sha256 == plain,
                    )
                    .values(secret_sha256=pepper.api_key_digest(key_id, bytes.fromhex(plain)))
                )
                upgraded += 1
    keyring.record_api_key_digests_upgraded()
    log.info("api key digests upgraded to HMAC count=%d", upgraded)
    return upgraded
