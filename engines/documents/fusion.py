"""Several queries retrieved with one retriever and fused by reciprocal rank: the plain path's structured rewrite
(its sub-questions) and Corrective RAG's multi-query rewrite both use it."""

from __future__ import annotations

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import LLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import QueryBundle


class FusedRetriever(QueryFusionRetriever):
    """LlamaIndex's QueryFusionRetriever with the extra queries given, not generated: the question and each
    extra query are retrieved and the lists fused by reciprocal rank (k = 60). The caller writes the extra queries
    beforehand, so the trace shows them, and drops the list marks the small model adds, which its parser keeps."""

    def __init__(self, retriever: BaseRetriever, extra: list[QueryBundle], similarity_top_k: int, llm: LLM) -> None:
        # `llm` writes nothing here; without one, the parent class resolves LlamaIndex's default (OpenAI) LLM.
        super().__init__(
            [retriever], llm=llm, mode=FUSION_MODES.RECIPROCAL_RANK, similarity_top_k=similarity_top_k, num_queries=len(extra) + 1, use_async=False
        )
        self._extra = extra

    def _get_queries(self, original_query: str) -> list[QueryBundle]:
        return self._extra


def fusing(retriever: BaseRetriever, queries: list[QueryBundle], similarity_top_k: int, llm: LLM) -> BaseRetriever:
    """The retriever to ask with queries[0]: `retriever` itself for one query, a FusedRetriever over it for more."""
    return FusedRetriever(retriever, queries[1:], similarity_top_k, llm) if len(queries) > 1 else retriever
