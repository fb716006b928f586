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
