"""Installs the compliance wing on running services: erase jobs, tenant deletions, sweepers.

`install(services)` is called once by the API app before the services start: it adds the index
compaction, retention and stalled-erase sweepers to the maintenance loop. `Compliance.resume()`
finishes, at startup, every erase job and tenant deletion a crash left unfinished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from memvault.compliance.erasure import ErasureJobs
from memvault.compliance.rotation import retire_held_versions
from memvault.compliance.tenant_deletion import TenantDeletions

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

log = logging.getLogger(__name__)

_ATTRIBUTE = "_memvault_compliance"


@dataclass
class Compliance:
    """The compliance wing's parts for one `Services`."""

    erasures: ErasureJobs
    tenant_deletions: TenantDeletions

    services: Services

    def resume(self) -> int:
        """At startup: re-index tenants indexed before blind payload tags, then finish the
        jobs a crash or restart left unfinished; returns how many jobs finished."""
        from memvault.compliance.index_upgrade import upgrade_index_payloads
        from memvault.runtime.upgrades import run_once

        run_once(  # once per data directory: it opens a shard per tenant
            self.services.settings.data_dir,
            "blind-payload-tags",
            lambda: upgrade_index_payloads(self.services),
        )
        return self.tenant_deletions.resume() + self.erasures.resume()


def index_compactor(services: Services) -> Callable[[], int]:
    """A sweeper that physically removes deleted points from every namespace's index, and
    replaced ones once their share passes the index's threshold (`VectorIndex.maintain`)."""

    def compact() -> int:
        rebuilt = 0
        for namespace in services.index.namespaces():
            try:
                rebuilt += services.index.maintain(namespace)
            except Exception as exc:  # one namespace never stops the others
                log.warning("index compaction failed: %s", type(exc).__name__)
        return rebuilt

    return compact


def install(services: Services) -> Compliance:
    """The compliance parts of `services`, created (and its sweepers added) on the first call."""
    existing: Compliance | None = getattr(services, _ATTRIBUTE, None)
    if existing is not None:
        return existing
    from memvault.compliance.retention import retention_sweeper

    compliance = Compliance(ErasureJobs(services), TenantDeletions(services), services)
    services.sweepers.append(retention_sweeper(services))
    services.sweepers.append(index_compactor(services))
    services.sweepers.append(compliance.erasures.resume_stalled)  # e.g. after a blocked scrub
    services.sweepers.append(compliance.tenant_deletions.resume_stalled)
    services.sweepers.append(partial(retire_held_versions, services))  # after replays expire
    setattr(services, _ATTRIBUTE, compliance)
    return compliance
