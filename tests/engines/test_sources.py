from pathlib import Path

import pytest

from engines.settings import DATA_DIR
from engines.sources import DocumentsSource, SourcesError, SqlSource, WebSource, load_sources


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_demo_sources_load_with_resolved_paths() -> None:
    sources = load_sources(DATA_DIR / "sources.yaml")
    kinds = {type(s) for s in sources}
    assert kinds == {DocumentsSource, SqlSource, WebSource}
    assert all(s.path.is_absolute() for s in sources if getattr(s, "path", None))


def test_eval_sources_have_the_reference_names() -> None:
    if not (DATA_DIR.parent.parent / "shared" / "eval").is_dir():
        pytest.skip("../shared/eval is not beside this checkout")
    names = [s.name for s in load_sources(DATA_DIR / "eval-sources.yaml")]
    assert len(names) == 22 and {"scifact", "cmrc2018", "web", "world_1", "concert_singer"} <= set(names)


def test_typo_in_kind_names_the_allowed_kinds(tmp_path: Path) -> None:
    path = _write(tmp_path, "sources:\n  - name: notes\n    kind: documnets\n    path: .\n")
    with pytest.raises(SourcesError, match="documents.*sql.*web"):
        load_sources(path)


def test_missing_path_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, "sources:\n  - name: notes\n    kind: documents\n    path: nowhere\n")
    with pytest.raises(SourcesError, match="source 'notes': path .*nowhere does not exist"):
        load_sources(path)


def test_missing_knowledge_file_is_named(tmp_path: Path) -> None:
    db = DATA_DIR / "demo" / "shop.sqlite"
    path = _write(tmp_path, f"sources:\n  - name: shop\n    kind: sql\n    path: '{db}'\n    knowledge: terms.yaml\n")
    with pytest.raises(SourcesError, match="source 'shop': knowledge .*terms.yaml does not exist"):
        load_sources(path)


def test_duplicate_names_and_bad_yaml_are_refused(tmp_path: Path) -> None:
    twice = "sources:\n  - {name: web, kind: web}\n  - {name: web, kind: web}\n"
    with pytest.raises(SourcesError, match="repeated: web"):
        load_sources(_write(tmp_path, twice))
    with pytest.raises(SourcesError, match="not valid YAML"):
        load_sources(_write(tmp_path, "sources: [\n"))


def test_sql_source_needs_exactly_one_location(tmp_path: Path) -> None:
    with pytest.raises(SourcesError, match="exactly one of"):
        load_sources(_write(tmp_path, "sources:\n  - {name: db, kind: sql}\n"))
