"""Evaluate the write screen on public data: `.venv/bin/python -m bench.screening`.

Reads `../shared/data` (override with MEMVAULT_SHARED_DATA) and prints:
- credential recall on Nosey Parker's positives, per family and overall;
- what the screen does with Nosey Parker's label-0 rows (some are real credentials);
- credential recall on the same rows written full-width, with zero-width spaces or with soft
  hyphens between every character (the screen normalises before it scans);
- false refusals on every LoCoMo turn and every Presidio sentence;
- PII recall and over-redaction per Presidio entity type;
- how many Presidio sentences collapse into another one once redacted, with `[TYPE]` and with
  keyed `[TYPE:pseudonym]` placeholders, and that a second screening changes nothing;
- field mode (`check_field`) on Presidio's entity values: names, places and dates kept, PII
  redacted;
- the screen's time per write, p50/p95 (with a pseudonym function, as the vault calls it);
- recall on issue 33's disguised variants of the secret rows, and refusals on the look-alike
  prose set (`bench._screening_disguises`; `--disguises` runs only that part).

`--locale-catalogs` instead screens every translated message of the system's gettext catalogs
(`/usr/share/locale/{fr,de,es,it,pt}`) and their English originals: European prose about
passwords, for the false refusals of the European password phrases.

Nothing here prints a matched value: misses are named by rule id.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench._harness import percentile
from memvault.screening import Finding, Pseudonym, Screen, ScreenResult, Verdict

PII_ENTITY_TO_TYPE: dict[str, str] = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "card",
    "IBAN_CODE": "iban",
    "US_SSN": "ssn",
    "IP_ADDRESS": "ip",
}
KEPT_ENTITIES = ("PERSON", "STREET_ADDRESS", "GPE", "ORGANIZATION", "DATE_TIME", "ZIP_CODE")
_BENCH_KEY = b"memvault-bench-index-key"


def bench_pseudonym(kind: str, value: str) -> str:
    """What the vault passes: an HMAC of the canonical value under an index key, 6 hex chars."""
    return hmac.new(_BENCH_KEY, f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()[:6]


# ways to hide a credential from a scanner that reads raw text
def _fullwidth(text: str) -> str:
    return "".join(
        chr(ord(ch) + 0xFEE0) if 0x21 <= ord(ch) <= 0x7E else "\u3000" if ch == " " else ch
        for ch in text
    )


def _interleave(mark: str) -> Callable[[str], str]:
    def hide(text: str) -> str:
        return mark.join(text)

    return hide


OBFUSCATIONS = {
    "full-width (ｇｈｐ_…)": _fullwidth,
    "zero-width space between every character": _interleave("\u200b"),
    "soft hyphen between every character": _interleave("\u00ad"),
}


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
    obfuscated: dict[str, int] = field(default_factory=dict)  # variant -> secret rows refused

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
class CollisionReport:
    """Presidio sentences that, once redacted, equal another sentence's redacted text."""

    texts: int = 0
    distinct_inputs: int = 0
    distinct_typed: int = 0  # distinct accepted texts with `[TYPE]` placeholders
    distinct_pseudonymised: int = 0  # ... with `[TYPE:pseudonym]`
    rescreen_changed: int = 0  # accepted texts that a second screening changes


@dataclass
class FieldReport:
    """`check_field` on Presidio's entity values, one value per call."""

    kept_values: int = 0
    kept_changed: int = 0  # kept-entity values refused or altered
    pii_values: Counter[str] = field(default_factory=Counter)
    pii_redacted: Counter[str] = field(default_factory=Counter)  # redacted as their own type
    refused: Counter[str] = field(default_factory=Counter)


@dataclass
class Report:
    credentials: CredentialReport
    locomo: RefusalReport
    presidio: RefusalReport
    cmrc: RefusalReport
    pii: dict[str, PiiTypeReport]
    kept: dict[str, tuple[int, int]]  # entity -> (spans, spans touched by a redaction)
    timings_ms: list[float]
    collisions: CollisionReport = field(default_factory=CollisionReport)
    fields: FieldReport = field(default_factory=FieldReport)

    def percentile(self, q: float) -> float:
        """The q-th quantile (0-1) of the screen's time per write, in ms."""
        return percentile(self.timings_ms, q * 100)


