from pathlib import Path

import pytest
from llama_index.core import Document

from engines.documents.metadata.attach import attach_metadata, split_front_matter
from engines.documents.metadata.fields import as_date, infer_type, version_key
from engines.documents.store import IngestReport, load_documents
from engines.sources import SourcesError, load_sources
from tests.engines.documents.metadata.peps_like import write_peps


def _source(tmp_path: Path, entry: str):
    path = tmp_path / "sources.yaml"
    path.write_text(f"sources:\n  - name: notes\n    kind: documents\n    path: .\n{entry}", encoding="utf-8")
    return load_sources(path)[0]


def test_fields_are_declared_as_a_list_or_a_mapping_with_types_and_descriptions(tmp_path: Path) -> None:
    listed = _source(tmp_path, "    metadata_fields: [published, length_s]\n")
    assert listed.metadata_names() == ["published", "length_s"] and listed.metadata_fields[0].type is None
    mapped = _source(tmp_path, "    metadata_fields:\n      published: date\n      length_s: {type: int, description: seconds}\n")
    assert [(f.name, f.type, f.description) for f in mapped.metadata_fields] == [("published", "date", None), ("length_s", "int", "seconds")]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("    metadata_fields: [doc_id]\n", "metadata field 'doc_id' is not allowed"),
        ("    metadata_fields: [bad-name]\n", "metadata field 'bad-name' is not allowed"),
        ("    metadata_fields: [a, a]\n", "must be unique"),
        ("    metadata_fields: {published: datetime}\n", "metadata_fields"),
        ("    metadata_file: missing.csv\n", "metadata_file .*missing.csv does not exist"),
    ],
)
def test_a_bad_field_declaration_is_a_clear_error(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(SourcesError, match=message):
        _source(tmp_path, entry)


def test_types_are_inferred_from_the_values() -> None:
    assert infer_type([3, 5, None]) == "int" and infer_type(["3", "5"]) == "int" and infer_type([1.5, 2]) == "float"
    assert infer_type(["3.10", "2.7.12", "3.x"]) == "version" and infer_type(["2004-08-19", None]) == "date"
    assert infer_type([["a"], ["b", "c"]]) == "list" and infer_type(["Final", "Draft"]) == "text" and infer_type([None]) == "text"
    assert as_date("2004/08/19") == "2004-08-19" and as_date("soon") is None
    assert sorted(["3.9", "3.10", "3.x"], key=version_key) == ["3.x", "3.9", "3.10"]


def test_jsonl_keys_fill_the_declared_fields_and_the_catalog(tmp_path: Path) -> None:
    source = load_sources(write_peps(tmp_path))[0]
    report = IngestReport(source.name)
    documents = load_documents(source, report)
    zen = next(d for d in documents if d.doc_id == "pep-0020")
    assert zen.metadata["created"] == "2004-08-19" and zen.metadata["authors"] == ["Tim Peters"] and zen.metadata["words"] == 300
    assert "created" in zen.excluded_embed_metadata_keys and "created" in zen.excluded_llm_metadata_keys
    catalog = {f.name: f for f in report.catalog.fields}
    assert catalog["status"].values == ["Accepted", "Active", "Final"] and catalog["created"].type == "date"
    assert (catalog["python_version"].type, catalog["python_version"].low, catalog["python_version"].high) == ("version", "3.0", "3.13")
    assert catalog["topic"].documents == 3 and catalog["authors"].type == "list"


def test_front_matter_and_a_metadata_csv_fill_file_sources(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "leave.md").write_text("---\npublished: 2024-01-01\nowner: HR\n---\n# Leave\nTwenty days.\n", encoding="utf-8")
    (tmp_path / "docs" / "travel.md").write_text("# Travel\nEconomy class.\n", encoding="utf-8")
    (tmp_path / "meta.csv").write_text("file_name,owner,pages\ntravel.md,Finance,3\n", encoding="utf-8")
    path = tmp_path / "sources.yaml"
    path.write_text(
        "sources:\n  - {name: hr, kind: documents, path: docs, metadata_file: meta.csv, metadata_fields: [published, owner, pages, file_size]}\n",
        encoding="utf-8",
    )
    report = IngestReport("hr")
    documents = {d.metadata["file_name"]: d for d in load_documents(load_sources(path)[0], report)}
    assert documents["leave.md"].text.startswith("# Leave") and documents["leave.md"].metadata["published"] == "2024-01-01"
    assert documents["travel.md"].metadata["owner"] == "Finance" and documents["travel.md"].metadata["pages"] == 3
    assert documents["leave.md"].metadata["pages"] is None
    assert documents["travel.md"].metadata["file_size"] == len("# Travel\nEconomy class.\n")  # the file's own property
    assert {f.name: f.type for f in report.catalog.fields}["file_size"] == "int"


def test_text_that_only_looks_like_front_matter_stays_as_written() -> None:
    doc = Document(text="---\n: [unclosed\n---\nbody")
    assert split_front_matter(doc) == {} and doc.text.startswith("---")


def test_a_metadata_csv_without_a_key_column_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "meta.csv").write_text("name,owner\nx,y\n", encoding="utf-8")
    source = _source(tmp_path, "    metadata_file: meta.csv\n    metadata_fields: [owner]\n")
    with pytest.raises(SourcesError, match="neither a `file_name` nor an `_id` column"):
        attach_metadata(source, [Document(text="x", metadata={"file_name": "x"})])
