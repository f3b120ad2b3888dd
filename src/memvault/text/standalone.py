"""Does a note stand alone, or is it a reply that needs the note before it?

Context-keyed indexing (`memvault.vault.sessions`) indexes a note of a session together with its
predecessor, because a dialogue reply ("Yes, she loved it!") says little without the turn
before it. A note that states a fact about a named subject in full ("Carol's favourite colour
is yellow") needs nothing before it, and borrowing its predecessor's words would make it match
questions about the predecessor's subject instead.

`stands_alone` is the gate. It reads the text a client sends, nothing else: a note stands alone
when, after an optional `Name:` speaker prefix, it

- opens with a name: a capitalised word that is not a function word, a pronoun or a reaction
  ("Bob's ...", "Carol drives ...", "User prefers ..."),
- is a statement of at least `MIN_WORDS` words, with no question or exclamation mark,
- speaks of no first or second person ("I", "my", "you", "we"), which belong to a dialogue,

and its predecessor does not ask a question (an answer needs its question). Everything else,
including text that is mostly Han script, is a reply as before: the gate only ever takes context
away from notes that carry their own.

The predecessor's name does not matter: "Bob drives a Volvo" after "Bob's favourite colour is
green" stands alone too. Borrowing within one subject was measured and made the temporal suite
worse (docs/retrieval.md, "Limits"). Capitalisation is all the gate knows of a name, so a
statement opening with any capitalised noun ("Deployment failed on Tuesday") stands alone.
"""

from __future__ import annotations

import re

MIN_WORDS = 4
"""The fewest words a stand-alone statement has ("Bob drives a Volvo")."""

_SPEAKER = re.compile(r"\s*[A-Z][\w'.\-]*(?: [A-Z][\w'.\-]*){0,2}\s*:\s")
_WORD = re.compile(r"[^\W\d_](?:[\w'\u2019\-]*\w)?")

_PERSONAL_WORDS = """i i'm i've i'll i'd me my mine myself we we're we've we'll we'd us our
    ours ourselves you you're you've you'll you'd your yours yourself yourselves u ur ya y'all"""
_PERSONAL = frozenset(_PERSONAL_WORDS.split())
"""First and second person: a note that speaks them belongs to a dialogue."""

_OPENERS = """a an the this that these those it its he she they his her their there here then
    and but or so yes yeah yep no nope nah ok okay sure well oh ah wow hey hi hello thanks
    thank haha lol omg aw aww hmm um true right exactly absolutely definitely totally indeed
    also same great awesome nice cool good glad lovely amazing wonderful interesting sounds
    congrats congratulations sorry what when where who whom whose why how which did do does
    is are was were can could would should will if as at in on of for to from with by about
    after before just maybe perhaps not all some any every each both one"""
_NOT_A_NAME = frozenset(_OPENERS.split())
"""Capitalised openers that are not a subject's name (sentence-initial function words,
pronouns and reactions)."""


def _words(text: str) -> list[str]:
    return [w.replace("\u2019", "'") for w in _WORD.findall(text)]


def _is_han(text: str) -> bool:
    han = letters = 0
    for ch in text[:2_000]:
        if ch.isalpha():
            letters += 1
            han += "\u3400" <= ch <= "\u9fff"
    return letters > 0 and han * 2 >= letters


def asks(text: str) -> bool:
    """True when the text asks a question."""
    return "?" in text or "\uff1f" in text


def _body(text: str) -> str:
    """The text after an optional `Name:` speaker prefix."""
    match = _SPEAKER.match(text[:60])
    return text[match.end() :] if match else text


def stands_alone(text: str, predecessor: str = "") -> bool:
    """True when `text` carries its own context (a statement about a subject it names), so it
    is indexed without `predecessor`'s words; False for a reply (see the module docstring)."""
    if predecessor and asks(predecessor):
        return False
    body = _body(text)
    if asks(body) or "!" in body or "\uff01" in body or _is_han(body):
        return False
    words = _words(body)
    if len(words) < MIN_WORDS or any(word.casefold() in _PERSONAL for word in words):
        return False
    name = words[0].split("'", 1)[0]  # "Bob's" names Bob
    # The name comes first, so a pronoun after it ("she", "it") may point at it.
    return name[:1].isupper() and name.casefold() not in _NOT_A_NAME
