"""The documents path: hybrid retrieve -> (rerank) -> compress -> answer with numbered citations."""

from __future__ import annotations

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CitationQueryEngine

from engines.compression import SafeSentenceOptimizer
from engines.prompts import CITATION_QA, CITATION_REFINE
from engines.settings import Settings

def _postprocessors(settings: Settings, embed_model: BaseEmbedding) -> list[BaseNodePostprocessor]:
    steps: list[BaseNodePostprocessor] = []
    if settings.rerank:
        from engines.rerank import build_reranker

        steps.append(build_reranker(settings))
    if settings.compress:
        steps.append(SafeSentenceOptimizer(embed_model, settings.compress_percentile_cutoff))
    return steps


def build_documents_engine(index: VectorStoreIndex, settings: Settings, llm: LLM, embed_model: BaseEmbedding) -> CitationQueryEngine:
    retrieve_k = settings.top_k if settings.rerank else settings.answer_top_n
    retriever = index.as_retriever(similarity_top_k=retrieve_k, vector_store_query_mode="hybrid")
    return CitationQueryEngine.from_args(
        index,
        llm=llm,
        retriever=retriever,
        node_postprocessors=_postprocessors(settings, embed_model),
        citation_chunk_size=settings.chunk_size * 2,
        citation_qa_template=CITATION_QA,
        citation_refine_template=CITATION_REFINE,
    )
