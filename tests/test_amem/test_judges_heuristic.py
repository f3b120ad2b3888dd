"""HeuristicJudge: openclaw-amem's four evolution examples, construction, links, dialogue gate."""

from __future__ import annotations

import pytest

from memvault.amem.heuristic import HeuristicJudge
from memvault.amem.judge import Judge
from memvault.amem.views import CATEGORIES, Candidate

OPENCLAW_EXAMPLES = [
    ("The user wants to buy a Model 3", "The user decided on the standard RWD Model 3", "EVOLVE"),
    ("The user lives in Riverstone", "The user moved to Eastholm", "CONFLICT"),
    ("The user has a sister", "The user's sister works in finance in Northvale", "EXPAND"),
    ("The user has a sister", "The project deadline is Friday", "NEW"),
]

CHINESE_EXAMPLES = [
    ("用户想买一辆特斯拉", "用户决定买标准版特斯拉", "EVOLVE"),
    ("用户住在北京", "用户搬到了上海", "CONFLICT"),
    ("用户有一个妹妹", "用户的妹妹在北谷从事金融工作", "EXPAND"),
    ("用户有一个妹妹", "项目截止日期是周五", "NEW"),
]


def _old(text: str, number: int = 1, similarity: float = 0.8) -> Candidate:
    return Candidate(number=number, text=text, similarity=similarity)


@pytest.fixture(scope="module")
def judge() -> HeuristicJudge:
    return HeuristicJudge()


def test_heuristic_judge_satisfies_protocol(judge: HeuristicJudge) -> None:
    assert isinstance(judge, Judge)
    assert judge.name == "heuristic"


@pytest.mark.parametrize(("old", "new", "action"), OPENCLAW_EXAMPLES)
def test_evolve_openclaw_examples_expected_action(
    judge: HeuristicJudge, old: str, new: str, action: str
) -> None:
    assert judge.evolve(new, _old(old)).action == action


@pytest.mark.parametrize(("old", "new", "action"), CHINESE_EXAMPLES)
def test_evolve_chinese_examples_expected_action(
    judge: HeuristicJudge, old: str, new: str, action: str
) -> None:
    assert judge.evolve(new, _old(old)).action == action


def test_evolve_merged_text_only_for_evolve_and_expand(judge: HeuristicJudge) -> None:
    results = {a: judge.evolve(new, _old(old)) for old, new, a in OPENCLAW_EXAMPLES}
    assert results["EVOLVE"].merged_text == "The user decided on the standard RWD Model 3"
    assert results["EXPAND"].merged_text is not None
    assert "sister" in results["EXPAND"].merged_text
    assert "Northvale" in results["EXPAND"].merged_text
    assert results["CONFLICT"].merged_text is None
    assert results["NEW"].merged_text is None


def test_evolve_expand_keeps_old_detail_not_repeated(judge: HeuristicJudge) -> None:
    result = judge.evolve(
        "The user's sister works in finance", _old("The user has a sister named Ann")
    )
    assert result.action == "EXPAND"
    assert result.merged_text is not None
    assert "Ann" in result.merged_text and "finance" in result.merged_text


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user's budget is 500 dollars", "The user's budget is 800 dollars"),
        ("The team meeting is on Monday", "The team meeting is on Friday"),
        ("The user has a cat", "The user does not have a cat"),
    ],
)
def test_evolve_changed_number_date_or_negation_conflict(
    judge: HeuristicJudge, old: str, new: str
) -> None:
    assert judge.evolve(new, _old(old)).action == "CONFLICT"


def test_evolve_plan_then_move_to_same_place_evolve(judge: HeuristicJudge) -> None:
    result = judge.evolve("The user moved to Eastholm", _old("The user plans to move to Eastholm"))
    assert result.action == "EVOLVE"


def test_evolve_is_deterministic(judge: HeuristicJudge) -> None:
    old, new, _ = OPENCLAW_EXAMPLES[2]
    assert {judge.evolve(new, _old(old)) for _ in range(5)} == {judge.evolve(new, _old(old))}


@pytest.mark.parametrize(
    "text",
    [
        "The user wants to buy a Model 3",
        "TypeScript always uses structural typing for interfaces",
        "Qdrant is a vector database written in Rust",
        "Yesterday I met Dana at the cafe",
        "用户住在北京",
        "Python的GIL规则：同一时刻只有一个线程执行字节码",
        "ok",
    ],
)
def test_construct_outputs_valid_fields(judge: HeuristicJudge, text: str) -> None:
    c = judge.construct(text)
    assert c.category in CATEGORIES
    assert c.note_type in ("memory", "knowledge")
    assert len(c.keywords) <= 8 and len(c.tags) <= 5
    assert c.context
    if c.note_type == "knowledge":
        assert 1 <= len(c.topics) <= 5
    else:
        assert c.topics == ()


@pytest.mark.parametrize(
    ("text", "note_type"),
    [
        ("TypeScript always uses structural typing for interfaces", "knowledge"),
        ("Qdrant is a vector database written in Rust", "knowledge"),
        ("Rule: never deploy on Fridays", "knowledge"),
        ("Yesterday I met Dana at the cafe", "memory"),
        ("The user moved to Eastholm last week", "memory"),
        ("我昨天去了上海", "memory"),
    ],
)
def test_construct_note_type_by_cues(judge: HeuristicJudge, text: str, note_type: str) -> None:
    assert judge.construct(text).note_type == note_type


def test_construct_knowledge_topics_keep_spelling(judge: HeuristicJudge) -> None:
    c = judge.construct("TypeScript always uses structural typing for interfaces")
    assert c.topics[0] == "TypeScript"
    assert c.category == "Technical"


