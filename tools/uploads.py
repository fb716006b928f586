"""Uploads: files a user hands the app, checked, then placed into a new or an existing source.

Everything is checked before anything is written: a file of an unsupported type, one that cannot be read, or a
file that is not a SQLite database is refused with a message naming it, and then no file is copied and the
sources file is unchanged.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

from llama_index.core import Document

from engines.documents.store import FILE_TYPES, read_file
from engines.sources import NAME_PATTERN, DocumentsSource, Source, SqlSource, load_sources
from engines.sql.database import SQLITE_MAGIC
from tools.source_edits import SourceEditError, add_source

SQLITE_TYPES = {".sqlite", ".sqlite3", ".db"}


class UploadError(ValueError):
    """An upload that cannot be used; the message names the file and why. Nothing was changed."""


def read_uploads(files: list[tuple[str, bytes]]) -> list[Document]:
    """The documents in uploaded files, each read the way ingestion reads it; any bad file refuses them all."""
    if not files:
        raise UploadError("choose at least one file to upload")
    documents: list[Document] = []
    with tempfile.TemporaryDirectory() as folder:
        for name, content in files:
            if Path(name).suffix.lower() not in FILE_TYPES:
                raise UploadError(f"{name}: unsupported file type; documents can be {', '.join(sorted(FILE_TYPES))}")
            path = Path(folder) / Path(name).name
            path.write_bytes(content)
            try:
                documents.extend(read_file(path))
            except Exception as err:  # a corrupt pdf/docx raises whatever its parser raises
                raise UploadError(f"{name}: cannot be read ({err}); nothing was uploaded") from err
    return documents


def check_sqlite(name: str, content: bytes) -> list[str]:
    """The tables of an uploaded SQLite file; anything else is refused."""
    if Path(name).suffix.lower() not in SQLITE_TYPES or not content.startswith(SQLITE_MAGIC):
        raise UploadError(f"{name}: not a SQLite database (expected a {'/'.join(sorted(SQLITE_TYPES))} file starting with the SQLite header)")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload.sqlite"
        path.write_bytes(content)
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        except sqlite3.DatabaseError as err:
            raise UploadError(f"{name}: the SQLite file is damaged ({err})") from err
    if not tables:
        raise UploadError(f"{name}: the database has no tables to answer questions from")
    return tables


def _new_name(name: str, sources: list[Source]) -> str:
    if not re.fullmatch(NAME_PATTERN, name):
        raise UploadError(f"'{name}' cannot name a source: start with a letter; letters, digits, _ and - only; at most 64 characters")
    if any(s.name == name for s in sources):
        raise UploadError(f"a source named '{name}' already exists")
    return name


def upload_documents(files: list[tuple[str, bytes]], target: str, sources_file: Path, uploads_dir: Path, description: str = "") -> DocumentsSource:
    """Put uploaded documents into the documents source `target`, adding it to the sources file when it is new.
    The caller ingests the returned source (the files were already read once here, so ingestion will not fail)."""
    read_uploads(files)
    sources = load_sources(sources_file)
    existing = next((s for s in sources if s.name == target), None)
    if existing is not None and (not isinstance(existing, DocumentsSource) or existing.format != "files" or not existing.path.is_dir()):
        raise UploadError(f"'{target}' is not a folder of document files; upload into a documents folder source or a new source")
    folder = existing.path if existing is not None else uploads_dir / _new_name(target, sources)
    taken = sorted(Path(name).name for name, _ in files if (folder / Path(name).name).exists())
    if taken:  # replacing a user's document from the browser would lose it: they can replace it on disk
        raise UploadError(f"'{target}' already has {', '.join(taken)}; rename the upload, or replace the file in {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files:
        (folder / Path(name).name).write_bytes(content)
    if existing is not None:
        return existing
    entry = {"name": target, "kind": "documents", "path": str(folder), **({"description": description} if description else {})}
    try:
        return add_source(sources_file, entry)
    except SourceEditError as err:
        shutil.rmtree(folder)
        raise UploadError(str(err)) from err


def upload_sqlite(name: str, content: bytes, target: str, sources_file: Path, uploads_dir: Path, description: str = "") -> SqlSource:
    """Add an uploaded SQLite database as the new SQL source `target` (a database is not merged into another)."""
    check_sqlite(name, content)
    _new_name(target, load_sources(sources_file))
    uploads_dir.mkdir(parents=True, exist_ok=True)
    path = uploads_dir / f"{target}.sqlite"
    path.write_bytes(content)
    entry = {"name": target, "kind": "sql", "path": str(path), **({"description": description} if description else {})}
    try:
        return add_source(sources_file, entry)
    except SourceEditError as err:
        path.unlink()
        raise UploadError(str(err)) from err
