from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from engines.documents.compression import SafeSentenceOptimizer
from engines.language import split_sentences


def test_splits_chinese_and_english_sentences() -> None:
    assert split_sentences("国内餐补为300元。境外为450元！Hotels cost 150 EUR. Flights are economy.") == [
        "国内餐补为300元。",
        "境外为450元！",
        "Hotels cost 150 EUR.",
        "Flights are economy.",
    ]


def test_keeps_the_most_relevant_half_and_never_empties_a_passage(embed) -> None:
    text = "国内出差每日餐补为 300 元。食堂位于三楼。试用期为三个月。境外出差每日餐补为 450 元。"
    nodes = [NodeWithScore(node=TextNode(text=text), score=1.0), NodeWithScore(node=TextNode(text="只有一句。"), score=0.5)]
    optimizer = SafeSentenceOptimizer(embed, percentile_cutoff=0.5)
    out = optimizer.postprocess_nodes(nodes, QueryBundle("出差餐补是多少？"))
    kept = out[0].node.get_content()
    assert "餐补" in kept and len(kept) < len(text)
    assert out[1].node.get_content() == "只有一句。"  # a one-sentence passage stays whole instead of raising
