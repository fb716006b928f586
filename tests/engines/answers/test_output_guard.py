"""The output guard's rules file: what it catches, what it lets through, and a broken file as a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.answers.output_guard import GuardFileError, load_output_guard
from engines.settings import DATA_DIR

GUARD = load_output_guard(DATA_DIR / "output-guard.yaml")


@pytest.mark.parametrize(
    ("answer", "rule"),
    [
        ('Traceback (most recent call last):\n  File "/srv/app.py", line 3, in <module>', "stack-trace"),
        ("The query failed: sqlite3.OperationalError: no such table", "exception-text"),
        ("ValueError: invalid literal for int()", "exception-text"),
        ("Error: HTTP 429 from the provider", "api-error"),
        ("Use the key sk-abcdefghijklmnopqrstuvwx to call it", "secret"),
        ("The password: hunter2hunter2 is stored there", "secret"),
        ("The file lives at /root/.cache/ragrouter/models/x.gguf", "internal-path"),
    ],
)
def test_leaks_are_caught_by_their_rule(answer: str, rule: str) -> None:
    assert GUARD.check(answer).name == rule


@pytest.mark.parametrize(
    "answer",
    ["Employees receive 28 days of paid annual leave [1].", "北京有 3 位客户：张伟、李娜和王芳。", "See https://example.com/news/2024 for details."],
)
def test_ordinary_answers_pass(answer: str) -> None:
    assert GUARD.check(answer) is None


def test_a_new_rule_needs_only_the_file(tmp_path: Path) -> None:
    path = tmp_path / "guard.yaml"
    path.write_text("rules:\n  - name: codename\n    keywords: [Project Falcon]\n    message: withheld\n", encoding="utf-8")
    assert load_output_guard(path).check("It is part of project falcon.").message == "withheld"


@pytest.mark.parametrize(
    "text",
    [
        "rules: [",
        "rules:\n  - name: x\n",
        "rules:\n  - name: x\n    message: m\n    regexes: ['(']\n",
        "rules:\n  - name: x\n    message: m\n    colour: red\n",
    ],
)
def test_a_broken_rules_file_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "guard.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GuardFileError, match="output guard file"):
        load_output_guard(path)
    with pytest.raises(GuardFileError, match="does not exist"):
        load_output_guard(tmp_path / "missing.yaml")
