"""Context compression: LlamaIndex's SentenceEmbeddingOptimizer, made safe for Chinese text and tiny passages."""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor import SentenceEmbeddingOptimizer
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.language import split_sentences


class SafeSentenceOptimizer(SentenceEmbeddingOptimizer):
    """Keeps the stock class's scoring, but a passage it would empty (the stock class raises ValueError) stays whole."""

    def __init__(self, embed_model: BaseEmbedding, percentile_cutoff: float) -> None:
        super().__init__(
            embed_model=embed_model,
            percentile_cutoff=percentile_cutoff,
            tokenizer_fn=split_sentences,
            context_before=0,
            context_after=0,
        )

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        for node in nodes:
            if len(split_sentences(node.node.get_content())) < 2:
                continue
            try:
                super()._postprocess_nodes([node], query_bundle)
            except ValueError:
                continue
        return nodes
