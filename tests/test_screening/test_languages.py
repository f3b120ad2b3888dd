"""Password phrases in French, German, Spanish, Italian and Portuguese, and their prose twins."""

from __future__ import annotations

import pytest

from memvault.screening import Screen, Verdict

# (text, the value the finding must cover)
REFUSED: list[tuple[str, str]] = [
    # French
    ("mon mot de passe est soleil42", "soleil42"),
    ("Mon mot de passe est chaton.", "chaton"),
    ("le mot de passe : Framboise", "Framboise"),
    ("Le mot de passe du wifi est « Soleil Levant »", "Soleil Levant"),
    ("mon mot de passe, c'est chaton", "chaton"),
    ("mot-de-passe=Tr0ub4dor", "Tr0ub4dor"),
    ("le mot de passe a été changé en Printemps24", "Printemps24"),
    ("mon code PIN est 4512", "4512"),
    ("le code de la porte est 1234B", "1234B"),
    # German
    ("mein Passwort ist Sonnenschein", "Sonnenschein"),
    ("das Kennwort lautet Hunter2", "Hunter2"),
    ("Das WLAN-Passwort ist sommerregen.", "sommerregen"),
    ("Das Passwort für den Router lautet „Kuchen“", "Kuchen"),
    ("Kennwort: Zebra-Streifen", "Zebra-Streifen"),
    ("Das Passwort wurde auf Sonne42 geändert", "Sonne42"),
    ("der Türcode ist 4711", "4711"),
    # Spanish
    ("mi contraseña es gatito99", "gatito99"),
    ("la contraseña: perro", "perro"),
    ("La contraseña del wifi es golondrina", "golondrina"),
    ("la clave del wifi es Casa2024", "Casa2024"),
    ("mi password es tortuga", "tortuga"),
    ("el código de acceso es 8812", "8812"),
    # Italian
    ("la mia password è pippo", "pippo"),
    ("la password del wifi è gattino", "gattino"),
    ("La password: girasole", "girasole"),
    ("la parola d'ordine è 'Colosseo'", "Colosseo"),
    ("il codice PIN è 3847", "3847"),
    # Portuguese
    ("a minha senha é batata", "batata"),
    ("a senha: abacaxi", "abacaxi"),
    ("a palavra-passe é girassol", "girassol"),
    ("A senha do wifi é Saudade2020", "Saudade2020"),
    ("o código do portão é 2468", "2468"),
]

ACCEPTED = [
    # French
    "mon mot de passe est trop court",
    "le mot de passe est incorrect, réessayez",
    "mon mot de passe est oublié depuis longtemps",
    "mon mot de passe est l'anniversaire de ma fille",
    "le mot de passe est dans le tiroir du bureau",
    "Mot de passe : à changer demain",
    "le mot de passe de mon compte a expiré et mon chat est malade",
    # German
    "Mein Passwort ist zu kurz",
    "Das Passwort ist falsch",
    "mein Passwort ist geheim, das sage ich nicht",
    "Ihr Passwort ist inaktiv.",
    "Das Passwort ist leider abgelaufen",
    "das Passwort war gestern noch gültig",
    "Der Passwortmanager ist praktisch",
    # Spanish
    "Mi contraseña es demasiado corta",
    "la contraseña es incorrecta",
    "mi contraseña es la misma de siempre",
    "La clave es practicar.",
    "La clave del éxito es la constancia",
    # Italian
    "la password è troppo corta",
    "la mia password è sbagliata",
    "la password è scaduta ieri",
    # Portuguese
    "A minha senha é muito fraca",
    "a senha é inválida",
    "a senha é a mesma de sempre",
    # English words that look like the verbs of other languages
    "the password era began with mainframes",
    "PIN: 4 digits required",
]


@pytest.mark.parametrize(("text", "value"), REFUSED)
def test_check_european_password_phrase_refused(screen: Screen, text: str, value: str) -> None:
    result = screen.check(text)
    assert result.refusal_code == "credential_refused", text
    assert result.text == ""
    assert any(text[f.start : f.end].strip("\"'«» .") == value for f in result.findings), [
        f.detector for f in result.findings
    ]


@pytest.mark.parametrize("text", ACCEPTED)
def test_check_european_password_prose_accepted(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.verdict is Verdict.ACCEPT, result.detector
    assert result.text == text
