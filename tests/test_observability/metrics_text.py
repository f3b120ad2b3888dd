"""Read samples out of a Prometheus text exposition (what `/metrics` returns)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of `text`, keyed by (sample name, frozenset of its labels)."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(text: str, name: str, **labels: str) -> float:
    """The sample `name` with exactly `labels` (0 when absent)."""
    return samples(text).get((name, frozenset(labels.items())), 0.0)
