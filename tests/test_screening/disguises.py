"""Issue 33's disguised credentials, built at run time (no literal secret in this folder).

Each row is (name, text, fields): `fields` says where the HTTP test puts it ("text",
"topics", "source"). Every row was stored (201) before the screen read look-alikes, escapes,
separators, short forms and the other languages.
"""

from __future__ import annotations

from tests.test_screening.conftest import fake

CYR_A, CYR_O, CYR_P, CYR_CAP_A = "\u0430", "\u043e", "\u0440", "\u0410"


def password_like() -> str:
    """A password-like string: letters, digits and a symbol."""
    return fake("Zq", 9) + "#7"


def ghp_token() -> str:
    return fake("ghp_", 36)


def aws_key_id() -> str:
    return fake("AKIA", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def next_sentence_value() -> str:
    return fake("Zq7!vR", 6) + "#x"


PASSPHRASE = "correct horse battery staple"


def row_secrets() -> list[str]:
    """The secret values inside the rows (to search stored data for): never printed."""
    token = ghp_token()
    return [password_like(), token[4:], aws_key_id()[1:], next_sentence_value(), PASSPHRASE]


def id_grammar_rows() -> list[tuple[str, str]]:
    """Disguised tokens that fit the id grammar `[A-Za-z0-9][A-Za-z0-9._@-]*` (readers,
    session ids): the table's letter-spaced token with dots or dashes for spaces."""
    token = ghp_token()
    return [
        ("dotted_token", ".".join(token)),
        ("dashed_token", "-".join(token)),
        ("dotted_aws_key_id", ".".join(aws_key_id())),
    ]


def issue_rows() -> list[tuple[str, str]]:
    """(row name, note text) for every text row of the issue's table."""
    pw = password_like()
    token = ghp_token()
    return [
        ("cyrillic_a_in_password", f"my p{CYR_A}ssword is {pw}"),
        ("cyrillic_o_in_password", f"my passw{CYR_O}rd is {pw}"),
        ("aws_key_with_cyrillic_A", f"deploy key {CYR_CAP_A}{aws_key_id()[1:]} for prod"),
        ("ghp_with_cyrillic_r", f"use gh{CYR_P}_{token[4:]} for the CI job"),
        ("newline_inside_keyword", f"my pass\nword is {pw}"),
        ("slash_inside_keyword", f"my pass/word is {pw}"),
        ("pw_short_form", f"pw:{pw} for the router"),
        ("login_slash", f"login alice / {pw}"),
        ("japanese", f"パスワードは{pw}です"),
        ("spaced_chinese", f"密 码 是 {pw}"),
        ("letter_spaced_token", "the token is " + " ".join(token)),
        ("hex_escaped_token", "the token is " + "".join(f"\\x{ord(c):02x}" for c in token)),
        (
            "secret_in_next_sentence",
            "the wifi password is written on the whiteboard. It is " + next_sentence_value(),
        ),
        ("passphrase", f"my passphrase is {PASSPHRASE}"),
    ]


def disguise_row_for_topic() -> str:
    """The topic row of the issue: `pw:PW`."""
    return f"pw:{password_like()}"


def dialogue_turn() -> str:
    """The dialogue row: "My pаssword is PW" with a Cyrillic а."""
    return f"My p{CYR_A}ssword is {password_like()}"


LOOKALIKE_PROSE: tuple[str, ...] = (
    "I changed my password yesterday and it is much stronger now.",
    "The password manager reminded me to rotate my tokens this week.",
    "My passphrase is long and hard to remember, so I wrote a hint.",
    "The wifi password is on the back of the router. It is printed small.",
    "Use a pass phrase instead of a password, the security talk said.",
    "I'll pass. Word on the street is the launch slipped again.",
    "She forgot her PIN again and had to call the bank.",
    "Login page / dashboard both load slowly since the update.",
    "The GitHub token expired, so the CI job failed until Monday.",
    "My p\u0430ssword manager is great, I use it every day.",
    "Мой пароль слишком короткий, надо поменять.",
    "パスワードを忘れたので、リセットしました。",
    "비밀번호는 WiFi 공유기 뒷면에 있어요.",
    "mijn wachtwoord is vergeten, dus ik heb het gereset.",
    "Hasło do banku zmieniłem wczoraj wieczorem.",
    "Şifremi unuttum, yenisini aldım.",
    "Saya lupa kata sandi saya kemarin.",
    "Tôi quên mật khẩu rồi, phải đặt lại.",
    "The AWS key rotation policy says every 90 days.",
    "We met at the cafe at noon. It is 20 minutes from home.",
    "Spaced letters like a b c d e f g h are a kids' game.",
    "The URL had %20 in it, and &amp; too, which looked odd.",
    "The pin code for the door changed, ask the landlord.",
    "My password is strong. It is not written anywhere.",
)
