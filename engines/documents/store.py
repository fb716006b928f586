"""Document collections in Milvus: one collection per source, hybrid (dense + built-in BM25) search, idempotent ingest."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from llama_index.core import Document, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.vector_stores.milvus import MilvusVectorStore

from engines.documents.metadata.attach import attach_metadata
from engines.documents.metadata.fields import Catalog
from engines.matching.coverage_probe import forget_probe_copy
from engines.milvus import open_vector_store
from engines.models.embeddings import embedding_dim
from engines.settings import Settings
from engines.sources import DocumentsSource

log = logging.getLogger(__name__)

FILE_TYPES = {".txt", ".md", ".pdf", ".docx", ".html", ".htm", ".csv", ".json"}
TEXT_TYPES = {".txt", ".md", ".html", ".htm", ".csv", ".json"}
INGEST_BATCH = 32


@dataclass
class IngestReport:
    source: str
    documents: int = 0
    chunks_added: int = 0
    skipped: list[str] = field(default_factory=list)
    catalog: Catalog | None = None  # the declared metadata fields, summarised


def _is_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\x00" in handle.read(8192)


def read_file(path: Path) -> list[Document]:
    if path.suffix.lower() in TEXT_TYPES and _is_binary(path):
        raise ValueError("binary content in a text file")
    docs = SimpleDirectoryReader(input_files=[str(path)], filename_as_id=True, raise_on_error=True).load_data()
    if not any(d.text.strip() for d in docs):
        raise ValueError("no text could be extracted")
    return docs


def _load_files(root: Path, report: IngestReport) -> list[Document]:
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    documents: list[Document] = []
    for path in paths:
        if path.suffix.lower() not in FILE_TYPES:
            report.skipped.append(f"{path.name}: unsupported file type")
            continue
        try:
            documents.extend(read_file(path))
        except Exception as err:  # one unreadable or corrupt file must not stop the rest
            cause = f" ({err.__cause__})" if err.__cause__ else ""
            report.skipped.append(f"{path.name}: {err}{cause}")
    return documents


def _load_jsonl(source: DocumentsSource) -> list[Document]:
    docs = []
    with source.path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                text = "\n".join(str(record[f]) for f in source.text_fields if record.get(f))
                ident = str(record[source.id_field])
                declared = {name: record.get(name) for name in source.metadata_names()}
                docs.append(Document(id_=ident, text=text, metadata={**declared, "doc_id": ident}))
    return docs


def _load_squad(source: DocumentsSource) -> list[Document]:
    data = json.loads(source.path.read_text(encoding="utf-8"))["data"]
    docs = []
    for article in data:
        for paragraph in article["paragraphs"]:
            pid = str(paragraph.get("id") or f"{article.get('title', '')}-{len(docs)}")
            docs.append(Document(id_=pid, text=paragraph["context"], metadata={"doc_id": pid, "title": article.get("title", "")}))
    return docs


def passage_id(text: str) -> str:
    """A stable id for a passage that has none (RGB's passages are bare strings shared across questions)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _load_rgb(source: DocumentsSource) -> list[Document]:
    passages: dict[str, str] = {}
    with source.path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                for text in record["positive"] + record["negative"]:
                    passages.setdefault(passage_id(text), text)
    return [Document(id_=pid, text=text, metadata={"doc_id": pid}) for pid, text in passages.items()]


LOADERS: dict[str, Callable[[DocumentsSource], list[Document]]] = {"jsonl": _load_jsonl, "squad": _load_squad, "rgb": _load_rgb}


def _read_source(source: DocumentsSource, report: IngestReport) -> list[Document]:
    if source.format in LOADERS:
        return LOADERS[source.format](source)
    return _load_files(source.path, report)


def load_documents(source: DocumentsSource, report: IngestReport) -> list[Document]:
    """Read a source's documents with their declared metadata fields; metadata stays out of embeddings and
    prompts so both see only the text."""
    documents = _read_source(source, report)
    report.catalog = attach_metadata(source, documents)
    for doc in documents:
        doc.excluded_llm_metadata_keys = list(doc.metadata)
        doc.excluded_embed_metadata_keys = list(doc.metadata)
    report.documents = len(documents)
    return documents


def splitter(settings: Settings) -> SentenceSplitter:
    return SentenceSplitter(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)


def docstore_path(settings: Settings, source_name: str) -> Path:
    return settings.state_dir / "docstores" / f"{source_name}.json"


def ingest_documents(
    source: DocumentsSource,
    settings: Settings,
    embed_model: BaseEmbedding,
    documents: list[Document],
    on_batch: Callable[[list[Document], int], None] = lambda batch, chunks: None,
) -> int:
    """Upsert documents: unchanged ones (same id and hash) add nothing; changed ones replace their old chunks.
    `on_batch` hears each batch's documents and the chunks it added."""
    store = open_vector_store(settings, source.name, embedding_dim(embed_model))
    forget_probe_copy(settings.state_dir, source.name)
    path = docstore_path(settings, source.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    docstore = SimpleDocumentStore.from_persist_path(str(path)) if path.exists() else SimpleDocumentStore()
    pipeline = IngestionPipeline(
        transformations=[splitter(settings), embed_model],
        vector_store=store,
        docstore=docstore,
        docstore_strategy=DocstoreStrategy.UPSERTS,
    )
    added = 0
    for start in range(0, len(documents), INGEST_BATCH):
        batch = documents[start : start + INGEST_BATCH]
        _forget_unfinished(store, docstore, batch)
        chunks = len(pipeline.run(documents=batch, show_progress=False))
        added += chunks
        # Persist per batch, atomically, so an interrupted ingest resumes without duplicating chunks.
        docstore.persist(str(path.with_suffix(".tmp")))
        path.with_suffix(".tmp").replace(path)
        on_batch(batch, chunks)
    return added


def _forget_unfinished(store: MilvusVectorStore, docstore: SimpleDocumentStore, batch: list[Document]) -> None:
    """Delete the chunks of the batch's documents that the docstore does not know: what an ingest killed between
    writing a batch's vectors and persisting the docstore left behind, which would otherwise be stored twice."""
    unknown = [d.doc_id for d in batch if docstore.get_document_hash(d.doc_id) is None]
    if unknown:
        store.delete(unknown)


def open_index(source: DocumentsSource, settings: Settings, embed_model: BaseEmbedding) -> VectorStoreIndex:
    store = open_vector_store(settings, source.name, embedding_dim(embed_model))
    return VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