def test_construct_category_by_lexicon(judge: HeuristicJudge) -> None:
    assert judge.construct("The project deadline is Friday").category == "Project"
    assert judge.construct("The user's sister lives in Northvale").category == "Personal"
    assert judge.construct("Lorem ipsum dolor sit amet").category == "General"


def test_construct_keywords_skip_owner_and_grammar(judge: HeuristicJudge) -> None:
    keywords = judge.construct("The user wants to buy a Model 3").keywords
    assert "model" in keywords
    assert "user" not in keywords and "wants" not in keywords


def test_construct_document_frequency_ranks_rare_terms_first(judge: HeuristicJudge) -> None:
    text = "database migration finished for orders"
    plain = judge.construct(text).keywords
    assert plain[0] == "database"
    common = {"databas": 0.9, "migrat": 0.9, "finish": 0.9, "order": 0.01}
    ranked = judge.construct(text, document_frequency=lambda t: common.get(t, 0.5)).keywords
    assert ranked[0] == "orders"


def test_construct_context_is_first_clause_truncated(judge: HeuristicJudge) -> None:
    long = "word " * 100 + ". Second sentence here."
    context = judge.construct(long).context
    assert len(context) <= 121 and context.endswith("…")
    assert judge.construct("First part. Second part.").context == "First part."


def test_verify_links_related_only(judge: HeuristicJudge) -> None:
    candidates = [
        Candidate(1, "The user's sister works in finance", 0.5),
        Candidate(2, "The project deadline is Friday", 0.2),
        Candidate(3, "The user lives in Riverstone", 0.4),
    ]
    verdicts = judge.verify_links("The user's sister lives in Northvale", candidates)
    numbers = {v.number for v in verdicts}
    assert 1 in numbers and 2 not in numbers
    assert all(0.0 <= v.strength <= 1.0 for v in verdicts)


def test_verify_links_high_similarity_alone_links(judge: HeuristicJudge) -> None:
    verdicts = judge.verify_links("用户住在北京", [Candidate(1, "The user lives in Beijing", 0.9)])
    assert [v.number for v in verdicts] == [1]


def test_evolve_neighbour_propagates_tags_or_none(judge: HeuristicJudge) -> None:
    neighbour = Candidate(1, "The user has a sister", 0.6, context=None, tags=("family",))
    update = judge.evolve_neighbour("The user's sister works in finance in Northvale", neighbour)
    assert update is not None
    assert "finance" in update.tags and update.tags[0] == "family"
    assert len(update.tags) <= 5 and update.context
    unrelated = judge.evolve_neighbour("The project deadline is Friday", neighbour)
    assert unrelated is None


def test_extract_facts_drops_tool_output_questions_and_chatter(judge: HeuristicJudge) -> None:
    messages = [
        ("system", "You are a helpful assistant with long memory."),
        ("user", "Hi there! I moved to Eastholm last month. Can you find a gym near me?"),
        ("tool", "SECRET_TOOL_RESULT: gym list with 14 entries from the maps service"),
        ("assistant", "Sure! The closest gym to Eastholm station is Iron Temple. Anything else?"),
        ("user", "Thanks. My sister works in finance in Northvale."),
        ("user", "I moved to Eastholm last month."),
    ]
    facts = judge.extract_facts(messages)
    assert facts == [
        "I moved to Eastholm last month.",
        "The closest gym to Eastholm station is Iron Temple.",
        "My sister works in finance in Northvale.",
    ]
    joined = " ".join(facts)
    assert "SECRET_TOOL_RESULT" not in joined and "helpful assistant" not in joined


def test_extract_facts_chinese_questions_dropped(judge: HeuristicJudge) -> None:
    facts = judge.extract_facts([("user", "你好！我住在北京朝阳区。你知道附近有什么餐厅吗？")])
    assert facts == ["我住在北京朝阳区。"]


def test_decide_fact_duplicate_none(judge: HeuristicJudge) -> None:
    candidates = [
        Candidate(1, "The project deadline is Friday", 0.3),
        Candidate(2, "The user lives in Riverstone", 0.9),
    ]
    decision = judge.decide_fact("User lives in Riverstone.", candidates)
    assert (decision.action, decision.number) == ("NONE", 2)


def test_decide_fact_no_longer_delete(judge: HeuristicJudge) -> None:
    candidates = [Candidate(1, "The user owns a dog named Rex", 0.8)]
    decision = judge.decide_fact("The user no longer owns a dog", candidates)
    assert (decision.action, decision.number) == ("DELETE", 1)


def test_decide_fact_changed_detail_update(judge: HeuristicJudge) -> None:
    candidates = [
        Candidate(1, "The user has a sister", 0.5),
        Candidate(2, "The user lives in Riverstone", 0.7),
    ]
    decision = judge.decide_fact("The user moved to Eastholm", candidates)
    assert (decision.action, decision.number, decision.text) == (
        "UPDATE",
        2,
        "The user moved to Eastholm",
    )


def test_decide_fact_added_detail_update_merges(judge: HeuristicJudge) -> None:
    decision = judge.decide_fact(
        "The user's sister works in finance", [Candidate(1, "The user has a sister named Ann", 0.7)]
    )
    assert decision.action == "UPDATE" and decision.number == 1
    assert decision.text is not None and "Ann" in decision.text and "finance" in decision.text


def test_decide_fact_unrelated_new(judge: HeuristicJudge) -> None:
    decision = judge.decide_fact(
        "The project deadline is Friday", [Candidate(1, "The user has a sister", 0.2)]
    )
    assert (decision.action, decision.number, decision.text) == (
        "NEW",
        None,
        "The project deadline is Friday",
    )
