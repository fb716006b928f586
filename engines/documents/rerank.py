"""Late-interaction reranking with LlamaIndex's ColbertRerank, on every core while it runs.

ColBERTv2 weights cannot be fetched offline, so `rerank_model: minilm` points it at the packaged MiniLM
(MaxSim over its token states); set RAGROUTER_RERANK_MODEL to a real ColBERT checkpoint folder to use one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.postprocessor.colbert_rerank import ColbertRerank

from engines.models.embeddings import minilm_path
from engines.settings import Settings


@contextmanager
def all_cores() -> Iterator[None]:
    """Torch on every core for one step: the process keeps one thread (OMP_NUM_THREADS=1, engines/__init__.py),
    right for embedding one short question, but a rerank scores 20 passages of 512 tokens, which two threads share."""
    before = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class ColbertRerankOnCores(ColbertRerank):
    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        with all_cores():
            return super()._postprocess_nodes(nodes, query_bundle)


def build_reranker(settings: Settings) -> ColbertRerank:
    model = str(minilm_path()) if settings.rerank_model == "minilm" else settings.rerank_model
    return ColbertRerankOnCores(top_n=settings.answer_top_n, model=model, tokenizer=model, device="cpu", keep_retrieval_score=True)
