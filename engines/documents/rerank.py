"""Late-interaction reranking with LlamaIndex's ColbertRerank.

ColBERTv2 weights cannot be fetched offline, so `rerank_model: minilm` points it at the packaged MiniLM
(MaxSim over its token states); set RAGROUTER_RERANK_MODEL to a real ColBERT checkpoint folder to use one.
"""

from __future__ import annotations

from llama_index.postprocessor.colbert_rerank import ColbertRerank

from engines.models.embeddings import minilm_path
from engines.settings import Settings


def build_reranker(settings: Settings) -> ColbertRerank:
    model = str(minilm_path()) if settings.rerank_model == "minilm" else settings.rerank_model
    return ColbertRerank(top_n=settings.answer_top_n, model=model, tokenizer=model, device="cpu", keep_retrieval_score=True)
