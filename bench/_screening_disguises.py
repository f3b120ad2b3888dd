"""Issue 33's disguised variant set, built from Nosey Parker's secret-rule rows, and the look-alike
prose set, part of `bench.screening` (`--disguises` runs only this part).

Each secret-rule row is rewritten once per disguise and screened; recall per disguise is the
share refused `credential_refused`. Row-wide disguises rewrite the row as written (confusables,
letter spacing, separators, escapes). Phrase disguises take the row's longest token-like run
(the secret, for nearly every row) and say it in a sentence: a short form, the next sentence,
another language. Nothing here prints a row or a value: counts only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from memvault.screening import Screen

# Latin letters and their Cyrillic or Greek look-alikes (UTS #39 confusables)
_LOOKALIKE = str.maketrans("aceopxyAEOPCTHKMBXI", "асеорхуАЕОРСТНКМВХІ")
_VALUE = re.compile(r"[A-Za-z0-9+/=_\-.!#$%&*@~]{8,}")


def _per_token(join: str) -> Callable[[str], str]:
    """Every whitespace-separated token with `join` between its characters."""

    def hide(text: str) -> str:
        return " ".join(join.join(token) for token in text.split(" "))

    return hide


def _escape(fmt: Callable[[str], str]) -> Callable[[str], str]:
    """Every non-space character escaped (`\\x67`, `%67`, `&#x67;`, `=67`…)."""

    def hide(text: str) -> str:
        return "".join(ch if ch.isspace() else fmt(ch) for ch in text)

    return hide


def _utf8(ch: str, form: str) -> str:
    return "".join(form.format(b) for b in ch.encode())


ROW_DISGUISES: dict[str, Callable[[str], str]] = {
    "confusables (Cyrillic/Greek look-alikes)": lambda t: t.translate(_LOOKALIKE),
    "letters spaced one by one": _per_token(" "),
    "letters joined by dots": _per_token("."),
    "letters joined by dashes": _per_token("-"),
    "\\xNN escapes": _escape(lambda c: _utf8(c, "\\x{:02x}")),
    "\\uNNNN escapes": _escape(lambda c: f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c),
    "%NN escapes": _escape(lambda c: _utf8(c, "%{:02X}")),
    "HTML entities": _escape(lambda c: f"&#x{ord(c):x};"),
    "quoted-printable": _escape(lambda c: _utf8(c, "={:02X}")),
}

PHRASE_DISGUISES: dict[str, Callable[[str], str]] = {
    "short form `pw:`": lambda v: f"pw:{v} for the router",
    "short form `my pw is`": lambda v: f"my pw is {v}",
    "login X / Y": lambda v: f"login alice / {v}",
    "next sentence": lambda v: f"The wifi password is written on the whiteboard. It is {v}",
    "password with a Cyrillic а": lambda v: f"my p\u0430ssword is {v}",
    "keyword split by a newline": lambda v: f"my pass\nword is {v}",
    "Japanese": lambda v: f"パスワードは{v}です",
    "Korean": lambda v: f"비밀번호는 {v} 입니다",
    "Russian": lambda v: f"мой пароль {v}",
    "spaced Chinese": lambda v: f"密 码 是 {v}",
    "Turkish": lambda v: f"şifrem {v}",
    "Polish": lambda v: f"moje hasło to {v}",
    "Dutch": lambda v: f"mijn wachtwoord is {v}",
    "Indonesian": lambda v: f"kata sandi saya {v}",
    "Vietnamese": lambda v: f"mật khẩu của tôi là {v}",
    "Arabic": lambda v: f"كلمة المرور هي {v}",
    "Hindi": lambda v: f"मेरा पासवर्ड {v} है",
}


def secret_value(row_text: str) -> str | None:
    """The row's longest token-like run (8+ characters), or None."""
    runs = _VALUE.findall(row_text)
    return max(runs, key=len) if runs else None


def disguised_recall(screen: Screen, texts: list[str]) -> dict[str, tuple[int, int]]:
    """Per disguise: (rows, refused) over the secret-rule rows `texts`."""
    result: dict[str, tuple[int, int]] = {}
    for name, hide in ROW_DISGUISES.items():
        refused = sum(screen.check(hide(t)).refusal_code == "credential_refused" for t in texts)
        result[name] = (len(texts), refused)
    values = [v for v in map(secret_value, texts) if v is not None]
    for name, say in PHRASE_DISGUISES.items():
        refused = sum(screen.check(say(v)).refusal_code == "credential_refused" for v in values)
        result[name] = (len(values), refused)
    return result


LOOKALIKES = Path(__file__).resolve().parents[1] / "tests" / "test_screening" / "data"
LOOKALIKES /= "lookalike_prose.txt"


def load_lookalikes() -> list[str]:
    lines = LOOKALIKES.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def lookalike_refusals(screen: Screen) -> tuple[int, int]:
    """(sentences, refused) on the look-alike prose set."""
    sentences = load_lookalikes()
    return len(sentences), sum(not screen.check(s).accepted for s in sentences)


def format_disguises(recall: dict[str, tuple[int, int]], lookalikes: tuple[int, int]) -> str:
    lines = [
        "| secret-rule rows disguised as | rows | refused | recall |",
        "|---|---:|---:|---:|",
        *(f"| {name} | {n} | {k} | {k / max(n, 1):.3f} |" for name, (n, k) in recall.items()),
        "",
        f"Look-alike prose set: {lookalikes[0]} sentences, {lookalikes[1]} refused.",
    ]
    return "\n".join(lines)
