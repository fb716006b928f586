"""The Sources page lists the sources file's entries with size and ingest state, names a broken file, and takes
uploads into a new or an existing source (a bad upload is a message and changes nothing), and shows where the
chat's questions would route under a new description before saving it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import DEMO_SOURCES

PAGE = str(Path(__file__).resolve().parents[2] / "ui" / "pages" / "2_Sources.py")


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


@pytest.fixture()
def own_sources(tmp_path: Path, monkeypatch) -> Path:
    """A sources file, state folder and Milvus Lite file of the test's own, so uploads touch nothing shared."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Parking\nStaff park on level 2.", encoding="utf-8")
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - name: notes\n    kind: documents\n    path: notes\n    description: Team notes\n", encoding="utf-8")
    for name, value in (("SOURCES_FILE", sources), ("STATE_DIR", tmp_path / "state"), ("MILVUS_URI", tmp_path / "milvus" / "t.db")):
        monkeypatch.setenv(f"RAGROUTER_{name}", str(value))
    return sources


def _upload(page: AppTest, files: list[tuple[str, bytes, str]], into: str, name: str = "") -> AppTest:
    page.file_uploader[0].set_value(files)
    page.selectbox[0].set_value(into)
    page.text_input[0].set_value(name)
    page.text_area[0].set_value("Visitor rules of the office")
    return page.button[0].click().run()


def test_an_upload_becomes_a_new_ingested_source(own_sources: Path) -> None:
    page = AppTest.from_file(PAGE, default_timeout=300).run()
    page = _upload(page, [("visitors.md", b"# Visitors\nVisitors sign in at reception.", "text/markdown")], "a new source", "visitors")
    assert not page.exception and not page.error
    assert "visitors: 1 documents read, 1 chunks added" in page.success[0].value
    table = page.dataframe[0].value
    assert list(table.index) == ["notes", "visitors"] and not table.loc["visitors", "last ingested"].startswith("not yet")


@pytest.mark.parametrize(
    ("file", "message"),
    [
        (("tool.exe", b"MZ\x90\x00", "application/octet-stream"), "unsupported file type"),
        (("report.pdf", b"%PDF-1.7 truncated", "application/pdf"), "cannot be read"),
        (("shop.sqlite", b"SQLite format 3\x00" + b"\xff" * 100, "application/octet-stream"), "damaged"),
    ],
)
def test_a_bad_upload_is_a_message_and_changes_nothing(own_sources: Path, file: tuple, message: str) -> None:
    before = own_sources.read_text(encoding="utf-8")
    page = _upload(AppTest.from_file(PAGE, default_timeout=300).run(), [file], "notes", "extra")
    assert not page.exception and message in page.error[0].value
    assert own_sources.read_text(encoding="utf-8") == before
    assert sorted(p.name for p in (own_sources.parent / "notes").iterdir()) == ["a.md"]


def test_a_new_description_previews_where_questions_would_go_then_saves(router, tmp_path: Path, monkeypatch) -> None:
    # `router` has ingested the demo into demo_settings' folders; the page reads a copy of the demo sources file.
    settings = router.settings
    sources = tmp_path / "sources.yaml"
    sources.write_text(DEMO_SOURCES.read_text(encoding="utf-8").replace(" demo/", f" {DEMO_SOURCES.parent}/demo/"), encoding="utf-8")
    for name, value in (
        ("SOURCES_FILE", sources),
        ("STATE_DIR", settings.state_dir),
        ("MILVUS_URI", settings.milvus_uri),
        ("WEB_BACKEND", settings.web_backend),
        ("SEARXNG_URL", settings.searxng_url),
    ):
        monkeypatch.setenv(f"RAGROUTER_{name}", str(value))
    page = AppTest.from_file(PAGE, default_timeout=300).run()
    page.selectbox(key="describe-source").set_value("handbook").run()
    page.text_area(key="describe-handbook").set_value("Harbor City marathon 2026: who won the race, and the results")
    page.text_area(key="describe-questions").set_value("Who won the 2026 Harbor City marathon?\nHow many days of annual leave do employees get?")
    page = next(b for b in page.button if b.label == "Preview routing").click().run()
    assert not page.exception and not page.error
    table = page.dataframe[-1].value
    assert list(table["now"]) == ["web", "handbook"] and list(table["with this description"]) == ["handbook", "handbook"]
    page = next(b for b in page.button if b.label == "Save description").click().run()
    assert "Saved" in page.success[0].value
    assert "Harbor City marathon 2026: who won" in sources.read_text(encoding="utf-8") and "# The default sources" in sources.read_text(
        encoding="utf-8"
    )


def test_a_database_s_names_in_the_other_language_are_shown(tmp_path: Path, monkeypatch) -> None:
    shop = DEMO_SOURCES.parent / "demo" / "shop.sqlite"
    sources = tmp_path / "sources.yaml"
    aliases = "aliases: {names: {customers: 客户, customers.city: 城市, nothing: 无}, values: {Beijing: 北京}}"
    sources.write_text(f"sources:\n  - {{name: shop, kind: sql, path: '{shop}', {aliases}}}\n  - {{name: web, kind: web}}\n", encoding="utf-8")
    monkeypatch.setenv("RAGROUTER_SOURCES_FILE", str(sources))
    monkeypatch.setenv("RAGROUTER_STATE_DIR", str(tmp_path / "state"))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    shown = page.dataframe[1].value
    assert shown.loc["customers", "alias"] == "客户" and shown.loc["Beijing", "kind"] == "value"
    assert "nothing" not in shown.index  # no such table: dropped
