"""Calibrate the A-MEM cosine thresholds per embedder by quantile matching against MiniLM.

openclaw-amem set link 0.30, the evolution band 0.72-0.85, same-day merge 0.80 and daily
consolidation 0.75 for a MiniLM-family model. Another model spreads cosines differently, so for
each openclaw threshold t this finds the fraction of reference (MiniLM) pairs at or above t and
takes the target model's cosine with the same fraction of the SAME pairs at or above it.

Pair sets, all built deterministically (fixed seed) from public data:
- LoCoMo (English): `random` pairs of turns within a conversation, `adjacent` turns of a
  session, and near-duplicates of one turn (`drop`: a word dropped, `add`: a detail added,
  `number`: a number changed); `near_dup` is the union of the three edits.
- CMRC 2018 (Chinese): the same kinds from sentences of the dev paragraphs (`adjacent` =
  consecutive sentences of a paragraph, `random` = sentences of different paragraphs).

The link threshold is matched on English `random` pairs, the four upper thresholds on English
`near_dup` pairs (docs/amem.md, "Thresholds per embedder", says why). The reference model
(all-MiniLM-L6, int8) is English-only, so Chinese pairs are used for sanity checks only.
Texts are embedded as documents (note against note, as A-MEM compares them).

Run: `.venv/bin/python -m bench.amem_calibrate [--seed 7]`. Writes bench/out/amem-calibrate.json.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from bench._harness import OUT_DIR, arg_parser, write_json
from bench._retrieval_data import dedupe, load_cmrc, load_locomo

OUT = OUT_DIR / "amem-calibrate.json"

REFERENCE = "minilm"
TARGETS = ("use-m3", "e5-small")
MODELS = (REFERENCE, *TARGETS)

OPENCLAW: dict[str, float] = {
    "link": 0.30,
    "evolve_low": 0.72,
    "evolve_high": 0.85,
    "same_day": 0.80,
    "consolidate": 0.75,
}
MATCH_SET: dict[str, str] = {
    "link": "random",
    "evolve_low": "near_dup",
    "evolve_high": "near_dup",
    "same_day": "near_dup",
    "consolidate": "near_dup",
}
"""English pair set each threshold is matched on."""

EDITS = ("drop", "add", "number", "extend", "trim")

# sizes: e5 embeds ~75 sentences/s on an idle machine; about 5,000 distinct texts in all
EN_ADJACENT_PER_CONV = 40
EN_RANDOM = 2000
EN_BASES_PER_EDIT = 250
ZH_SENTENCES = 700
ZH_ADJACENT = 400
ZH_RANDOM = 1200
ZH_BASES_PER_EDIT = 150
SAMPLE_SHARE = {"minilm": 1.0, "use-m3": 1.0, "e5-small": 0.5}
"""Share of each pair set a model embeds (the first pairs; e5 is slow). The reference is
compared on the same first pairs."""
BOOTSTRAP = 200

_EN_NUMBER_WORDS = (
    *("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"),
    *("twelve", "twenty", "thirty", "forty", "fifty", "hundred"),
)
_EN_NUMBER = re.compile(r"\b(\d+|" + "|".join(_EN_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_ZH_NUMBER = re.compile(r"\d+")
_EN_DETAILS = (
    " It was last Saturday.",
    " My sister came along too.",
    " We went there by train.",
    " It cost about forty dollars.",
    " That was back in Boston.",
    " The weather was really cold.",
    " I did it with a couple of friends from work.",
    " It took most of the afternoon.",
)
_ZH_DETAILS = (
    "这件事发生在上个星期六。",
    "当时他的妹妹也在场。",
    "他们是坐火车去的。",
    "费用大约是四十元。",
    "那是在北京发生的。",
    "那天的天气非常冷。",
)
_ZH_SENTENCE = re.compile(r"(?<=[。！？!?])")
_EN_SENTENCE = re.compile(r"(?<=[.!?])(?=\s)")


# -- quantile matching -------------------------------------------------------------------------


def fraction_at_or_above(values: ArrayLike, threshold: float) -> float:
    """Share of `values` at or above `threshold`."""
    arr = np.asarray(values, dtype=np.float64)
    return float((arr >= threshold).mean())


def match_threshold(reference: ArrayLike, target: ArrayLike, threshold: float) -> float:
    """The target cosine that as large a share of `target` reaches as reference's `threshold`.

    `reference` and `target` are the cosines of the same pairs under two models. With
    p = share of reference at or above `threshold`, returns the (1 - p) quantile of `target`
    (linear interpolation), so about p of the target pairs are at or above it. When no reference
    pair reaches `threshold`, returns the target maximum; when all do, the target minimum.
    """
    ref = np.asarray(reference, dtype=np.float64)
    tgt = np.asarray(target, dtype=np.float64)
    if ref.size == 0 or tgt.size == 0:
        raise ValueError("need cosines for both models")
    share = fraction_at_or_above(ref, threshold)
    return float(np.quantile(tgt, 1.0 - share))


def bootstrap_match(
    reference: NDArray[np.float64],
    target: NDArray[np.float64],
    threshold: float,
    rng: np.random.Generator,
    reps: int = BOOTSTRAP,
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of `match_threshold` over pairs resampled together."""
    n = reference.size
    values = []
    for _ in range(reps):
        idx = rng.integers(0, n, n)
        values.append(match_threshold(reference[idx], target[idx], threshold))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


