"""The Sources page lists the sources file's entries with size and ingest state, and names a broken file."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parent.parent / "ui" / "pages" / "2_Sources.py")


def test_the_demo_sources_are_listed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGROUTER_STATE_DIR", str(tmp_path))  # nothing ingested in a fresh state folder
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    table = page.dataframe[0].value
    assert list(table.index) == ["handbook", "shop", "web"]
    assert table.loc["handbook", "last ingested"].startswith("not yet") and "files" in table.loc["handbook", "size"]
    assert table.loc["shop", "kind"] == "sql"


def test_a_broken_sources_file_is_a_message_not_a_trace(tmp_path: Path, monkeypatch) -> None:
    broken = tmp_path / "sources.yaml"
    broken.write_text("sources:\n  - {name: x, kind: spreadsheet}\n", encoding="utf-8")
    monkeypatch.setenv("RAGROUTER_SOURCES_FILE", str(broken))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception and "is invalid" in page.error[0].value
