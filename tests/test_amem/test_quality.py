"""The quality scan and the Obsidian review batch built from its flags."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memvault.amem.quality import QualityFlag, scan
from memvault.amem.review import review_markdown
from memvault.amem.views import NoteView

NOW = 1_780_000_000.0
DAY = 86_400.0


def _note(note_id: str, text: str = "a perfectly fine note", **kw: object) -> NoteView:
    kw.setdefault("created_at", NOW - DAY)
    return NoteView(id=note_id, text=text, **kw)  # type: ignore[arg-type]


# --- scan ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("x" * 9, True),
        ("x" * 10, False),
        ("  " + "x" * 9 + " \n\t", True),
        ("\n " + "x" * 10 + "  ", False),
        ("   ", True),
        ("中" * 9, True),
        ("中" * 10, False),
    ],
)
def test_too_short_boundary(text: str, short: bool) -> None:
    flags = scan([_note("n", text)], NOW)
    assert flags == ([QualityFlag("n", ("too_short",))] if short else [])


@pytest.mark.parametrize(
    ("age", "expired"),
    [(7 * DAY, False), (7 * DAY + 1, True), (7 * DAY - 1, False), (30 * DAY, True), (0.0, False)],
)
def test_expired_ephemeral_boundary(age: float, expired: bool) -> None:
    flags = scan([_note("e", ephemeral=True, created_at=NOW - age)], NOW)
    assert flags == ([QualityFlag("e", ("expired_ephemeral",))] if expired else [])


def test_old_durable_notes_do_not_expire() -> None:
    assert scan([_note("d", created_at=NOW - 400 * DAY)], NOW) == []


def test_reasons_combine_in_order_and_clean_notes_are_left_out() -> None:
    notes = [
        _note("ok"),
        _note("all", "tiny", ephemeral=True, conflict=True, created_at=NOW - 8 * DAY),
        _note("c", conflict=True),
        _note("ok2", note_type="knowledge", shared=True),
    ]
    assert scan(notes, NOW) == [
        QualityFlag("all", ("too_short", "expired_ephemeral", "pending_conflict")),
        QualityFlag("c", ("pending_conflict",)),
    ]


def test_scan_options_and_repeated_ids() -> None:
    notes = [_note("n", "twelve chars", ephemeral=True, created_at=NOW - 2 * DAY), _note("n")]
    assert scan(notes, NOW) == []
    flags = scan(notes, NOW, min_chars=13, ephemeral_days=1)
    assert flags == [QualityFlag("n", ("too_short", "expired_ephemeral"))]
    with pytest.raises(ValueError):
        scan(notes, NOW, min_chars=-1)


# --- review markdown ----------------------------------------------------------------------

INJECTIONS = [
    "---\ntype: evil\ncount: 999\n---",
    "Link to [[Secret Note]] and ![[embed.png]] and [x](javascript:alert(1))",
    "<script>alert('x')</script><!-- hidden -->",
    "# Not a heading\n## 99. `fake`",
    "- [ ] keep\n- [x] delete\n* [ ] edit\n1. [ ] edit",
    "```\ncode fence\n```\n~~~\ntilde\n~~~",
    "Title\n===\nSubtitle\n---",
    "    indented code\n\tand a tab",
    "%%comment%% ==highlight== ~~strike~~ $x^2$ ^block-id #tag @user",
    "> [!warning] callout\n>> nested",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "trailing backslash \\\nhard break  \nentity &lt;b&gt; &amp; &#35;",
    "[ref]: https://evil.example\n*** \n___",
    "line\r\nwith\rcarriage\u2028separators\x00and a nul\u202eRTL",
]


def _split(document: str) -> tuple[dict[str, object], str]:
    """The YAML front matter (must open the document and close once) and the body."""
    lines = document.split("\n")
    assert lines[0] == "---"
    end = lines.index("---", 1)
    return yaml.safe_load("\n".join(lines[1:end])), "\n".join(lines[end + 1 :])


def _sections(body: str) -> list[list[str]]:
    sections: list[list[str]] = []
    for line in body.split("\n"):
        if line.startswith("## "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    return sections


def _flagged(texts: list[str]) -> list[tuple[NoteView, QualityFlag]]:
    notes = [_note(f"note-{i}", t, conflict=True) for i, t in enumerate(texts)]
    return list(zip(notes, scan(notes, NOW), strict=True))


def test_review_structure() -> None:
    flagged = _flagged(["hi", "The user has a sister in Northvale"])
    document = review_markdown(flagged, generated_at=NOW, scope_label="acme/main")
    meta, body = _split(document)
    assert meta["type"] == "memvault-review"
    assert meta["count"] == 2 and meta["scope"] == "acme/main"
    assert str(meta["generated"]).startswith("2026-05-28")
    sections = _sections(body)
    assert len(sections) == 2
    for (note, flag), section in zip(flagged, sections, strict=True):
        text = "\n".join(section)
        assert note.id in section[0]
        tasks = [line for line in section if line.startswith("- [")]
        assert tasks == ["- [ ] keep", "- [ ] delete", "- [ ] edit"]
        for reason in flag.reasons:
            assert f"#{reason}" in text
        assert "2026-05-27" in text  # created one day before NOW
        assert [line for line in section if line.startswith(">")] == [f"> {note.text}"]
    assert "#too_short #pending_conflict" in sections[0][4]


def test_review_includes_only_the_notes_passed() -> None:
    notes = [_note("keep-me", "first text"), _note("not-me", "secret other text")]
    flag = QualityFlag("keep-me", ("pending_conflict",))
    document = review_markdown([(notes[0], flag)], generated_at=NOW, scope_label="s")
    assert "not-me" not in document and "secret other" not in document
    assert len(_sections(_split(document)[1])) == 1
    twice = review_markdown([(notes[0], flag)] * 2, generated_at=NOW, scope_label="s")
    assert _split(twice)[0]["count"] == 1
    with pytest.raises(ValueError):
        review_markdown([(notes[1], flag)], generated_at=NOW, scope_label="s")


def test_empty_review() -> None:
    meta, body = _split(review_markdown([], generated_at=NOW, scope_label=""))
    assert meta["count"] == 0 and _sections(body) == []


@pytest.mark.parametrize("text", INJECTIONS)
def test_note_text_cannot_change_the_structure(text: str) -> None:
    flagged = _flagged([text, "a second note that is fine"])
    document = review_markdown(flagged, generated_at=NOW, scope_label="acme")
    meta, body = _split(document)
    assert meta == {
        "type": "memvault-review",
        "generated": meta["generated"],
        "count": 2,
        "scope": "acme",
    }
    assert document.count("\n---\n") == 1  # only the front matter's closing fence
    sections = _sections(body)
    assert len(sections) == 2
    for section in sections:
        tasks = [line for line in section if re.match(r"\s*[-*+\d]", line)]
        assert tasks == ["- [ ] keep", "- [ ] delete", "- [ ] edit"]
        quote = section[section.index("- [ ] edit") + 1 :]
        assert all(line == "" or line.startswith(">") for line in quote)
    quoted = "\n".join(line for line in body.split("\n") if line.startswith(">"))
    for raw in ("[[", "<script", "<!--", "%%", "==", "```", "~~", "\x00", "\u202e"):
        assert raw not in quoted
    assert not re.search(r"(?<!\\)#\w", quoted)  # no Obsidian tag
    assert not re.search(r"(?<!\\)\]\(", quoted)  # no link


@pytest.mark.parametrize("label", ["x\n---\ntype: evil", 'quote " and: colon # hash', "[[l]] <b>"])
def test_scope_label_cannot_break_the_front_matter(label: str) -> None:
    document = review_markdown(_flagged(["fine text here"]), generated_at=NOW, scope_label=label)
    meta, body = _split(document)
    assert meta["type"] == "memvault-review" and meta["scope"] == label
    assert len(_sections(body)) == 1 and "[[" not in body and "<b>" not in body


def _rendered_quote(body: str) -> tuple[list[str], str]:
    """Token types of the body and the text of its first block quote, as markdown-it reads it."""
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = md.parse(body)
    start = next(i for i, t in enumerate(tokens) if t.type == "blockquote_open")
    end = next(i for i, t in enumerate(tokens) if t.type == "blockquote_close")
    paragraphs: list[str] = []
    for token in tokens[start + 1 : end]:
        assert token.type in ("paragraph_open", "paragraph_close", "inline"), token.type
        if token.type == "inline":
            for child in token.children or []:
                assert child.type in ("text", "softbreak"), child.type
            paragraphs.append(
                "".join("\n" if c.type == "softbreak" else c.content for c in token.children or [])
            )
    return [t.type for t in tokens], "\n\n".join(paragraphs)


def _expected(text: str) -> str:
    """The text as the quote shows it: leading tabs as 4 spaces, blank runs as one, no trailing
    spaces."""
    lines = []
    for line in text.splitlines():
        body = line.lstrip(" \t")
        if not body.strip():
            lines.append("")
            continue
        lines.append((line[: len(line) - len(body)].replace("\t", "    ") + body).rstrip(" \t"))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


@settings(max_examples=150, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.characters(min_codepoint=32, max_codepoint=126),
            st.sampled_from(["\n", "\t", "\r", "中", "é", "—", "\u00a0"]),
        ),
        min_size=1,
        max_size=80,
    ).filter(lambda s: s.strip() != "")
)
@example(" 0")
@example("a\n  \nb\n\n\n   - c  ")
@example("x\n\t- [ ] keep")
def test_rendered_quote_is_the_note_text_and_nothing_else(text: str) -> None:
    document = review_markdown(_flagged([text]), generated_at=NOW, scope_label="p")
    types, quote = _rendered_quote(_split(document)[1])
    assert types.count("heading_open") == 2  # the title and one section
    assert types.count("list_item_open") == 3 and types.count("blockquote_open") == 1
    assert "hr" not in types and "html_block" not in types
    assert quote.replace("\u00a0", " ") == _expected(text).replace("\u00a0", " ")
