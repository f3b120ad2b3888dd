"""Evaluate the write screen on public data: `.venv/bin/python -m bench.screening`.

Reads `../shared/data` (override with MEMVAULT_SHARED_DATA) and prints:
- credential recall on Nosey Parker's positives, per family and overall;
- what the screen does with Nosey Parker's label-0 rows (some are real credentials);
- false refusals on every LoCoMo turn and every Presidio sentence;
- PII recall and over-redaction per Presidio entity type;
- the screen's time per write, p50/p95.

Nothing here prints a matched value: misses are named by rule id.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memvault.screening import Finding, Screen, ScreenResult, Verdict

PII_ENTITY_TO_TYPE: dict[str, str] = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "card",
    "IBAN_CODE": "iban",
    "US_SSN": "ssn",
    "IP_ADDRESS": "ip",
}
KEPT_ENTITIES = ("PERSON", "STREET_ADDRESS", "GPE", "ORGANIZATION", "DATE_TIME", "ZIP_CODE")


def shared_data_dir() -> Path:
    """`../shared/data` beside the repository, or MEMVAULT_SHARED_DATA."""
    override = os.environ.get("MEMVAULT_SHARED_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


# -- loading ---------------------------------------------------------------------------------
def load_locomo_turns(data: Path) -> list[str]:
    """Every LoCoMo turn as a memory would hold it: `speaker: text`."""
    conversations = json.loads((data / "locomo" / "locomo10.json").read_text())
    turns: list[str] = []
    for conv in conversations:
        c = conv["conversation"]
        for key, value in c.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(f"{turn['speaker']}: {turn['text']}" for turn in value)
    return turns


def load_presidio(data: Path) -> list[dict[str, object]]:
    """Presidio's synthetic sentences with their labeled spans."""
    rows: list[dict[str, object]] = json.loads(
        (data / "presidio" / "synth_dataset_v2.json").read_text()
    )
    return rows


def load_cmrc_paragraphs(data: Path) -> list[str]:
    """CMRC 2018's Chinese paragraphs: ordinary Chinese prose, a clean set for refusals."""
    doc = json.loads((data / "cmrc2018" / "cmrc2018_dev.json").read_text())
    return [p["context"] for article in doc["data"] for p in article["paragraphs"]]


def load_noseyparker(data: Path) -> list[dict[str, object]]:
    """Nosey Parker's rule examples: label 1 must match, label 0 must not match that rule."""
    path = data / "noseyparker" / "examples.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def is_credential_row(row: dict[str, object]) -> bool:
    """A label-1 row whose rule finds a secret, not only an identifier (bucket, ARN, username)."""
    categories = set(row.get("categories") or [])  # type: ignore[call-overload]
    return row["label"] == 1 and ("secret" in categories or "identifier" not in categories)


# -- results ---------------------------------------------------------------------------------
@dataclass
class CredentialReport:
    total: int = 0
    caught: int = 0
    identifier_rows: int = 0
    identifier_refused: int = 0
    by_family: Counter[str] = field(default_factory=Counter)
    missed_rules: Counter[str] = field(default_factory=Counter)
    label0_total: int = 0
    label0_refused: int = 0
    label0_refused_rules: Counter[str] = field(default_factory=Counter)

    @property
    def recall(self) -> float:
        return self.caught / self.total if self.total else 0.0

    @property
    def all_positive_recall(self) -> float:
        n = self.total + self.identifier_rows
        return (self.caught + self.identifier_refused) / n if n else 0.0


@dataclass
class RefusalReport:
    name: str
    total: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    refused_by_detector: Counter[str] = field(default_factory=Counter)
    redacted_texts: Counter[str] = field(default_factory=Counter)
    flags: Counter[str] = field(default_factory=Counter)

    @property
    def false_refusal_rate(self) -> float:
        return sum(self.refused.values()) / self.total if self.total else 0.0


@dataclass
class PiiTypeReport:
    spans: int = 0
    redacted_as_type: int = 0
    redacted_any: int = 0
    findings: int = 0
    findings_on_gold: int = 0

    @property
    def recall(self) -> float:
        return self.redacted_as_type / self.spans if self.spans else 0.0

    @property
    def precision(self) -> float:
        return self.findings_on_gold / self.findings if self.findings else 1.0


