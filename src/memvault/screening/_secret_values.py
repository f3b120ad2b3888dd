"""What every credential detector shares: the families, placeholder values, token shapes.

A detector reports a `Finding` with one of the families below (the evaluation reports recall per
family). Every value a keyword-style detector captures goes through `is_placeholder`, so templates
(`<YOUR_API_KEY>`, `${TOKEN}`, `xxxx`, `env.PASSWORD`) pass.
"""

from __future__ import annotations

import math
import re
from collections import Counter

# ---------------------------------------------------------------------------------------------
# Families (the evaluation reports recall per family)
VENDOR = "vendor_token"
PRIVATE_KEY = "private_key"
JWT = "jwt"
PASSWORD_HASH = "password_hash"
URL_PASSWORD = "url_password"
PASSWORD = "password"
KEYWORD = "keyword_secret"
HEADER = "auth_header"
ENTROPY = "high_entropy"
DETECT_SECRETS = "detect_secrets"


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text`, as a set."""
    return frozenset(text.split())


_PLACEHOLDER_WORDS = words(
    """none null nil undefined true false empty blank required optional hidden na n/a todo tbd
    unknown string str value changeme change_me your yours example sample dummy placeholder
    redacted masked secret_here password_here xxx tba"""
)
_PLACEHOLDER_RE = re.compile(
    r"""^(?:
        [<\[{(%].*                    # <YOUR_KEY>, [key], {{key}}, (key), %KEY%
      | \$.* | @[A-Za-z_]\w* | &\w+;.* | \#\{.*  # $VAR, ${VAR}, @var, &lt;, #{ruby}
      | .*(?:your|example|placeholder|redacted|here>|_here|xxxx|\*\*\*|\.\.\.).*
      | [A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+(?:\(.*)?   # env.PASSWORD, request.form
      | [A-Za-z_]\w*\(.*              # getenv(...), Buffer.from(...)
      | (?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)  # SOME_ENV_NAME
    )$""",
    re.IGNORECASE | re.VERBOSE,
)


def is_placeholder(value: str) -> bool:
    """True for template values, variable references and code, which are not secrets."""
    value = value.strip().strip("\"'`“”‘’")
    if len(value) < 3:
        return True
    if value.lower() in _PLACEHOLDER_WORDS:
        return True
    if len(set(value)) <= 2:  # "********", "aaaaaaaa", "xxxxxx", "######"
        return True
    return bool(_PLACEHOLDER_RE.match(value))


def looks_made_up(value: str) -> bool:
    """True unless `value` reads as a plain word: it has a digit, a character other than a letter
    or a hyphen, or a capital after its first letter (a made-up password, not "sunshine")."""
    return (
        any(ch.isdigit() for ch in value)
        or not value.replace("-", "").isalpha()
        or value[1:] != value[1:].lower()
    )


def shannon(value: str) -> float:
    """The Shannon entropy of `value`, in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_like_token(value: str) -> bool:
    """A machine-made secret: long enough, no spaces, and not a plain word or number."""
    value = value.strip("\"'`")
    if len(value) < 8 or not value.isascii() or any(ch.isspace() for ch in value):
        return False
    has_alpha = any(ch.isalpha() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    if has_alpha and has_digit:
        return len(value) >= 10 or shannon(value) >= 2.8
    return len(value) >= 16 and shannon(value) >= 3.0


# the end of a clause after a lone word ("password: swordfish." / "... swordfish and ...")
CLAUSE_END = re.compile(r"\s*(?:$|[.,;:!?)\]]|\s(?:and|but|or|so)\b)")
