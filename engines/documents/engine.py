"""The documents path: hybrid retrieve -> (rerank) -> compress -> answer with numbered citations."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.base import BaseIndex
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.answers.citations import AnswerEngine
from engines.answers.prompts import CITATION_QA, CITATION_REFINE, fixed_parts
from engines.documents.compression import SafeSentenceOptimizer
from engines.documents.llm_compression import LLMExtract, LLMFilter
from engines.documents.llm_rerank import SafeLLMRerank
from engines.documents.scope.filter import ScopeFilter
from engines.documents.structured_rewrite import StructuredRewriteRetriever
from engines.models.llm import VARIABLE, pin_fixed_prefixes
from engines.settings import Settings

STAMPS = ("retrieved_rank", "retrieved_chars", "retrieved_text")


def uses_rerank(settings: Settings, language: str) -> bool:
    return settings.rerank in ("on", "llm") or (settings.rerank == "auto" and language == "en")


class RetrievalStamp(BaseNodePostprocessor):
    """Stamps each passage with its place in the retrieval order and its text, before rerank and compression,
    so the trace shows how rerank moved it and what compression cut (`retrieved_rank`, `retrieved_chars`,
    `retrieved_text`; hidden from the model and the embedder)."""

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        for rank, scored in enumerate(nodes, 1):
            node = scored.node
            text = node.get_content()
            node.metadata.update(retrieved_rank=rank, retrieved_chars=len(text), retrieved_text=text)
            for hidden in (node.excluded_llm_metadata_keys, node.excluded_embed_metadata_keys):
                hidden.extend(k for k in STAMPS if k not in hidden)
        return nodes


def _reranker(settings: Settings, llm: LLM) -> BaseNodePostprocessor:
    if settings.rerank == "llm":
        return SafeLLMRerank(llm=llm, top_n=settings.answer_top_n, choice_batch_size=settings.top_k)
    from engines.documents.rerank import build_reranker  # imports torch: only when a source reranks

    return build_reranker(settings)


def _postprocessors(settings: Settings, embed_model: BaseEmbedding, rerank: bool, llm: LLM) -> list[BaseNodePostprocessor]:
    steps: list[BaseNodePostprocessor] = [RetrievalStamp()]
    if settings.year_scope or settings.number_scope:
        steps.append(ScopeFilter(years=settings.year_scope, numbers=settings.number_scope))
    if rerank:
        steps.append(_reranker(settings, llm))
    if settings.compress == "embedding":
        steps.append(SafeSentenceOptimizer(embed_model, settings.compress_percentile_cutoff))
    elif settings.compress == "llm_extract":
        steps.append(LLMExtract(llm=llm))
    elif settings.compress == "llm_filter":
        steps.append(LLMFilter(llm=llm))
    return steps


def build_answer_engine(
    index: BaseIndex,
    retriever: BaseRetriever,
    settings: Settings,
    llm: LLM,
    embed_model: BaseEmbedding,
    rerank: bool,
    labels: Sequence[str] = (),
) -> AnswerEngine:
    """Whatever the retriever finds -> (rerank) -> compress -> an answer that cites its numbered sources, each
    labelled with its `labels` metadata (a title, a date)."""
    pin_fixed_prefixes(llm, fixed_parts(VARIABLE))
    return AnswerEngine.from_args(
        index,
        llm=llm,
        retriever=retriever,
        node_postprocessors=_postprocessors(settings, embed_model, rerank, llm),
        citation_chunk_size=settings.chunk_size * 2,
        citation_qa_template=CITATION_QA,
        citation_refine_template=CITATION_REFINE,
        labels=labels,
    )


def build_documents_engine(
    index: VectorStoreIndex, settings: Settings, llm: LLM, embed_model: BaseEmbedding, language: str, labels: Sequence[str] = ()
) -> AnswerEngine:
    """Hybrid retrieval over the source's collection, then the plain path's postprocessors and cited answer
    (tools/build.py wraps it in Corrective RAG when that is on)."""
    rerank = uses_rerank(settings, language)
    retrieve_k = settings.top_k if rerank else settings.answer_top_n
    retriever: BaseRetriever = index.as_retriever(similarity_top_k=retrieve_k, vector_store_query_mode="hybrid")
    if settings.rewrite == "structured":
        retriever = StructuredRewriteRetriever(retriever, llm, embed_model, retrieve_k)
    return build_answer_engine(index, retriever, settings, llm, embed_model, rerank, labels)
