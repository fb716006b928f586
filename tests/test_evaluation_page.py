"""The Evaluation page reads report folders only: tested on the repository's reports and on hand-made ones."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parent.parent / "ui" / "pages" / "1_Evaluation.py")


def test_the_committed_reports_are_listed_with_their_numbers() -> None:
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    assert "router-test" in page.selectbox[0].options
    page.selectbox[0].set_value("router-test").run()
    assert "accuracy" in page.dataframe[0].value.index and any("Most frequent wrong routes" in e.label for e in page.expander)


def test_a_corrupt_report_is_named_and_the_rest_still_shown(tmp_path: Path, monkeypatch) -> None:
    good = tmp_path / "router-dev"
    good.mkdir()
    (good / "report.json").write_text(json.dumps({"suite": "router", "split": "dev", "n": 3, "metrics": {"accuracy": 0.9},
                                                  "baseline": {"accuracy": 0.3}, "ratios": {"accuracy": 3.0}}), encoding="utf-8")
    (tmp_path / "sql-dev").mkdir()
    (tmp_path / "sql-dev" / "report.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("RAGROUTER_REPORTS_DIR", str(tmp_path))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    assert page.selectbox[0].options == ["router-dev"] and "sql-dev" in page.warning[0].value
    assert page.dataframe[0].value.loc["accuracy", "ragrouter"] == 0.9


def test_no_reports_says_how_to_make_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGROUTER_REPORTS_DIR", str(tmp_path))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception and "make eval" in page.info[0].value
