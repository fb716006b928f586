"""Late-interaction reranking with LlamaIndex's ColbertRerank, on every core while it runs (20 passages of up
to 512 tokens share out well: 0.59x the time of one thread, bench/rerank_cores.py).

ColBERTv2 weights cannot be fetched offline, so `rerank_model: minilm` points it at the packaged MiniLM
(MaxSim over its token states); set RAGROUTER_RERANK_MODEL to a real ColBERT checkpoint folder to use one.
"""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.postprocessor.colbert_rerank import ColbertRerank

from engines.models.cores import all_cores
from engines.models.embeddings import minilm_path
from engines.settings import Settings


class ColbertRerankOnCores(ColbertRerank):
    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        with all_cores():
            return super()._postprocess_nodes(nodes, query_bundle)


def build_reranker(settings: Settings) -> ColbertRerank:
    model = str(minilm_path()) if settings.rerank_model == "minilm" else settings.rerank_model
    return ColbertRerankOnCores(top_n=settings.answer_top_n, model=model, tokenizer=model, device="cpu", keep_retrieval_score=True)
