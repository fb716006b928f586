"""The Evaluation page: tested on the repository's reports, on hand-made ones, and running a slice of a suite."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "ui" / "pages" / "1_Evaluation.py")


def test_the_committed_reports_are_listed_with_their_numbers() -> None:
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    assert "router-test" in page.selectbox(key="report").options
    page.selectbox(key="report").set_value("router-test").run()
    assert "accuracy" in page.dataframe[0].value.index and any("Most frequent wrong routes" in e.label for e in page.expander)


def test_a_corrupt_report_is_named_and_the_rest_still_shown(tmp_path: Path, monkeypatch) -> None:
    good = tmp_path / "router-dev"
    good.mkdir()
    (good / "report.json").write_text(
        json.dumps(
            {"suite": "router", "split": "dev", "n": 3, "metrics": {"accuracy": 0.9}, "baseline": {"accuracy": 0.3}, "ratios": {"accuracy": 3.0}}
        ),
        encoding="utf-8",
    )
    (tmp_path / "sql-dev").mkdir()
    (tmp_path / "sql-dev" / "report.json").write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("RAGROUTER_REPORTS_DIR", str(tmp_path))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    assert page.selectbox(key="report").options == ["router-dev"] and "sql-dev" in page.warning[0].value
    assert page.dataframe[0].value.loc["accuracy", "ragrouter"] == 0.9


def test_no_reports_says_how_to_make_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGROUTER_REPORTS_DIR", str(tmp_path))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception and "make eval" in page.info[0].value


def test_a_slice_of_the_sql_suite_runs_from_the_page_and_is_listed(tmp_path: Path, monkeypatch) -> None:
    for name, value in (("REPORTS_DIR", tmp_path / "reports"), ("STATE_DIR", tmp_path / "state"), ("MILVUS_URI", tmp_path / "milvus" / "t.db")):
        monkeypatch.setenv(f"RAGROUTER_{name}", str(value))
    page = AppTest.from_file(PAGE, default_timeout=900).run()
    page.number_input[0].set_value(2)
    page = next(b for b in page.button if b.label == "Run the slice").click().run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    assert "sql-dev-slice2" in page.success[0].value and page.selectbox(key="report").options == ["sql-dev-slice2"]
    report = json.loads((tmp_path / "reports" / "sql-dev-slice2" / "report.json").read_text(encoding="utf-8"))
    assert report["n"] == 2 and "execution_accuracy" in report["metrics"]


def test_only_the_standard_reports_are_listed_newest_first(tmp_path: Path, monkeypatch) -> None:
    for name, created in (("router-dev", "2026-11-01"), ("sql-test", "2026-12-01"), ("sql-test-an-experiment", "2026-12-05")):
        (tmp_path / name).mkdir()
        report = {"suite": name.split("-")[0], "split": "dev", "n": 1, "created": created, "metrics": {"accuracy": 0.5}}
        (tmp_path / name / "report.json").write_text(json.dumps(report), encoding="utf-8")
    monkeypatch.setenv("RAGROUTER_REPORTS_DIR", str(tmp_path))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not page.exception
    assert page.selectbox(key="report").options == ["sql-test", "router-dev"]