# -- pair sets ---------------------------------------------------------------------------------


@dataclass
class PairSet:
    """Text pairs of one kind in one language."""

    lang: str
    kind: str
    pairs: list[tuple[str, str]]

    @property
    def name(self) -> str:
        return f"{self.lang}/{self.kind}"


def edit_drop_word(text: str, rng: random.Random) -> str | None:
    """`text` with one word of its body (after `speaker: `) removed; None if too short."""
    head, sep, body = text.partition(": ")
    words = body.split()
    if not sep or len(words) < 8:
        return None
    del words[rng.randrange(len(words))]
    return f"{head}{sep}{' '.join(words)}"


def edit_add_detail(text: str, rng: random.Random, details: Sequence[str]) -> str:
    """`text` with one short detail sentence appended."""
    return text.rstrip() + rng.choice(details)


def edit_change_number(text: str, rng: random.Random, pattern: re.Pattern[str]) -> str | None:
    """`text` with one number (digits or an English number word) changed; None if it has none."""
    found = list(pattern.finditer(text))
    if not found:
        return None
    match = rng.choice(found)
    token = match.group(0)
    if token.isdigit():
        value = int(token)
        new = str(value + rng.randint(1, 9) if value < 10 else value + rng.randint(2, 30))
    else:
        choices = [w for w in _EN_NUMBER_WORDS if w != token.lower()]
        new = rng.choice(choices)
        if token[0].isupper():
            new = new.capitalize()
    return text[: match.start()] + new + text[match.end() :]


def edit_drop_chars(text: str, rng: random.Random) -> str | None:
    """Chinese `text` with one 2-3 character span (no digits or punctuation) removed."""
    if len(text) < 15:
        return None
    for _ in range(20):
        size = rng.choice((2, 3))
        start = rng.randrange(0, len(text) - size - 1)
        span = text[start : start + size]
        if all("\u4e00" <= ch <= "\u9fff" for ch in span):
            return text[:start] + text[start + size :]
    return None


