"""Listwise rerank by the answering model: LlamaIndex's LLMRerank (`RAGROUTER_RERANK=llm`), failing safe.

The model reads the retrieved passages in one call and lists the ones that answer the question with a relevance
from 1 to 10 ("Doc: 3, Relevance: 8"); the listed ones come first, best first, and the unlisted are dropped. A
reply that names no passage (the small model sometimes answers the question instead) would leave the answer
with nothing to read: then the retrieval order stands, and the trace says so.
"""

from __future__ import annotations

from llama_index.core.postprocessor import LLMRerank
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.tracing.recorder import note


class SafeLLMRerank(LLMRerank):
    """LLMRerank that keeps the retrieval order (and says so in the trace) when the model's reply ranks nothing."""

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        try:
            ranked = super()._postprocess_nodes(nodes, query_bundle)
        except (ValueError, IndexError) as err:  # a reply the stock parser cannot read
            ranked, why = [], f"its reply could not be read ({err})"
        else:
            why = "its reply named no passage"
        if ranked or not nodes:
            note(f"LLM rerank: the model kept {len(ranked)} of {len(nodes)} passages, best first")
            return ranked
        note(f"LLM rerank: {why}; the retrieval order stands")
        return nodes[: self.top_n]
