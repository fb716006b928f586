from engines.settings import DATA_DIR, Settings
from ui.settings_doc import settings_markdown

SETTINGS_PAGE = DATA_DIR.parent / "docs" / "settings.md"


def test_the_settings_page_is_the_one_the_settings_model_generates() -> None:
    assert SETTINGS_PAGE.read_text(encoding="utf-8") == settings_markdown(), "docs/settings.md is stale: run `make docs`"


def test_every_setting_has_a_row_with_its_effect() -> None:
    page = settings_markdown()
    for name, field in Settings.model_fields.items():
        assert f"`RAGROUTER_{name.upper()}`" in page
        assert field.description, f"{name} has no description"
