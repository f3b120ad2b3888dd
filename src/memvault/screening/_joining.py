"""Joining what a writer split: keywords across separators, and letter-spaced runs.

`join_split_keywords` runs on every view the credential scanner reads, so `pass word`,
`pass\\nword`, `pass/word`, `passw ord`, `p a-s s w o r d`, `密 码` and `パ ス ワ ー ド` read as the
keyword, and a run of at least eight single characters set apart by spaces
(`g h p _ x x x …`) reads as one token. Only separators are dropped; the stored text keeps what
was written, and a joined keyword still needs a value that passes the value rules.
"""

from __future__ import annotations

import re

# any mix of these, one to three characters, may sit between two letters of a keyword
_SEP = r"[\s/.\-_*·‐‑|\\~+]{1,3}"
_JOINED_KEYWORDS = (
    "password",
    "passwort",
    "passphrase",
    "passcode",
    "passwd",
    "kennwort",
    "secret",
    "senha",
    "contraseña",
    "contrasena",
    "palavrapasse",
    "wachtwoord",
    "hasło",
    "haslo",
    "şifre",
    "sifre",
    "пароль",
)
# CJK keywords: only whitespace between their characters
_CJK_KEYWORDS = ("密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호", "암호", "패스워드")


def _spread(word: str, sep: str) -> str:
    return f"(?:{sep})?".join(re.escape(ch) for ch in word)


_KEYWORD_RUN = re.compile(
    r"(?<![^\W\d_])(?:"
    + "|".join(_spread(w, _SEP) for w in _JOINED_KEYWORDS)
    + r")(?![^\W\d_])|(?:"
    + "|".join(_spread(w, r"\s{1,3}") for w in _CJK_KEYWORDS)
    + ")",
    re.IGNORECASE,
)
_KEYWORD_HINT = re.compile(r"[pskcwhşпPSKCWHŞП密口パ暗비암패]")
# eight or more single characters set apart by one or two spaces or tabs: "g h p _ x …"
_LETTER_RUN = re.compile(r"(?<!\S)\S(?:[ \t]{1,2}\S(?!\S)){7,}")
# eight or more single characters set apart by one dot or dash throughout: "g.h.p._.x…"
_DOTTED_RUN = re.compile(
    r"(?<![^\s\"'`(\[{<])[^\s.\-](?P<sep>[.\-])[^\s.\-](?:(?P=sep)[^\s.\-]){6,}(?![^\s.,;:!?\"'`)\]}>])"
)


def join_split_keywords(text: str) -> tuple[str, list[int] | None]:
    """`text` with split keywords and letter-spaced runs joined, and each character's position
    in `text` (None, with `text` as it is, when nothing was joined)."""
    drop: set[int] = set()
    if _KEYWORD_HINT.search(text) is not None:
        for m in _KEYWORD_RUN.finditer(text):
            if any(not ch.isalpha() for ch in m.group(0)):
                drop.update(i for i in range(m.start(), m.end()) if not text[i].isalpha())
    if " " in text or "\t" in text:
        for m in _LETTER_RUN.finditer(text):
            drop.update(i for i in range(m.start(), m.end()) if text[i] in " \t")
    if "." in text or "-" in text:
        for m in _DOTTED_RUN.finditer(text):
            sep = m.group("sep")
            drop.update(i for i in range(m.start(), m.end()) if text[i] == sep)
    if not drop:
        return text, None
    positions = [i for i in range(len(text)) if i not in drop]
    return "".join(text[i] for i in positions), positions
