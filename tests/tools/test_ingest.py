from pathlib import Path

import pytest

from engines.milvus import collection_name, open_vector_store
from engines.sources import DocumentsSource
from tests.conftest import make_settings
from tools.ingest import IngestProgress, ingest_source


def _count(settings, name: str) -> int:
    store = open_vector_store(settings, name, 384)
    return store.client.query(collection_name(name), filter="", output_fields=["count(*)"])[0]["count(*)"]


def _no_llm():
    raise AssertionError("a description was given, so no model may be loaded")


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave\nEmployees get 28 days of annual leave.\n", encoding="utf-8")
    (docs / "餐补.txt").write_text("国内出差每日餐补为 300 元。\n", encoding="utf-8")
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (docs / "image.png").write_bytes(b"\x89PNG")
    return docs


def test_ingest_skips_bad_files_and_is_idempotent(tmp_path: Path, folder: Path, embed) -> None:
    settings = make_settings(tmp_path / "state")
    source = DocumentsSource(name="notes", kind="documents", path=folder, description="HR notes")
    first = ingest_source(source, settings, embed, _no_llm)
    assert first.documents == 2 and first.chunks_added == 2
    assert {s.split(":")[0] for s in first.skipped} == {"binary.txt", "broken.pdf", "image.png"}
    assert ingest_source(source, settings, embed, _no_llm).chunks_added == 0
    assert _count(settings, "notes") == 2

    (folder / "leave.md").write_text("# Leave\nEmployees get 30 days of annual leave from 2026.\n", encoding="utf-8")
    assert ingest_source(source, settings, embed, _no_llm).chunks_added == 1
    assert _count(settings, "notes") == 2  # the changed file's old chunk was replaced, not kept beside it


def test_a_folder_without_readable_files_changes_nothing(tmp_path: Path, embed) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "binary.txt").write_bytes(b"\x00\x00")
    settings = make_settings(tmp_path / "state")
    report = ingest_source(DocumentsSource(name="empty", kind="documents", path=empty), settings, embed, _no_llm)
    assert report.chunks_added == 0 and "nothing was changed" in report.skipped[-1]
    assert not (settings.state_dir / "descriptions.json").exists()


def test_missing_description_is_generated_once_and_cached(tmp_path: Path, folder: Path, embed, llm) -> None:
    settings = make_settings(tmp_path / "state")
    source = DocumentsSource(name="notes", kind="documents", path=folder)
    ingest_source(source, settings, embed, lambda: llm)
    from tools.descriptions import DescriptionCache

    description = DescriptionCache(settings.state_dir / "descriptions.json").get("notes")["description"]
    assert description.strip()
    ingest_source(source, settings, embed, _no_llm)  # unchanged contents: the cached description is reused


def test_progress_is_heard_after_every_batch(tmp_path: Path, folder: Path, embed, monkeypatch) -> None:
    import engines.documents.store

    monkeypatch.setattr(engines.documents.store, "INGEST_BATCH", 1)
    heard = []
    source = DocumentsSource(name="notes", kind="documents", path=folder, description="HR notes")
    ingest_source(source, make_settings(tmp_path / "state"), embed, _no_llm, lambda p: heard.append((p.documents, p.chunks, p.total)))
    assert heard == [(0, 0, 2), (1, 1, 2), (2, 2, 2)]


def test_time_left_weighs_documents_by_their_length() -> None:
    from llama_index.core import Document

    progress = IngestProgress("notes", total=2, total_characters=1_000)
    progress.started -= 10  # ten seconds in
    progress.advance([Document(text="x" * 100)], chunks=1)
    # One document of two done, but a tenth of the text: nine times the time so far is left, not once.
    assert 85 < progress.left_s < 95


def test_an_ingest_killed_between_writing_vectors_and_its_docstore_resumes_with_no_document_twice(
    tmp_path: Path, folder: Path, embed, monkeypatch
) -> None:
    from llama_index.core.storage.docstore import SimpleDocumentStore

    import engines.documents.store

    settings = make_settings(tmp_path / "state")
    source = DocumentsSource(name="notes", kind="documents", path=folder, description="HR notes")
    with monkeypatch.context() as killed:
        killed.setattr(engines.documents.store, "INGEST_BATCH", 1)

        def die(self, *args, **kwargs) -> None:
            raise KeyboardInterrupt  # the first document's vectors are in Milvus; the docstore never heard of them

        killed.setattr(SimpleDocumentStore, "persist", die)
        with pytest.raises(KeyboardInterrupt):
            ingest_source(source, settings, embed, _no_llm)
    assert _count(settings, "notes") == 1
    assert ingest_source(source, settings, embed, _no_llm).chunks_added == 2
    assert _count(settings, "notes") == 2  # the half-written document was written again, not beside itself
