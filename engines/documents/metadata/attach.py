"""Fill each document's declared metadata fields at ingest, from wherever the source keeps them: the JSON lines'
own keys (put there by the loader), Markdown front matter, the file's properties, or a CSV of metadata."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import yaml
from llama_index.core import Document

from engines.documents.metadata.fields import Catalog, coerce, infer_type, summarise
from engines.sources import DocumentsSource, SourcesError

FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)


def split_front_matter(doc: Document) -> dict[str, Any]:
    """The YAML block that opens a Markdown file (`---` lines around it), taken out of the text."""
    match = FRONT_MATTER.match(doc.text)
    if not match:
        return {}
    try:
        fields = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return {}  # not front matter after all: the text stays as written
    if not isinstance(fields, dict):
        return {}
    doc.set_content(doc.text[match.end() :])
    return fields


def read_metadata_file(path: Path, id_field: str) -> dict[str, dict[str, str]]:
    """A CSV of metadata, one row per document, keyed by its `file_name` column (file sources) or the id field."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    key = "file_name" if rows and "file_name" in rows[0] else id_field
    if rows and key not in rows[0]:
        raise SourcesError(f"metadata file {path} has neither a `file_name` nor an `{id_field}` column")
    return {row[key]: row for row in rows}


def _raw_values(source: DocumentsSource, documents: list[Document]) -> list[dict[str, Any]]:
    table = read_metadata_file(source.metadata_file, source.id_field) if source.metadata_file else {}
    raw = []
    for doc in documents:
        found = {**doc.metadata, **split_front_matter(doc)}
        found.update(table.get(str(doc.metadata.get("file_name") or doc.metadata.get("doc_id")), {}))
        raw.append({name: found.get(name) for name in source.metadata_names()})
    return raw


def attach_metadata(source: DocumentsSource, documents: list[Document]) -> Catalog | None:
    """Put each declared field in each document's metadata, in its type (given, or inferred from all the values);
    the catalog summarises them. None when the source declares no fields."""
    if not source.metadata_fields:
        return None
    raw = _raw_values(source, documents)
    summaries = []
    for field in source.metadata_fields:
        values = [r[field.name] for r in raw]
        kind = field.type or infer_type(values)
        stored = [coerce(v, kind) for v in values]
        for doc, value in zip(documents, stored):
            doc.metadata[field.name] = value
        summaries.append(summarise(field, kind, stored))
    return Catalog(source=source.name, documents=len(documents), fields=summaries)