@dataclass
class Report:
    credentials: CredentialReport
    locomo: RefusalReport
    presidio: RefusalReport
    cmrc: RefusalReport
    pii: dict[str, PiiTypeReport]
    kept: dict[str, tuple[int, int]]  # entity -> (spans, spans touched by a redaction)
    timings_ms: list[float]

    def percentile(self, q: float) -> float:
        ordered = sorted(self.timings_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- evaluation ------------------------------------------------------------------------------
def _timed(screen: Screen, text: str, timings: list[float]) -> ScreenResult:
    start = time.perf_counter()
    result = screen.check(text)
    timings.append((time.perf_counter() - start) * 1000)
    return result


def evaluate_credentials(screen: Screen, rows: Iterable[dict[str, object]]) -> CredentialReport:
    report = CredentialReport()
    for row in rows:
        result = screen.check(str(row["text"]))
        refused = result.refusal_code == "credential_refused"
        if row["label"] == 0:
            report.label0_total += 1
            if refused:
                report.label0_refused += 1
                report.label0_refused_rules[str(row["rule_id"])] += 1
            continue
        if not is_credential_row(row):
            report.identifier_rows += 1
            report.identifier_refused += refused
            continue
        report.total += 1
        if refused:
            report.caught += 1
            report.by_family[result.findings[0].family] += 1
        else:
            report.missed_rules[str(row["rule_id"])] += 1
    return report


def evaluate_clean(
    screen: Screen, name: str, texts: Iterable[str], timings: list[float]
) -> RefusalReport:
    report = RefusalReport(name)
    for text in texts:
        report.total += 1
        result = _timed(screen, text, timings)
        if result.verdict is Verdict.REFUSE:
            report.refused[result.refusal_code or "?"] += 1
            report.refused_by_detector[result.detector or "?"] += 1
            continue
        for kind in result.redacted_types:
            report.redacted_texts[kind] += 1
        for flag in result.flags:
            report.flags[flag] += 1
    return report


def _covers(f: Finding, start: int, end: int) -> bool:
    return f.start <= start and f.end >= end


def _overlaps(f: Finding, start: int, end: int) -> bool:
    return f.start < end and f.end > start


def evaluate_pii(
    screen: Screen, rows: list[dict[str, object]]
) -> tuple[dict[str, PiiTypeReport], dict[str, tuple[int, int]]]:
    per_type = {kind: PiiTypeReport() for kind in PII_ENTITY_TO_TYPE.values()}
    kept: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        text = str(row["full_text"])
        result = screen.check(text)
        pii = [f for f in result.findings if f.family == "pii"]
        spans: list[tuple[str, int, int]] = []
        for span in row["spans"]:  # type: ignore[attr-defined]
            value = span["entity_value"]
            start = int(span["start_position"])
            end = start + len(value.rstrip())
            start += len(value) - len(value.lstrip())
            spans.append((span["entity_type"], start, end))
        for entity, start, end in spans:
            kind = PII_ENTITY_TO_TYPE.get(entity)
            if kind is not None:
                rep = per_type[kind]
                rep.spans += 1
                rep.redacted_as_type += any(
                    f.detector == kind and _covers(f, start, end) for f in pii
                )
                rep.redacted_any += any(_covers(f, start, end) for f in pii)
            else:
                kept[entity][0] += 1
                kept[entity][1] += any(_overlaps(f, start, end) for f in pii)
        for f in pii:
            rep = per_type[f.detector]
            rep.findings += 1
            rep.findings_on_gold += any(
                PII_ENTITY_TO_TYPE.get(entity) == f.detector and _overlaps(f, start, end)
                for entity, start, end in spans
            )
    return per_type, {k: (v[0], v[1]) for k, v in kept.items()}


def evaluate(data: Path, screen: Screen | None = None) -> Report:
    """Run every measurement on the shared data."""
    screen = screen or Screen()
    timings: list[float] = []
    credentials = evaluate_credentials(screen, load_noseyparker(data))
    locomo = evaluate_clean(screen, "LoCoMo turns", load_locomo_turns(data), timings)
    presidio_rows = load_presidio(data)
    presidio = evaluate_clean(
        screen, "Presidio sentences", (str(r["full_text"]) for r in presidio_rows), timings
    )
    cmrc = evaluate_clean(screen, "CMRC 2018 paragraphs (zh)", load_cmrc_paragraphs(data), [])
    pii, kept = evaluate_pii(screen, presidio_rows)
    return Report(credentials, locomo, presidio, cmrc, pii, kept, timings)


# -- printing --------------------------------------------------------------------------------
def format_report(report: Report) -> str:
    """The report as Markdown tables (also pasted into docs/screening.md)."""
    c = report.credentials
    lines = [
        "### Credentials (Nosey Parker rule examples)",
        "",
        "| set | rows | refused | recall |",
        "|---|---:|---:|---:|",
        f"| label 1, secret rules | {c.total} | {c.caught} | {c.recall:.3f} |",
        f"| label 1, identifier-only rules | {c.identifier_rows} | {c.identifier_refused} | "
        f"{c.identifier_refused / max(c.identifier_rows, 1):.3f} |",
        f"| label 1, all | {c.total + c.identifier_rows} | {c.caught + c.identifier_refused} | "
        f"{c.all_positive_recall:.3f} |",
        f"| label 0 (not clean negatives) | {c.label0_total} | {c.label0_refused} | - |",
        "",
        "| family (first finding) | caught |",
        "|---|---:|",
        *(f"| {fam} | {n} |" for fam, n in c.by_family.most_common()),
        "",
        "Missed secret rules: "
        + (", ".join(f"{rule} ×{n}" for rule, n in sorted(c.missed_rules.items())) or "none"),
        "",
        "### False refusals on clean text",
        "",
        "| set | texts | refused | rate | by code | texts redacted (type: n) | flags |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for r in (report.locomo, report.presidio, report.cmrc):
        lines.append(
            f"| {r.name} | {r.total} | {sum(r.refused.values())} | {r.false_refusal_rate:.4f} | "
            f"{_counter(r.refused)} | {_counter(r.redacted_texts)} | {_counter(r.flags)} |"
        )
    refused_detectors = _counter(
        report.locomo.refused_by_detector
        + report.presidio.refused_by_detector
        + report.cmrc.refused_by_detector
    )
    lines += [
        "",
        f"Refusing detectors: {refused_detectors or 'none'}",
        "",
        "### PII on Presidio (1,500 sentences)",
        "",
        "| entity | spans | redacted as its type | recall | redacted as any type | "
        "findings of the type | on a gold span of the type |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for entity, kind in PII_ENTITY_TO_TYPE.items():
        p = report.pii[kind]
        lines.append(
            f"| {entity} (`[{kind}]`) | {p.spans} | {p.redacted_as_type} | {p.recall:.3f} | "
            f"{p.redacted_any} | {p.findings} | {p.findings_on_gold} ({p.precision:.3f}) |"
        )
    lines += [
        "",
        "| kept entity | spans | touched by a redaction |",
        "|---|---:|---:|",
    ]
    for entity, (spans, touched) in sorted(report.kept.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {entity} | {spans} | {touched} ({touched / max(spans, 1):.3f}) |")
    lines += [
        "",
        "### Time per write",
        "",
        f"{len(report.timings_ms)} writes (LoCoMo + Presidio): "
        f"p50 {report.percentile(0.5):.3f} ms, "
        f"p95 {report.percentile(0.95):.3f} ms, mean {statistics.fmean(report.timings_ms):.3f} ms, "
        f"max {max(report.timings_ms):.1f} ms",
    ]
    return "\n".join(lines)


def _counter(counter: Counter[str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counter.most_common())


def main() -> None:
    data = shared_data_dir()
    if not data.is_dir():
        raise SystemExit(f"shared data not found at {data} (set MEMVAULT_SHARED_DATA)")
    print(format_report(evaluate(data)))


if __name__ == "__main__":
    main()
