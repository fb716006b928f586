"""Ingest document sources: read, chunk, embed and upsert into Milvus, then cache samples and a description."""

from __future__ import annotations

from collections.abc import Callable

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

from engines.documents.metadata.fields import save_catalog
from engines.documents.store import IngestReport, ingest_documents, load_documents
from engines.settings import Settings
from engines.sources import DocumentsSource
from tools.descriptions import DescriptionCache, cache_documents_profile


def ingest_source(
    source: DocumentsSource,
    settings: Settings,
    embed: BaseEmbedding,
    llm: Callable[[], LLM],
    on_start: Callable[[int], None] = lambda total: None,
    on_batch: Callable[[int], None] = lambda done: None,
) -> IngestReport:
    """`llm` is a factory: the model is loaded only when a description has to be generated."""
    report = IngestReport(source.name)
    documents = load_documents(source, report)
    if not documents:
        report.skipped.append("no readable documents: nothing was changed")
        return report
    on_start(len(documents))
    report.chunks_added = ingest_documents(source, settings, embed, documents, on_batch)
    if report.catalog:
        save_catalog(settings.state_dir, report.catalog)
    cache_documents_profile(source, documents, llm, DescriptionCache(settings.state_dir / "descriptions.json"))
    return report