# -- evaluation ------------------------------------------------------------------------------
def _timed(
    screen: Screen, text: str, timings: list[float], pseudonym: Pseudonym | None = None
) -> ScreenResult:
    start = time.perf_counter()
    result = screen.check(text, pseudonym=pseudonym)
    timings.append((time.perf_counter() - start) * 1000)
    return result


def evaluate_obfuscated(screen: Screen, rows: Iterable[dict[str, object]]) -> dict[str, int]:
    """Secret-rule rows refused once hidden each way (compare with the plain rows' recall)."""
    caught = dict.fromkeys(OBFUSCATIONS, 0)
    for row in rows:
        if not is_credential_row(row):
            continue
        for name, hide in OBFUSCATIONS.items():
            result = screen.check(hide(str(row["text"])))
            caught[name] += result.refusal_code == "credential_refused"
    return caught


def evaluate_credentials(screen: Screen, rows: list[dict[str, object]]) -> CredentialReport:
    report = CredentialReport(obfuscated=evaluate_obfuscated(screen, rows))
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
    screen: Screen,
    name: str,
    texts: Iterable[str],
    timings: list[float],
    pseudonym: Pseudonym | None = bench_pseudonym,
) -> RefusalReport:
    report = RefusalReport(name)
    for text in texts:
        report.total += 1
        result = _timed(screen, text, timings, pseudonym)
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


def evaluate_collisions(screen: Screen, rows: list[dict[str, object]]) -> CollisionReport:
    """Do redacted sentences stay apart? And does screening a stored text again change it?"""
    report = CollisionReport()
    inputs: set[str] = set()
    typed: set[str] = set()
    pseudonymised: set[str] = set()
    for row in rows:
        text = str(row["full_text"])
        plain = screen.check(text)
        keyed = screen.check(text, pseudonym=bench_pseudonym)
        if not keyed.accepted:
            continue
        report.texts += 1
        inputs.add(text)
        typed.add(plain.text)
        pseudonymised.add(keyed.text)
        again = screen.check(keyed.text, pseudonym=bench_pseudonym)
        report.rescreen_changed += again.text != keyed.text
    report.distinct_inputs = len(inputs)
    report.distinct_typed = len(typed)
    report.distinct_pseudonymised = len(pseudonymised)
    return report