def edit_trim(text: str, splitter: re.Pattern[str]) -> str | None:
    """`text` cut to its first half of sentences (a detail removed); None for one sentence."""
    sentences = [x for x in splitter.split(text) if x.strip()]
    if len(sentences) < 2:
        return None
    return "".join(sentences[: len(sentences) // 2]).strip()


def near_duplicates(
    texts: Sequence[str],
    rng: random.Random,
    per_edit: int,
    editors: dict[str, Callable[[str], str | None]],
) -> dict[str, list[tuple[str, str]]]:
    """Up to `per_edit` (original, edited) pairs per edit kind, from shuffled `texts`."""
    out: dict[str, list[tuple[str, str]]] = {}
    for kind, edit in editors.items():
        order = list(texts)
        rng.shuffle(order)
        pairs: list[tuple[str, str]] = []
        for text in order:
            edited = edit(text)
            if edited and edited != text:
                pairs.append((text, edited))
            if len(pairs) >= per_edit:
                break
        out[kind] = pairs
    return out


@dataclass(frozen=True)
class Language:
    """How one language's near-duplicates are made: how many per edit kind, the drop edit, the
    details the add edit appends, and the number and sentence-end patterns."""

    per_edit: int
    drop: Callable[[str, random.Random], str | None]
    details: Sequence[str]
    number: re.Pattern[str]
    sentence: re.Pattern[str]


ENGLISH = Language(EN_BASES_PER_EDIT, edit_drop_word, _EN_DETAILS, _EN_NUMBER, _EN_SENTENCE)
CHINESE = Language(ZH_BASES_PER_EDIT, edit_drop_chars, _ZH_DETAILS, _ZH_NUMBER, _ZH_SENTENCE)


def edited_pairs(
    rng: random.Random,
    language: Language,
    bases: Sequence[str],
    numbered: Sequence[str],
    trimmable: Sequence[str],
) -> dict[str, list[tuple[str, str]]]:
    """The drop and add pairs from `bases`, the number pairs from `numbered` and the trim pairs
    from `trimmable` (`near_duplicates`, in this order of draws from `rng`)."""
    per_edit = language.per_edit
    dups = near_duplicates(
        bases,
        rng,
        per_edit,
        {
            "drop": lambda t: language.drop(t, rng),
            "add": lambda t: edit_add_detail(t, rng, language.details),
        },
    )
    dups |= near_duplicates(
        numbered, rng, per_edit, {"number": lambda t: edit_change_number(t, rng, language.number)}
    )
    dups |= near_duplicates(
        trimmable, rng, per_edit, {"trim": lambda t: edit_trim(t, language.sentence)}
    )
    return dups


def english_sets(rng: random.Random) -> list[PairSet]:
    """LoCoMo pairs: within-conversation random, adjacent, and near-duplicate turns."""
    adjacent: list[tuple[str, str]] = []
    pools: list[list[str]] = []
    for conv in load_locomo():
        texts = [t.memory_text(captions=False) for t in conv.turns]
        sessions = [conv.session_of(t) for t in conv.turns]
        starts = [i for i in range(len(texts) - 1) if sessions[i] == sessions[i + 1]]
        chosen = sorted(rng.sample(starts, min(EN_ADJACENT_PER_CONV, len(starts))))
        adjacent.extend((texts[i], texts[i + 1]) for i in chosen)
        pools.append(dedupe(texts[j] for i in chosen for j in (i, i + 1)))
    random_pairs: list[tuple[str, str]] = []
    per_conv = EN_RANDOM // len(pools)
    for pool in pools:
        for _ in range(per_conv):
            a, b = rng.sample(pool, 2)
            random_pairs.append((a, b))
    bases = dedupe(t for pool in pools for t in pool)
    numbered = [
        t
        for t in dedupe(t.memory_text(captions=False) for c in load_locomo() for t in c.turns)
        if _EN_NUMBER.search(t.partition(": ")[2])
    ]
    dups = edited_pairs(rng, ENGLISH, bases, numbered, bases)
    # a turn against itself followed by the next turn's text: new details on the same thread
    dups["extend"] = [
        (a, f"{a} {b.partition(': ')[2]}") for a, b in rng.sample(adjacent, EN_BASES_PER_EDIT)
    ]
    rng.shuffle(random_pairs)
    rng.shuffle(adjacent)
    return [
        PairSet("en", "random", random_pairs),
        PairSet("en", "adjacent", adjacent),
        *(PairSet("en", kind, dups[kind]) for kind in EDITS),
    ]


def chinese_sets(rng: random.Random) -> list[PairSet]:
    """CMRC pairs: sentences of different paragraphs, consecutive sentences, near-duplicates."""
    by_paragraph: list[list[str]] = []
    for paragraph in load_cmrc():
        sentences = [s.strip() for s in _ZH_SENTENCE.split(paragraph.context)]
        by_paragraph.append([s for s in sentences if 12 <= len(s) <= 120])
    adjacent_all = [(s[i], s[i + 1]) for s in by_paragraph for i in range(len(s) - 1)]
    adjacent = rng.sample(adjacent_all, min(ZH_ADJACENT, len(adjacent_all)))
    pool = dedupe(t for pair in adjacent for t in pair)[:ZH_SENTENCES]
    owner = {s: i for i, sents in enumerate(by_paragraph) for s in sents}
    random_pairs: list[tuple[str, str]] = []
    while len(random_pairs) < ZH_RANDOM:
        a, b = rng.sample(pool, 2)
        if owner[a] != owner[b]:
            random_pairs.append((a, b))
    numbered = [
        s for s in dedupe(x for sents in by_paragraph for x in sents) if _ZH_NUMBER.search(s)
    ]
    dups = edited_pairs(rng, CHINESE, pool, numbered, [f"{a}{b}" for a, b in adjacent])
    dups["extend"] = [(a, f"{a}{b}") for a, b in rng.sample(adjacent, ZH_BASES_PER_EDIT)]
    return [
        PairSet("zh", "random", random_pairs),
        PairSet("zh", "adjacent", adjacent),
        *(PairSet("zh", kind, dups[kind]) for kind in EDITS),
    ]


# -- embedding ---------------------------------------------------------------------------------


def pair_cosines(name: str, sets: Sequence[PairSet], models_dir: Path) -> dict[str, Any]:
    """{set name: cosines} for model `name` (documents on both sides), plus timing.

    Only the first `SAMPLE_SHARE[name]` of each set's pairs are embedded."""
    from memvault.embed import make_embedder

    share = SAMPLE_SHARE.get(name, 1.0)
    sets = [PairSet(s.lang, s.kind, s.pairs[: max(1, round(len(s.pairs) * share))]) for s in sets]
    embedder = make_embedder(name, data_dir=models_dir)
    embedder.embed_documents(["warm up"])
    texts = dedupe(t for s in sets for pair in s.pairs for t in pair)
    started = time.perf_counter()
    vectors: dict[str, NDArray[np.float32]] = {}
    for i in range(0, len(texts), 64):
        batch = texts[i : i + 64]
        vectors.update(zip(batch, embedder.embed_documents(batch), strict=True))
    seconds = time.perf_counter() - started
    cosines = {
        s.name: np.array(
            [float(np.dot(vectors[a], vectors[b])) for a, b in s.pairs], dtype=np.float64
        )
        for s in sets
    }
    return {"model_id": embedder.model_id, "texts": len(texts), "seconds": seconds, "cos": cosines}


# -- report ------------------------------------------------------------------------------------


def with_near_dup(cos: dict[str, NDArray[np.float64]]) -> dict[str, NDArray[np.float64]]:
    """Add `<lang>/near_dup`, the union of a language's edit sets."""
    out = dict(cos)
    for lang in ("en", "zh"):
        parts = [cos[f"{lang}/{kind}"] for kind in EDITS if f"{lang}/{kind}" in cos]
        if parts:
            out[f"{lang}/near_dup"] = np.concatenate(parts)
    return out


def summary(values: NDArray[np.float64]) -> dict[str, float]:
    points = (5, 25, 50, 75, 95)
    return {"n": int(values.size)} | {
        f"p{p}": round(float(np.percentile(values, p)), 3) for p in points
    }


def sanity(cos: dict[str, NDArray[np.float64]], th: dict[str, float]) -> dict[str, float]:
    """What the thresholds `th` would do to each pair set."""
    out: dict[str, float] = {}
    for name, values in cos.items():
        out[f"{name} link"] = fraction_at_or_above(values, th["link"])
        band = (values >= th["evolve_low"]) & (values < th["evolve_high"])
        out[f"{name} band"] = float(band.mean())
        out[f"{name} same_day"] = fraction_at_or_above(values, th["same_day"])
        out[f"{name} consolidate"] = fraction_at_or_above(values, th["consolidate"])
    return out


SANITY_ROWS = (
    ("en/random", "link"),
    ("en/adjacent", "link"),
    ("zh/random", "link"),
    ("zh/adjacent", "link"),
    ("en/random", "band"),
    ("en/adjacent", "band"),
    ("en/drop", "band"),
    ("en/add", "band"),
    ("en/extend", "band"),
    ("en/trim", "band"),
    ("en/number", "band"),
    ("zh/number", "band"),
    ("en/number", "same_day"),
    ("en/drop", "same_day"),
    ("en/add", "same_day"),
    ("en/extend", "same_day"),
    ("en/adjacent", "consolidate"),
    ("en/near_dup", "consolidate"),
    ("zh/near_dup", "consolidate"),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rng = random.Random(args.seed)
    sets = english_sets(rng) + chinese_sets(rng)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; pair sets:")
    for s in sets:
        print(f"  {s.name:12} {len(s.pairs):5} pairs")
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="amem-calibrate-") as tmp:
        for name in MODELS:
            runs[name] = pair_cosines(name, sets, Path(tmp))
            print(
                f"embedded {runs[name]['texts']} texts with {name} ({runs[name]['model_id']}) "
                f"in {runs[name]['seconds']:.0f}s"
            )
    boot = np.random.default_rng(args.seed)
    ref_base = runs[REFERENCE]["cos"]
    ref_full = with_near_dup(ref_base)
    for name in MODELS:
        runs[name]["cos"] = with_near_dup(runs[name]["cos"])
    calibrated: dict[str, dict[str, float]] = {}
    intervals: dict[str, dict[str, list[float]]] = {}
    by_set: dict[str, dict[str, dict[str, float]]] = {}
    for name in TARGETS:
        tgt = runs[name]["cos"]
        # the reference on the same (first) pairs the target embedded
        ref = with_near_dup({s: v[: runs[name]["cos"][s].size] for s, v in ref_base.items()})
        model_id = runs[name]["model_id"]
        calibrated[model_id], intervals[model_id], by_set[model_id] = {}, {}, {}
        for key, t in OPENCLAW.items():
            chosen = f"en/{MATCH_SET[key]}"
            calibrated[model_id][key] = match_threshold(ref[chosen], tgt[chosen], t)
            low, high = bootstrap_match(ref[chosen], tgt[chosen], t, boot)
            intervals[model_id][key] = [low, high]
            by_set[model_id][key] = {
                s: match_threshold(ref[s], tgt[s], t)
                for s in ("en/random", "en/adjacent", "en/near_dup")
            }
            by_set[model_id][key]["en/all"] = match_threshold(
                np.concatenate([ref[s] for s in ("en/random", "en/adjacent", "en/near_dup")]),
                np.concatenate([tgt[s] for s in ("en/random", "en/adjacent", "en/near_dup")]),
                t,
            )
    ref_id = runs[REFERENCE]["model_id"]
    all_th = {ref_id: dict(OPENCLAW), **calibrated}

    print("\nCalibrated thresholds (quantile-matched to minilm on the same pairs)")
    print(
        f"{'threshold':12} {'openclaw':>8} {'ref share':>9}  "
        + "  ".join(f"{m:>26}" for m in calibrated)
    )
    for key, t in OPENCLAW.items():
        chosen = f"en/{MATCH_SET[key]}"
        share = fraction_at_or_above(ref_full[chosen], t)
        cells = "  ".join(
            f"{calibrated[m][key]:.3f} [{intervals[m][key][0]:.3f},{intervals[m][key][1]:.3f}]"
            for m in calibrated
        )
        print(f"{key:12} {t:8.2f} {share:9.3f}  {cells}   (on {chosen})")
    print("\nMatched value by reference set (sensitivity)")
    for m, per_key in by_set.items():
        for key, vals in per_key.items():
            print(f"  {m:14} {key:12} " + "  ".join(f"{s} {v:.3f}" for s, v in vals.items()))
    print("\nCosine percentiles (p5 p25 p50 p75 p95)")
    for set_name in ref_full:
        row = "   ".join(
            " ".join(f"{v:.2f}" for k, v in summary(runs[m]["cos"][set_name]).items() if k != "n")
            for m in MODELS
        )
        print(f"  {set_name:12} {row}")
    print(f"  {'':12} " + "   ".join(f"{m:>24}" for m in MODELS))

    checks = {
        runs[m]["model_id"]: sanity(runs[m]["cos"], all_th[runs[m]["model_id"]]) for m in MODELS
    }
    raw = {m: sanity(runs[m]["cos"], OPENCLAW) for m in TARGETS}
    print("\nSanity: share of pairs that pass, with each model's (calibrated) thresholds")
    print(
        f"  {'pairs':12} {'test':12} "
        + " ".join(f"{runs[m]['model_id']:>15}" for m in MODELS)
        + "   | openclaw values as-is: "
        + " ".join(f"{m:>9}" for m in TARGETS)
    )
    for set_name, test in SANITY_ROWS:
        key = f"{set_name} {test}"
        cells = " ".join(f"{checks[runs[m]['model_id']][key]:15.3f}" for m in MODELS)
        rawcells = " ".join(f"{raw[m][key]:9.3f}" for m in TARGETS)
        print(f"  {set_name:12} {test:12} {cells}   | {'':23}{rawcells}")

    elapsed = time.perf_counter() - started
    print(f"\nrun took {elapsed:.0f}s")
    report = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
        "seed": args.seed,
        "cpus": os.cpu_count(),
        "seconds": round(elapsed, 1),
        "reference": {"embedder": REFERENCE, "model_id": ref_id},
        "openclaw": OPENCLAW,
        "match_set": {k: f"en/{v}" for k, v in MATCH_SET.items()},
        "reference_share": {
            k: fraction_at_or_above(ref_full[f"en/{MATCH_SET[k]}"], t) for k, t in OPENCLAW.items()
        },
        "calibrated": calibrated,
        "calibrated_rounded": {
            m: {k: round(v, 2) for k, v in th.items()} for m, th in calibrated.items()
        },
        "bootstrap_95": intervals,
        "matched_by_set": by_set,
        "embedding": {
            m: {"model_id": r["model_id"], "texts": r["texts"], "seconds": round(r["seconds"], 1)}
            for m, r in runs.items()
        },
        "pairs": {s.name: len(s.pairs) for s in sets},
        "cosine_percentiles": {
            m: {s: summary(v) for s, v in r["cos"].items()} for m, r in runs.items()
        },
        "sanity_calibrated": checks,
        "sanity_openclaw_values": raw,
        "examples": {s.name: s.pairs[:3] for s in sets},
    }
    write_json(args.out, report)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
