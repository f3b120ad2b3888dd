"""The deletion inventory: every place data about a user goes, with its counter and its eraser.

One registry, `STORES`. Each entry names what it holds, what an erase does to it (`on_erase`),
the erase step that does it (`erased_by`, a step of `memvault.compliance.erasure`), the tables or
stores it covers, and how to count what it still holds for a subject. An erase is `verified`
only when every erasable entry counts zero. `tests/test_compliance/test_inventory.py` fails when
a table of the data store or keystore, or a vector index adapter, is not named here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import MetaData, func, select

from memvault.store.models import IndexMarkRow, NoteRow
from memvault.store.scoping import OwnedBy, scoped_select

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

Counter = Callable[["Tally"], int]

DELETED = "deleted"
SHREDDED = "crypto-shredded"
RETAINED = "retained as pseudonymous ids"
NOT_PERSONAL = "holds no data about a user"
DOCUMENTED = "documented (outside the service)"


@dataclass(frozen=True, slots=True)
class Store:
    """One place data about a user can go."""

    name: str
    holds: str
    on_erase: str
    erased_by: str | None = None
    tables: tuple[str, ...] = ()
    adapters: tuple[str, ...] = ()
    count: Counter | None = None

    @property
    def erasable(self) -> bool:
        """Whether an erase must leave this store at zero for the subject."""
        return self.count is not None and self.on_erase in (DELETED, SHREDDED)


class Tally:
    """One counting pass over the inventory for a subject.

    `Eraser.remaining` counts several stores in one go (SQL rows, links, index points, keys, …);
    it runs once per pass, however many entries read from it.
    """

    def __init__(self, services: Services, subject: OwnedBy) -> None:
        assert subject.user is not None, "the inventory counts a user or an agent"
        self.services = services
        self.subject = subject
        self._eraser_counts: dict[str, int] | None = None

    def eraser_count(self, key: str) -> int:
        if self._eraser_counts is None:
            s = self.subject
            assert s.user is not None
            self._eraser_counts = self.services.eraser.remaining(s.tenant, s.user, s.agent)
        return self._eraser_counts[key]


def _remaining(key: str) -> Counter:
    def count(tally: Tally) -> int:
        return tally.eraser_count(key)

    return count


def _retrieval_counters(tally: Tally) -> int:
    with tally.services.db.session(tally.subject.tenant) as sess:
        query = scoped_select(tally.subject, NoteRow.retrieval_count > 0).subquery()
        return int(sess.execute(select(func.count()).select_from(query)).scalar_one())


def _index_marks(tally: Tally) -> int:
    """The user's marks in the reconciler's dirty set (a mark names a user, not an agent)."""
    s = tally.subject
    if s.user is None or s.agent is not None:
        return 0
    with tally.services.db.session(s.tenant) as sess:
        query = select(func.count()).where(
            IndexMarkRow.tenant_id == s.tenant, IndexMarkRow.user_key == s.user
        )
        return int(sess.execute(query).scalar_one())


def _rotation_records(tally: Tally) -> int:
    from memvault.compliance.rotation_erasure import count_subject

    s = tally.subject
    assert s.user is not None
    return count_subject(tally.services, s.tenant, s.user, s.agent)


STORES: tuple[Store, ...] = (
    Store(
        "notes",
        "note rows: ciphertext, keyed hashes, flags, the owner's ids",
        DELETED,
        "rows",
        ("notes",),
        count=_remaining("sql_rows"),
    ),
    Store(
        "links",
        "links between the user's notes",
        DELETED,
        "rows",
        ("links",),
        count=_remaining("links"),
    ),
    Store(
        "evolution_history",
        "A-MEM evolution history and construction (keywords, tags, context), sealed in the "
        "note's attributes: deleted with the note row, shredded with its keys",
        DELETED,
        "rows",
        count=_remaining("sql_rows"),
    ),
    Store(
        "amem_jobs",
        "A-MEM enrichment jobs still to run: note ids and the scope they belong to",
        DELETED,
        "rows",
        ("amem_jobs",),
        count=_remaining("amem_jobs"),
    ),
    Store(
        "vectors",
        "dense embeddings and keyed BM25 sparse vectors, payload of blind tags (the user's "
        "partition and each dedicated agent's own)",
        DELETED,
        "vectors",
        adapters=("EdgeIndex", "QdrantIndex"),
        count=_remaining("index_points"),
    ),
    Store(
        "embedding_cache",
        "in-memory cache of recent embeddings, per scope",
        DELETED,
        "rows",
        count=_remaining("embedding_cache"),
    ),
    Store(
        "retrieval_counters",
        "retrieval count and last access per note (queued in memory, then in the note row)",
        DELETED,
        "rows",
        count=_retrieval_counters,
    ),
    Store(
        "refusals",
        "refused writes: detector and time, principal as blind tags",
        DELETED,
        "rows",
        ("refusals",),
        count=_remaining("refusals"),
    ),
    Store(
        "idempotency_records",
        "sealed replies of retried writes (24 h)",
        DELETED,
        "rows",
        ("idempotency_keys",),
        count=_remaining("idempotency_records"),
    ),
    Store(
        "index_marks",
        "the reconciler's dirty set: the user's id and when a write last touched its partition",
        DELETED,
        "rows",
        ("index_marks",),
        count=_index_marks,
    ),
    Store(
        "agent_isolation",
        "each agent's isolation mode (shared or dedicated) with its user and agent ids",
        DELETED,
        "rows",
        ("agent_isolation",),
        count=_remaining("agent_isolation"),
    ),
    Store(
        "api_keys",
        "the user's API keys (key id, secret hash, ids, role)",
        DELETED,
        "revoke",
        ("api_keys",),
        count=_remaining("api_keys"),
    ),
    Store(
        "data_keys",
        "the scope data keys (wrapped) in the keystore",
        SHREDDED,
        "shred",
        ("keyring_data_keys",),
        count=_remaining("data_keys"),
    ),
    Store(
        "key_rotation_jobs",
        "data key rotation jobs in the keystore: the scopes (ids) they re-encrypt",
        DELETED,
        "rows",
        ("keyring_rotations",),
        count=_rotation_records,
    ),
    Store(
        "audit_events",
        "who did what, when: key ids, counts, detector names, users as keyed pseudonyms",
        RETAINED,
        tables=("audit_events",),
    ),
    Store(
        "erasure_jobs",
        "erase jobs and receipts; the subject is sealed under the tenant key",
        RETAINED,
        tables=("erasure_jobs",),
    ),
    Store(
        "tenant_records",
        "tenant policy, corpus statistics, tenant and index keys, key rotation jobs, the "
        "signed audit checkpoints (seqs and hashes; deleted with the tenant)",
        NOT_PERSONAL,
        tables=(
            "tenants",
            "corpus_stats",
            "keyring_tenant_keys",
            "keyring_index_keys",
            "keyring_audit_checkpoints",
        ),
    ),
    Store(
        "deployment_records",
        "operator tenant deletions and the receipt signing keys",
        NOT_PERSONAL,
        tables=(
            "tenant_deletions",
            "keyring_signing_keys",
            "deployment_identity",
            "keyring_identity",
        ),
    ),
    Store(
        "webhooks",
        "webhook endpoints: URLs, subscribed event types, signing secrets sealed under the "
        "tenant key (no memory)",
        NOT_PERSONAL,
        tables=("webhooks",),
    ),
    Store(
        "webhook_events",
        "webhook deliveries and read alerts: note, key and receipt ids, counts, users and "
        "agents as keyed pseudonyms, never text; finished deliveries are deleted after 7 days",
        RETAINED,
        tables=("webhook_deliveries", "read_alerts"),
    ),
    Store(
        "console_sessions",
        "console sign-in sessions: the SHA-256 of each session token and the session sealed under "
        "the token (no memory; a session ends at sign-out, when its key is revoked, or in 8 h)",
        NOT_PERSONAL,
        tables=("console_sessions",),
    ),
    Store(
        "untrusted_sessions",
        "sessions marked untrusted: a keyed tag of (user, agent, session id) and the mark's "
        "times, no ids in clear and no reason; a mark lasts at most a day",
        RETAINED,
        tables=("untrusted_sessions",),
    ),
    Store(
        "freed_storage",
        "SQLite free pages and WAL; index segments and WAL of deleted points",
        DELETED,
        "scrub",
    ),
    Store(
        "backups",
        "operator backups of the data store (ciphertext only; keys backed up apart)",
        SHREDDED,
        "shred",
    ),
    Store(
        "llm_processor",
        "note text sent to the tenant's LLM processor (policy `llm`; off by default)",
        DOCUMENTED,
    ),
)


def store(name: str) -> Store:
    """The registry entry named `name` (KeyError if there is none)."""
    for entry in STORES:
        if entry.name == name:
            return entry
    raise KeyError(name)


def registered_tables() -> set[str]:
    """Every table some entry covers."""
    return {t for entry in STORES for t in entry.tables}


def unregistered_tables(metadata: MetaData) -> set[str]:
    """Tables of `metadata` that no entry covers (a new store someone forgot to register)."""
    return set(metadata.tables) - registered_tables()


def registered_adapters() -> set[str]:
    """Every vector index adapter class some entry covers."""
    return {a for entry in STORES for a in entry.adapters}


def counts(services: Services, subject: OwnedBy) -> list[dict[str, object]]:
    """Per store: what it holds, what an erase does to it, and its count for the subject."""
    tally = Tally(services, subject)
    return [
        {
            "store": entry.name,
            "holds": entry.holds,
            "on_erase": entry.on_erase,
            "count": None if entry.count is None else entry.count(tally),
        }
        for entry in STORES
    ]


def count(name: str, services: Services, subject: OwnedBy) -> int:
    """The count of one store for the subject (KeyError for a store without a counter)."""
    counter = store(name).count
    if counter is None:
        raise KeyError(name)
    return counter(Tally(services, subject))


def remaining(services: Services, subject: OwnedBy) -> dict[str, int]:
    """The count of every erasable store for the subject: all zero after an erase."""
    tally = Tally(services, subject)
    return {e.name: e.count(tally) for e in STORES if e.erasable and e.count}
