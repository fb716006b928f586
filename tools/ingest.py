"""Ingest document sources: read, chunk, embed and upsert into Milvus, then cache samples and a description."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

from engines.documents.metadata.fields import save_catalog
from engines.documents.store import IngestReport, ingest_documents, load_documents
from engines.settings import Settings
from engines.sources import DocumentsSource
from tools.descriptions import DescriptionCache, cache_documents_profile


@dataclass
class IngestProgress:
    """How far an ingest of one source is: documents and their characters done of the total, chunks embedded, and
    at what pace."""

    source: str
    total: int = 0
    total_characters: int = 0
    documents: int = 0
    characters: int = 0
    chunks: int = 0
    started: float = field(default_factory=time.monotonic)

    def advance(self, documents: list[Document], chunks: int) -> None:
        self.documents += len(documents)
        self.characters += sum(len(d.text) for d in documents)
        self.chunks += chunks

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / max(time.monotonic() - self.started, 1e-9)

    @property
    def left_s(self) -> float | None:
        """Time left at the pace so far, by characters: a long document takes longer than a short one (None before
        the first batch)."""
        if not self.characters:
            return None
        return (self.total_characters - self.characters) * (time.monotonic() - self.started) / self.characters

    def line(self) -> str:
        left = f", about {_duration(self.left_s)} left" if self.left_s is not None else ""
        return f"{self.source}: {self.documents:,} of {self.total:,} documents, {self.chunks:,} chunks ({self.chunks_per_s:.1f}/s){left}"


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def ingest_source(
    source: DocumentsSource,
    settings: Settings,
    embed: BaseEmbedding,
    llm: Callable[[], LLM],
    on_progress: Callable[[IngestProgress], None] = lambda progress: None,
) -> IngestReport:
    """`llm` is a factory: the model is loaded only when a description has to be generated. `on_progress` hears
    the documents' count once read, then after every batch embedded."""
    report = IngestReport(source.name)
    documents = load_documents(source, report)
    if not documents:
        report.skipped.append("no readable documents: nothing was changed")
        return report
    progress = IngestProgress(source.name, total=len(documents), total_characters=sum(len(d.text) for d in documents))
    on_progress(progress)

    def batch_done(batch: list[Document], chunks: int) -> None:
        progress.advance(batch, chunks)
        on_progress(progress)

    report.chunks_added = ingest_documents(source, settings, embed, documents, batch_done)
    if report.catalog:
        save_catalog(settings.state_dir, report.catalog)
    cache_documents_profile(source, documents, llm, DescriptionCache(settings.state_dir / "descriptions.json"))
    return report
