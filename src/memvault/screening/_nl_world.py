"""Passwords told in Japanese, Korean, Russian, Arabic, Hindi, Turkish, Polish, Dutch,
Vietnamese and Indonesian (the European languages and Chinese are in `_nl_passwords`).

Each language has its words for "password" (パスワード, 비밀번호, пароль, كلمة المرور, पासवर्ड,
şifre, hasło, wachtwoord, mật khẩu, kata sandi, …), the particles or verbs that introduce the
value (は…です, 는…입니다, это, هي, है, adalah, là, to, is, `:`), and a value rule:

- after a colon, `=` or a copula, a value of at least three characters that is not a placeholder
  is a secret in the non-Latin scripts (a run of ASCII inside Japanese prose after
  "パスワードは" is the password); in the Latin-script languages it must look made up (a digit, a
  symbol, inner capitals) or be quoted, since a lone word there may be an adjective
  ("wachtwoord is vergeten");
- with only a space between keyword and value, the value needs a digit or a symbol.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.screening._model import Finding
from memvault.screening._secret_values import PASSWORD, is_placeholder, looks_made_up

_Q = r"[\"'`“‘「『«]?"
_ASCII_V = r"(?P<v>[!-~]{3,100}?)"
_LATIN_V = r"(?P<v>[^\s\"'`”’」』»]{3,100}?)"
_END = r"(?=[\"'`”’」』»]?(?:$|[\s.,;!?。、！？，]))"


def _lang(keyword: str, mid: str, copula: str, value: str, end: str = _END) -> re.Pattern[str]:
    return re.compile(
        r"(?<![^\W\d_])(?:" + keyword + r")"
        r"(?:\s*(?:" + mid + r"))?"
        r"(?:(?P<op>\s*(?:[:=：—–]|" + copula + r")\s*)|(?P<sp>\s+))" + _Q + value + end,
        re.IGNORECASE,
    )


_NON_LATIN: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "ja",
        _lang(
            r"パスワード|パスコード|暗証番号|PIN\s*コード|合言葉",
            r"(?:の|が)?\S{0,12}?の",
            r"は|が|を|も",
            _ASCII_V,
            r"(?=[\"'`”’」』]?(?:$|です|でした|だ|に|[\s.,;!?。、！？，]))",
        ),
    ),
    (
        "ko",
        _lang(
            r"비밀\s?번호|패스워드|암호|비번",
            r"\S{1,12}\s",
            r"는|은|가|이|를",
            _ASCII_V,
            r"(?=[\"'`”’」』]?(?:$|입니다|이에요|예요|이야|야|이다|다|요|로|으로|[\s.,;!?。、！？，]))",
        ),
    ),
    (
        "ru",
        _lang(
            r"пароль|пароля|паролем|пин-?код|код\s+доступа",
            r"(?:от|для|к|на)\s+[^\s.,:;!?]{1,30}",
            r"это|такой|будет|теперь|был|—\s*это",
            _ASCII_V,
        ),
    ),
    (
        "ar",
        _lang(
            r"كلمة\s+(?:المرور|السر)|رمز\s+(?:المرور|الدخول)|الرقم\s+السري",
            r"(?:[\u0600-\u06ff]+\s+){0,3}?",
            r"هي|هو|كانت",
            _ASCII_V,
        ),
    ),
    (
        "hi",
        _lang(
            r"पासवर्ड|कूटशब्द|पिन",
            r"(?:[\u0900-\u097f]+\s+){0,2}?",
            r"है|हैं|था",
            _ASCII_V,
            r"(?=[\"'`”’]?(?:$|\s*(?:है|था|हैं|।)|[\s.,;!?]))",
        ),
    ),
)
_LATIN: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "tr",
        _lang(
            r"şifre(?:m|miz|si|niz|n)?|sifre(?:m|si)?|parola(?:m|sı|si)",
            r"(?:wifi|modem|banka|e-?posta)\S{0,6}",
            r"şudur|budur|ise",
            _LATIN_V,
        ),
    ),
    (
        "pl",
        _lang(
            r"hasło|hasła|haslo|hasla",
            r"(?:do|od|dla)\s+[^\s.,:;!?]{1,30}",
            r"to|jest|brzmi|było|bylo",
            _LATIN_V,
        ),
    ),
    (
        "nl",
        _lang(
            r"wachtwoord",
            r"(?:van|voor)\s+(?:de\s+|het\s+|mijn\s+)?[^\s.,:;!?]{1,30}",
            r"is|was|luidt|blijft",
            _LATIN_V,
        ),
    ),
    (
        "vi",
        _lang(
            r"mật\s+khẩu|mat\s+khau",
            r"(?:của|cua|cho|wifi|wi-fi)\s*[^\s.,:;!?]{0,30}",
            r"là|la",
            _LATIN_V,
        ),
    ),
    (
        "id",
        _lang(
            r"kata\s+sandi(?:nya|ku)?|sandi(?:nya|ku)?|kata\s+kunci(?:nya)?",
            r"(?:untuk|dari|wifi)\s*[^\s.,:;!?]{0,30}|saya|aku|kamu|anda|mu",
            r"adalah|ialah|yaitu|yakni",
            _LATIN_V,
        ),
    ),
)
_HINT = re.compile(
    r"パス|暗証|合言葉|PIN|비밀|패스|암호|비번|парол|пин|код|كلمة|رمز|الرقم|पासवर्ड|कूटशब्द|पिन|"
    r"[şs]ifre|parola|has[łl]|wachtwoord|m[ậa]t\s+kh|sandi|kata\s+kunci",
    re.IGNORECASE,
)


_MORE = re.compile(r"\s+\S")


def _has_digit_or_symbol(value: str) -> bool:
    return any(ch.isdigit() or not ch.isalnum() for ch in value)


def world_password_findings(text: str) -> Iterator[Finding]:
    """Passwords told in ja, ko, ru, ar, hi, tr, pl, nl, vi and id prose."""
    if _HINT.search(text) is None:
        return
    for latin, table in ((False, _NON_LATIN), (True, _LATIN)):
        for _lang_code, regex in table:
            for m in regex.finditer(text):
                value = m.group("v")
                if is_placeholder(value):
                    continue
                quoted = text[m.start("v") - 1 : m.start("v")] in "\"'`“‘「『«" and m.start("v") > 0
                if m.group("sp") is not None:
                    if not _has_digit_or_symbol(value):
                        continue
                elif latin and not (quoted or looks_made_up(value)):
                    continue
                elif not (quoted or _has_digit_or_symbol(value)) and _MORE.match(text, m.end("v")):
                    continue  # "비밀번호는 WiFi 공유기 뒷면에": a plain word inside prose
                yield Finding("natural_language_password", PASSWORD, m.start("v"), m.end("v"))
