import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from engines.documents.engine import uses_rerank
from engines.documents.rerank import build_reranker
from engines.settings import Settings


def test_auto_reranks_only_english_sources() -> None:
    auto = Settings()
    assert uses_rerank(auto, "en") and not uses_rerank(auto, "zh") and not uses_rerank(auto, "mixed")
    assert uses_rerank(Settings(rerank="on"), "zh") and not uses_rerank(Settings(rerank="off"), "en")


def test_colbert_rerank_with_the_packaged_model_puts_the_answer_first() -> None:
    texts = [
        "The cafeteria is on the third floor and opens at 11:30.",
        "Passwords must be at least 14 characters long.",
        "Employees may work remotely up to three days per week.",
    ]
    nodes = [NodeWithScore(node=TextNode(text=t), score=0.0) for t in texts]
    ranked = build_reranker(Settings(answer_top_n=2)).postprocess_nodes(nodes, QueryBundle("How many remote work days are allowed?"))
    assert len(ranked) == 2 and "remotely" in ranked[0].node.get_content()


LEAVE = [
    "The cafeteria is on the third floor and opens at 11:30.",
    "Passwords must be at least 14 characters long.",
    "Employees receive 28 days of paid annual leave per year.",
]


def _llm_ranked(reply: str) -> tuple[list[str], list[str]]:
    from engines.documents.llm_rerank import SafeLLMRerank
    from engines.tracing.recorder import recording
    from tests.engines.crag.test_crag import ScriptedReplies

    nodes = [NodeWithScore(node=TextNode(text=t), score=0.0) for t in LEAVE]
    with recording() as clock:
        ranked = SafeLLMRerank(llm=ScriptedReplies(answer=reply), top_n=2).postprocess_nodes(nodes, QueryBundle("How much annual leave?"))
    return [n.node.get_content() for n in ranked], clock.notes


def test_llm_rerank_puts_the_passages_the_model_lists_first() -> None:
    texts, notes = _llm_ranked("Doc: 3, Relevance: 9\nDoc: 1, Relevance: 2")
    assert texts == [LEAVE[2], LEAVE[0]] and notes == ["LLM rerank: the model kept 2 of 3 passages, best first"]


@pytest.mark.parametrize("reply", ["Employees get 28 days.", "", "Doc: seven, Relevance: high"])
def test_llm_rerank_keeps_the_retrieval_order_when_the_reply_ranks_nothing(reply: str) -> None:
    texts, notes = _llm_ranked(reply)
    assert texts == LEAVE[:2] and notes[0].startswith("LLM rerank:") and notes[0].endswith("the retrieval order stands")


def test_llm_rerank_with_the_real_model_answers_from_the_handbook(router) -> None:
    from tests.conftest import DEMO_SOURCES
    from tools.build import build_router

    settings = router.settings.model_copy(update={"rerank": "llm"})
    trace = build_router(settings, DEMO_SOURCES, llm=router.llm, embed=router.embed).ask("How many days of annual leave do employees get?")
    assert trace.route.chosen == "handbook" and "28" in trace.answer
    assert any(n.startswith("LLM rerank:") for n in trace.notes), trace.notes
