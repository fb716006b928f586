"""The structured rewrite's guards, with the model's reply written by ScriptedText (a scripted LLM double) and a
real embedding model over an in-memory index."""

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import QueryBundle, TextNode

from engines.documents.structured_rewrite import StructuredRewriteRetriever, parse_structured
from engines.tracing.recorder import recording
from tests.scripted_llm import ScriptedText

TEXTS = [
    "Employees receive 28 days of paid annual leave per year.",
    "Passwords must be at least 14 characters long and changed every 90 days.",
    "The cafeteria on the third floor opens at 11:30.",
]


@pytest.fixture(scope="module")
def index(embed) -> VectorStoreIndex:
    return VectorStoreIndex([TextNode(text=t) for t in TEXTS], embed_model=embed)


def _retrieve(index: VectorStoreIndex, embed, reply: str, question: str, fused: int = 1) -> tuple[list[str], list[str]]:
    retriever = StructuredRewriteRetriever(index.as_retriever(similarity_top_k=1), ScriptedText(reply=reply), embed, fused)
    with recording() as clock:
        nodes = retriever.retrieve(QueryBundle(question))
    return [n.node.get_content() for n in nodes], clock.notes


def test_a_rewrite_with_keywords_and_sub_questions_is_searched_and_shown(index, embed) -> None:
    reply = '{"rewritten_query": "annual paid leave days per year", "keywords": ["annual leave"], "sub_questions": ["password length rules"]}'
    found, notes = _retrieve(index, embed, reply, "how many days off do I get every year and what about passwords", fused=2)
    assert TEXTS[0] in found and TEXTS[1] in found  # the sub-question's passage is fused in
    assert any("rewritten 'annual paid leave days per year', keywords ['annual leave'], sub-questions ['password length rules']" in n for n in notes)


@pytest.mark.parametrize(
    ("reply", "question", "why"),
    [
        ('{"rewritten_query": "x"}', "leave days?", "the question is short"),
        ('{"rewritten_query": "x"}', "年假多少天", "the question is short"),
        ("Annual leave is 28 days.", "how many days of annual leave do I get", "could not be used (no JSON"),
        ('{"keywords": ["leave"]}', "how many days of annual leave do I get", "could not be used (malformed JSON"),
        (
            '{"rewritten_query": "cafeteria opening hours", "keywords": [], "sub_questions": []}',
            "how many days of annual leave do I get",
            "the question's results stand",
        ),
    ],
)
def test_every_guard_falls_back_to_the_question_as_asked(index, embed, reply: str, question: str, why: str) -> None:
    found, notes = _retrieve(index, embed, reply, question)
    assert found == [TEXTS[0]] if "leave" in question else len(found) == 1
    assert any(why in n for n in notes)


def test_sub_questions_are_capped() -> None:
    assert len(parse_structured('{"rewritten_query": "q", "sub_questions": ["a", "b", "c", "d"]}').sub_questions) == 3
