"""The report of an import: one `Outcome` per record, counts, and the human lines (no text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PROBLEMS", "STATUSES", "ImportReport", "Outcome"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one record: `added`, `present` (imported before), `refused` (by the
    write screen, or an id that is a credential: `code` and `detector`), `invalid` (`code` and
    a message naming the field: a reserved or refused id, a record that cannot be read),
    `failed` (the server refused the write for another reason, e.g. 409 `scope_erasing`),
    `expired` (its mem0 expiration date has passed) or `skipped` (no text)."""

    index: int
    status: str
    code: str | None = None
    detector: str | None = None
    message: str | None = None
    note_id: str | None = None


STATUSES = ("added", "present", "refused", "invalid", "failed", "expired", "skipped")
PROBLEMS = ("refused", "invalid", "failed", "expired", "skipped")


@dataclass
class ImportReport:
    """Counts and per-record outcomes of one run. `stopped` holds why the run stopped early
    (a wrong key, the server away: `code: message`), and `records` then exceeds the outcomes
    by the records `not_attempted`; a rerun picks them up."""

    outcomes: list[Outcome] = field(default_factory=list)
    ids_rewritten: int = 0
    records: int = 0
    stopped: str | None = None

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def refused(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "refused"]

    def as_dict(self) -> dict[str, Any]:
        records = max(self.records, len(self.outcomes))
        out: dict[str, Any] = {
            "records": records,
            **{status: self.count(status) for status in STATUSES},
            "not_attempted": records - len(self.outcomes),
            "ids_rewritten": self.ids_rewritten,
            "problems": [
                {k: v for k, v in _fields(o).items() if v is not None and k != "note_id"}
                for o in self.outcomes
                if o.status in PROBLEMS
            ],
        }
        if self.stopped is not None:
            out["stopped"] = self.stopped
        return out

    def lines(self) -> list[str]:
        """The human report: counts, then one line per record not imported."""
        d = self.as_dict()
        out = [
            f"{d['records']} records: {d['added']} added, {d['present']} already present, "
            f"{d['refused']} refused, {d['invalid']} invalid, {d['failed']} failed, "
            f"{d['expired']} expired, {d['skipped']} skipped"
        ]
        if self.stopped is not None:
            out.append(f"stopped early ({self.stopped}): {d['not_attempted']} not attempted")
        if self.ids_rewritten:
            out.append(f"records whose user or agent id was rewritten: {self.ids_rewritten}")
        for o in self.outcomes:
            if o.status == "refused":
                reason = f": {o.message}" if o.message else ""
                out.append(f"record {o.index}: refused ({o.code}, detector {o.detector}){reason}")
            elif o.status in ("invalid", "failed"):
                out.append(f"record {o.index}: {o.status} ({o.code}: {o.message})")
            elif o.status in ("expired", "skipped"):
                out.append(f"record {o.index}: {o.status}")
        return out


def _fields(outcome: Outcome) -> dict[str, Any]:
    return {name: getattr(outcome, name) for name in Outcome.__slots__}
