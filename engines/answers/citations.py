"""The documents and web paths' answer engine: LlamaIndex's CitationQueryEngine with each stage a span (retrieve,
scope, rerank, compress, generate), its answer streamed to whoever listens (engines/answers/streaming.py) and
handed back with its passages (engines/answers/passages.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.indices.base import BaseIndex
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer, ResponseMode, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.answers.declines import nothing_found
from engines.answers.passages import passage, with_passages
from engines.answers.streaming import current, show_passages
from engines.tracing.recorder import span

# The stage each of our node postprocessors is (by LlamaIndex's class_name(); anything else: bookkeeping, counted
# with retrieval). LlamaIndex opens no span for a postprocessor.
POSTPROCESSOR_STAGES = {
    "ScopeFilter": "scope",
    "ColbertRerank": "rerank",
    "LLMRerank": "rerank",
    "SentenceEmbeddingOptimizer": "compress",
    "LLMExtract": "compress",
    "LLMFilter": "compress",
}


class AnswerEngine(CitationQueryEngine):
    """CitationQueryEngine with a span per stage; while an answer stream is open, it answers through a streaming
    twin of its synthesizer (same model, same prompts) and relays the tokens."""

    _streaming: BaseSynthesizer
    _labels: tuple[str, ...] = ()

    @classmethod
    def from_args(  # type: ignore[override]
        cls,
        index: BaseIndex,
        llm: LLM,
        citation_qa_template: BasePromptTemplate,
        citation_refine_template: BasePromptTemplate,
        labels: Sequence[str] = (),
        **kwargs: Any,
    ) -> AnswerEngine:
        """`labels`: metadata fields (a title, a date) each source is labelled with in the prompt."""
        engine = super().from_args(
            index, llm=llm, citation_qa_template=citation_qa_template, citation_refine_template=citation_refine_template, **kwargs
        )
        engine._labels = tuple(labels)
        engine._streaming = get_response_synthesizer(
            llm=llm,
            text_qa_template=citation_qa_template,
            refine_template=citation_refine_template,
            response_mode=ResponseMode.COMPACT,
            streaming=True,
        )
        return engine

    def retrieve(self, query_bundle: QueryBundle, retriever: BaseRetriever | None = None) -> list[NodeWithScore]:
        """The engine's retrieval and postprocessors; `retriever` replaces its own (Corrective RAG's fusion) when given."""
        with span("retrieve", query=query_bundle.query_str) as opened:
            nodes = (retriever or self._retriever).retrieve(query_bundle)
            opened.set(passages=len(nodes))
        for postprocessor in self._node_postprocessors:
            with span(POSTPROCESSOR_STAGES.get(postprocessor.class_name(), "retrieve"), postprocessor=postprocessor.class_name()) as opened:
                nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)
                opened.set(passages=len(nodes))
        return nodes

    def synthesize(
        self, query_bundle: QueryBundle, nodes: list[NodeWithScore], additional_source_nodes: Sequence[NodeWithScore] | None = None
    ) -> RESPONSE_TYPE:
        stream = current()
        show_passages([passage(n) for n in nodes])
        with span("generate", passages=len(nodes)):
            if stream is None:
                return super().synthesize(query_bundle, nodes, additional_source_nodes)
            streamed = self._streaming.synthesize(
                query=query_bundle, nodes=self._create_citation_nodes(nodes), additional_source_nodes=additional_source_nodes
            )
            text = stream.relay(streamed.response_gen)
        return Response(response=text, source_nodes=streamed.source_nodes, metadata=streamed.metadata)

    def _create_citation_nodes(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """The stock numbered sources, each labelled with its title and date where the collection has them
        (`Source 2 (Annual Leave Policy Update (2024), 2024-01-01):`): without them, a newer policy that a passage
        cut to its numbers no longer calls newer could not win over the older one, whatever the prompt says."""
        cited = super()._create_citation_nodes(nodes)
        for scored in cited:
            label = ", ".join(str(scored.node.metadata[k]) for k in self._labels if scored.node.metadata.get(k) not in (None, ""))
            if label:
                number, _, text = scored.node.get_content().partition(":")  # "Source 2", "\n<the passage>"
                scored.node.set_content(f"{number} ({label}):{text}")
        return cited

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        # The stock _query calls the synthesizer directly; answering through synthesize() times and streams it.
        nodes = self.retrieve(query_bundle)
        if not nodes:  # every passage was set aside (engines/documents/scope/years.py): the stock synthesizer would say "Empty Response"
            return with_passages(Response(response=nothing_found(query_bundle.query_str)))
        return with_passages(self.synthesize(query_bundle, nodes))
