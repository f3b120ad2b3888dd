"""Credential detection for single texts of prose, chat or pasted config.

Two sources, both reporting `(detector, family, start, end)` and never the value:

- detect-secrets 1.5.0: its vendor plugins and its keyword plugin. Its high-entropy plugins are
  left out: on one line of prose they flag ordinary words ("tokens", dates). Our own gated
  entropy detector stands in for them.
- memvault's own detectors: published token formats of cloud and SaaS vendors, private-key
  blocks, JWTs, password hashes, URLs and connection strings with embedded passwords, keyword
  assignments (`password: ...`, `api_key = "..."`), natural-language passwords in English,
  Chinese, French, German, Spanish, Italian and Portuguese ("my password is ...", 密码是...,
  "mon mot de passe est ...", "das Kennwort lautet ..."), authorization headers, secret-bearing URL
  queries, and a bare AWS secret access key beside an access key id.

The scanner reads the screen's normalised text (NFKC, invisible characters removed) and joins
split keywords first ("pass word", "pass-word", "p a s s w o r d" read as "password"); finding
spans index the text it was given.

Every value a keyword-style detector captures goes through `is_placeholder`, so templates
(`<YOUR_API_KEY>`, `${TOKEN}`, `xxxx`, `env.PASSWORD`) pass. Nothing here logs or raises with a
matched value.

The detectors live in private modules below this one:

- `_secret_values`: families, placeholder values, token shapes (shared by all detectors);
- `_token_patterns`: the vendor and structure pattern table, and the AWS key pair;
- `_keywords`: keyword assignments and the joining of split keywords;
- `_nl_passwords`: natural-language passwords (English, European languages, Chinese);
- `_urls_headers`: URLs, netrc, authorization headers and CLI flags;
- `_entropy`: the gated entropy detector and the detect-secrets plugins.
"""

from __future__ import annotations

from memvault.screening._entropy import DetectSecretsPlugins, entropy_findings
from memvault.screening._indirect import (
    login_findings,
    next_sentence_findings,
    passphrase_findings,
    pin_findings,
)
from memvault.screening._joining import join_split_keywords
from memvault.screening._keywords import keyword_findings
from memvault.screening._model import Finding
from memvault.screening._nl_passwords import (
    context_findings,
    nl_password_eu_findings,
    nl_password_findings,
    zh_password_findings,
)
from memvault.screening._nl_world import world_password_findings
from memvault.screening._token_patterns import aws_pair_findings, token_pattern_findings
from memvault.screening._urls_headers import url_and_header_findings
from memvault.screening._views import View, views


class CredentialScanner:
    """Finds credentials in one text; built once, then called per write."""

    def __init__(self) -> None:
        self._detect_secrets = DetectSecretsPlugins()

    def findings(self, text: str) -> list[Finding]:
        """Every credential finding in `text`, in order of position (spans index `text`).

        The detectors read the text and its views (escapes decoded, look-alikes folded to
        their UTS #39 prototypes), each with split keywords and letter-spaced runs joined.
        """
        found: list[Finding] = []
        for view in views(text):
            found.extend(self._scan_view(view))
        unique = list(dict.fromkeys(found))
        unique.sort(key=lambda f: (f.start, -f.end))
        return unique

    def _scan_view(self, view: View) -> list[Finding]:
        joined, positions = join_split_keywords(view.text)
        found = self._scan(joined)
        mapped: list[Finding] = []
        for f in found:
            start, end = f.start, f.end
            if positions is not None and end > start:
                start, end = positions[start], positions[end - 1] + 1
            start, end = view.span(start, end)
            mapped.append(Finding(f.detector, f.family, start, end))
        return mapped

    def _scan(self, text: str) -> list[Finding]:
        found: list[Finding] = []
        found.extend(token_pattern_findings(text))
        found.extend(keyword_findings(text))
        found.extend(nl_password_findings(text))
        found.extend(nl_password_eu_findings(text))
        found.extend(zh_password_findings(text))
        found.extend(world_password_findings(text))
        found.extend(pin_findings(text))
        found.extend(login_findings(text))
        found.extend(passphrase_findings(text))
        found.extend(next_sentence_findings(text))
        found.extend(context_findings(text))
        found.extend(url_and_header_findings(text))
        found.extend(entropy_findings(text))
        found.extend(aws_pair_findings(text))
        found.extend(self._detect_secrets.findings(text))
        return found