def evaluate_fields(screen: Screen, rows: list[dict[str, object]]) -> FieldReport:
    """Each labeled entity value alone through `check_field`, as a topic or source would be."""
    report = FieldReport()
    for row in rows:
        for span in row["spans"]:  # type: ignore[attr-defined]
            value = str(span["entity_value"]).strip()
            entity = span["entity_type"]
            result = screen.check_field(value, field="topics", pseudonym=bench_pseudonym)
            if result.refusal_code is not None:
                report.refused[result.detector or "?"] += 1
            kind = PII_ENTITY_TO_TYPE.get(entity)
            if kind is None:
                report.kept_values += 1
                report.kept_changed += not result.accepted or result.text != value
            else:
                report.pii_values[kind] += 1
                report.pii_redacted[kind] += result.accepted and result.redacted_types == (kind,)
    return report


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
    collisions = evaluate_collisions(screen, presidio_rows)
    fields = evaluate_fields(screen, presidio_rows)
    return Report(credentials, locomo, presidio, cmrc, pii, kept, timings, collisions, fields)


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
        "| secret-rule rows hidden as | refused | recall |",
        "|---|---:|---:|",
        *(
            f"| {name} | {n} | {n / max(c.total, 1):.3f} |"
            for name, n in (c.obfuscated or {}).items()
        ),
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
            f"| {entity} (`[{kind.upper()}]`) | {p.spans} | {p.redacted_as_type} | "
            f"{p.recall:.3f} | {p.redacted_any} | {p.findings} | "
            f"{p.findings_on_gold} ({p.precision:.3f}) |"
        )
    lines += [
        "",
        "| kept entity | spans | touched by a redaction |",
        "|---|---:|---:|",
    ]
    for entity, (spans, touched) in sorted(report.kept.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {entity} | {spans} | {touched} ({touched / max(spans, 1):.3f}) |")
    col = report.collisions
    fr = report.fields
    lines += [
        "",
        "### Placeholders: facts kept apart (Presidio sentences)",
        "",
        "| accepted sentences | distinct inputs | distinct with `[TYPE]` | "
        "distinct with `[TYPE:pseudonym]` | changed by a second screening |",
        "|---:|---:|---:|---:|---:|",
        f"| {col.texts} | {col.distinct_inputs} | {col.distinct_typed} | "
        f"{col.distinct_pseudonymised} | {col.rescreen_changed} |",
        "",
        "### Field mode (`check_field`, each Presidio entity value alone)",
        "",
        f"Kept-entity values (names, places, organisations, dates, …): {fr.kept_values}, "
        f"refused or altered: {fr.kept_changed}. Refusing detectors: "
        f"{_counter(fr.refused) or 'none'}.",
        "",
        "| PII type | values | redacted as its type | recall |",
        "|---|---:|---:|---:|",
        *(
            f"| {kind} | {n} | {fr.pii_redacted[kind]} | {fr.pii_redacted[kind] / n:.3f} |"
            for kind, n in fr.pii_values.items()
        ),
        "",
        "### Time per write",
        "",
        f"{len(report.timings_ms)} writes (LoCoMo + Presidio, with a pseudonym function): "
        f"p50 {report.percentile(0.5):.3f} ms, "
        f"p95 {report.percentile(0.95):.3f} ms, mean {statistics.fmean(report.timings_ms):.3f} ms, "
        f"max {max(report.timings_ms):.1f} ms",
    ]
    return "\n".join(lines)


def _counter(counter: Counter[str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counter.most_common())


# -- optional: European prose from the system's translated UI messages ------------------------
LOCALE_DIR = Path("/usr/share/locale")
LOCALE_LANGUAGES: dict[str, tuple[str, ...]] = {
    "fr": ("fr",),
    "de": ("de",),
    "es": ("es",),
    "it": ("it",),
    "pt": ("pt", "pt_BR"),
}


def load_locale_messages(language: str | None) -> set[str]:
    """Every translated message of the system's gettext catalogs for `language` (None: the
    English originals of the French catalogs)."""
    import gettext

    folders = LOCALE_LANGUAGES.get(language or "", ("fr",))
    messages: set[str] = set()
    for folder in folders:
        for path in sorted((LOCALE_DIR / folder / "LC_MESSAGES").glob("*.mo")):
            try:
                with path.open("rb") as fp:
                    catalog: dict[object, str] = gettext.GNUTranslations(fp)._catalog  # type: ignore[attr-defined]
            except (OSError, ValueError):  # unreadable or not a catalog
                continue
            for key, value in catalog.items():
                original = key[1] if isinstance(key, tuple) else key
                text = value if language else original
                if isinstance(text, str) and text.strip():
                    messages.add(text.strip())
    return messages


def format_locale_report(screen: Screen) -> str:
    """Refusals on translated UI messages: prose about passwords in fr/de/es/it/pt and English."""
    lines = [
        "| language | messages | refused (not `too_short`) | by detector |",
        "|---|---:|---:|---|",
    ]
    for language in (*LOCALE_LANGUAGES, None):
        messages = load_locale_messages(language)
        refused: Counter[str] = Counter()
        for message in messages:
            result = screen.check(message)
            if result.refusal_code not in (None, "too_short"):
                refused[result.detector or "?"] += 1
        lines.append(
            f"| {language or 'en (originals)'} | {len(messages)} | {sum(refused.values())} | "
            f"{_counter(refused)} |"
        )
    return "\n".join(lines)


def main() -> None:
    import sys

    if "--locale-catalogs" in sys.argv[1:]:
        if not LOCALE_DIR.is_dir():
            raise SystemExit(f"no gettext catalogs under {LOCALE_DIR}")
        print(format_locale_report(Screen()))
        return
    data = shared_data_dir()
    if not data.is_dir():
        raise SystemExit(f"shared data not found at {data} (set MEMVAULT_SHARED_DATA)")
    screen = Screen()
    if "--disguises" not in sys.argv[1:]:
        print(format_report(evaluate(data, screen)))
    from bench._screening_disguises import disguised_recall, format_disguises, lookalike_refusals

    secret_rows = [str(r["text"]) for r in load_noseyparker(data) if is_credential_row(r)]
    print("\n### Disguised variants (issue 33) and the look-alike set\n")
    print(format_disguises(disguised_recall(screen, secret_rows), lookalike_refusals(screen)))


if __name__ == "__main__":
    main()
