"""Uploads are checked before anything is written: a bad file changes neither the folders nor the sources file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engines.sources import load_sources
from tools.source_edits import add_source
from tools.uploads import UploadError, check_sqlite, read_uploads, upload_documents, upload_sqlite

SOURCES = "# my sources\nsources:\n  - name: notes   # team notes\n    kind: documents\n    path: notes\n"


@pytest.fixture()
def sources_file(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\nThe first note.", encoding="utf-8")
    path = tmp_path / "sources.yaml"
    path.write_text(SOURCES, encoding="utf-8")
    return path


def sqlite_bytes(tmp_path: Path, tables: bool = True) -> bytes:
    path = tmp_path / "made.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)" if tables else "PRAGMA user_version = 1")
    return path.read_bytes()


def test_documents_are_read_as_ingestion_reads_them() -> None:
    (doc,) = read_uploads([("plan.md", b"# Plan\nShip in May.")])
    assert "Ship in May." in doc.text


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([], "at least one file"),
        ([("run.exe", b"MZ")], "unsupported file type"),
        ([("x.pdf", b"%PDF-1.4 broken")], "cannot be read"),
        ([("ok.md", b"fine"), ("bad.txt", b"\x00\x01")], "bad.txt: cannot be read"),
    ],
)
def test_a_bad_upload_is_refused_by_name(files: list, message: str) -> None:
    with pytest.raises(UploadError, match=message):
        read_uploads(files)


def test_a_new_source_is_appended_keeping_the_files_comments(sources_file: Path, tmp_path: Path) -> None:
    source = upload_documents([("b.txt", b"Second note.")], "more-notes", sources_file, tmp_path / "uploads", "More team notes")
    text = sources_file.read_text(encoding="utf-8")
    assert text.startswith(SOURCES) and "# team notes" in text
    assert [s.name for s in load_sources(sources_file)] == ["notes", "more-notes"]
    assert source.description == "More team notes" and (source.path / "b.txt").read_text() == "Second note."


def test_files_go_into_an_existing_folder_source(sources_file: Path, tmp_path: Path) -> None:
    upload_documents([("b.txt", b"Second note.")], "notes", sources_file, tmp_path / "uploads")
    assert sorted(p.name for p in (tmp_path / "notes").iterdir()) == ["a.md", "b.txt"]
    assert sources_file.read_text(encoding="utf-8") == SOURCES


def test_a_refused_upload_changes_nothing(sources_file: Path, tmp_path: Path) -> None:
    upload_documents([("b.txt", b"x")], "notes2", sources_file, tmp_path / "uploads")
    add_source(sources_file, {"name": "web", "kind": "web"})
    before = sources_file.read_text(encoding="utf-8")
    for name, message in (("bad name!", "cannot name a source"), ("web", "not a folder of document files")):
        with pytest.raises(UploadError, match=message):
            upload_documents([("d.txt", b"x")], name, sources_file, tmp_path / "uploads")
    with pytest.raises(UploadError, match="cannot be read"):
        upload_documents([("d.txt", b"x"), ("e.pdf", b"junk")], "notes", sources_file, tmp_path / "uploads")
    with pytest.raises(UploadError, match="already has a.md; rename"):
        upload_documents([("a.md", b"an older note, replaced?")], "notes", sources_file, tmp_path / "uploads")
    assert (tmp_path / "notes" / "a.md").read_text(encoding="utf-8") == "# A\nThe first note."
    with pytest.raises(UploadError, match="already exists"):
        upload_sqlite("sales.db", sqlite_bytes(tmp_path), "notes", sources_file, tmp_path / "uploads")
    assert sources_file.read_text(encoding="utf-8") == before and not (tmp_path / "notes" / "d.txt").exists()
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == ["notes2"]


def test_a_sqlite_upload_becomes_a_new_sql_source(sources_file: Path, tmp_path: Path) -> None:
    source = upload_sqlite("sales.db", sqlite_bytes(tmp_path), "sales", sources_file, tmp_path / "uploads")
    assert source.kind == "sql" and source.path == tmp_path / "uploads" / "sales.sqlite"
    assert [s.name for s in load_sources(sources_file)] == ["notes", "sales"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("sales.db", b"not a database at all", "not a SQLite database"),
        ("sales.csv", b"SQLite format 3\x00", "not a SQLite database"),
        ("sales.db", b"SQLite format 3\x00" + b"\xff" * 200, "damaged"),
    ],
)
def test_a_bad_sqlite_upload_is_refused(sources_file: Path, tmp_path: Path, name: str, content: bytes, message: str) -> None:
    with pytest.raises(UploadError, match=message):
        upload_sqlite(name, content, "sales", sources_file, tmp_path / "uploads")
    assert sources_file.read_text(encoding="utf-8") == SOURCES and not (tmp_path / "uploads").exists()


def test_a_database_without_tables_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UploadError, match="no tables"):
        check_sqlite("empty.sqlite", sqlite_bytes(tmp_path, tables=False))


def test_a_flow_style_sources_file_is_rewritten_valid(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    path = tmp_path / "sources.yaml"
    path.write_text("sources: [{name: notes, kind: documents, path: notes}]\n", encoding="utf-8")
    add_source(path, {"name": "web", "kind": "web"})
    assert [s.name for s in load_sources(path)] == ["notes", "web"]
