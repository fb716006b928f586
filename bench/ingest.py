"""Ingest throughput on the first N SciFact abstracts: ours (chunks, e5 dense and sparse vectors, Milvus Lite with
BM25) against `VectorStoreIndex.from_documents` (dense only), and the physical limit: the embedding model alone
on the same chunks, in batches of the size ingest uses and of a few others."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from engines.settings import DATA_DIR

BATCHES = (4, 16, 64)


def _seconds(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _embedding_alone(embed: Any, texts: list[str], docs: int) -> dict:
    """The embedding model's own time on the chunks, per batch size: what no ingest can beat on this machine."""
    by_batch = {}
    for size in BATCHES:
        seconds = _seconds(lambda size=size: [embed._get_text_embeddings(texts[i : i + size]) for i in range(0, len(texts), size)])
        by_batch[str(size)] = round(docs / seconds, 2)
    return {"chunks": len(texts), "docs_per_s_by_batch": by_batch, "docs_per_s": max(by_batch.values())}


def ingest_throughput(router: Any, docs: int) -> dict:
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.vector_stores.milvus import MilvusVectorStore

    from engines.documents.store import IngestReport, ingest_documents, load_documents, splitter
    from engines.milvus import LITE_GRPC_OPTIONS
    from engines.models.embeddings import embedding_dim
    from engines.sources import load_sources

    scifact = next(s for s in load_sources(DATA_DIR / "eval-sources.yaml") if s.name == "scifact")
    documents = load_documents(scifact, IngestReport(scifact.name))[:docs]
    texts = [n.get_content() for n in splitter(router.settings).get_nodes_from_documents(documents)]
    with tempfile.TemporaryDirectory() as tmp:
        settings = router.settings.model_copy(update={"state_dir": Path(tmp), "milvus_uri": str(Path(tmp) / "ours.db")})
        ours = _seconds(lambda: ingest_documents(scifact, settings, router.embed, documents))
        # Milvus Lite answers idle keepalive pings with GOAWAY; a long run leaves the store idle for minutes.
        store = MilvusVectorStore(
            uri=str(Path(tmp) / "stock.db"), collection_name="stock", dim=embedding_dim(router.embed), overwrite=True, grpc_options=LITE_GRPC_OPTIONS
        )
        storage = StorageContext.from_defaults(vector_store=store)
        stock = _seconds(lambda: VectorStoreIndex.from_documents(documents, storage_context=storage, embed_model=router.embed))
    return {
        "documents": docs,
        "ragrouter": {"total_s": round(ours, 1), "docs_per_s": round(docs / ours, 2)},
        "stock": {"total_s": round(stock, 1), "docs_per_s": round(docs / stock, 2)},
        "embedding_alone": _embedding_alone(router.embed, texts, docs),
    }
