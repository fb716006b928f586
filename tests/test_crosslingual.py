"""Asking across languages with the real model: a new English-named database answers a Chinese question with no
description written, its aliases made once and cached."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import make_settings
from tools.build import build_router
from tools.descriptions import DescriptionCache


def _school(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE teacher (Teacher_ID INTEGER PRIMARY KEY, Name TEXT, Age INTEGER, Hometown TEXT);"
            "INSERT INTO teacher VALUES (1, 'Joseph Huts', 32, 'Beijing'), (2, 'Gustaaf Deloor', 29, 'Shanghai'),"
            "(3, 'Vicente Carretero', 26, 'Beijing'), (4, 'John Deloor', 33, 'Shanghai'), (5, 'Lucy Wong', 39, 'Beijing');"
        )
    return path


def test_a_new_english_named_database_answers_a_chinese_question(tmp_path: Path, llm, embed, search_server: str) -> None:
    database = _school(tmp_path / "school.sqlite")
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {{name: school, kind: sql, path: {database}}}\n  - {{name: web, kind: web}}\n", encoding="utf-8")
    settings = make_settings(tmp_path / "state", aliases=True, web_backend="searxng", searxng_url=search_server)
    router = build_router(settings, sources, llm=llm, embed=embed)
    cached = DescriptionCache(settings.state_dir / "descriptions.json").get("school")
    assert cached and any("\u4e00" <= ch <= "\u9fff" for ch in cached["aliases"]["names"]["teacher"])  # written once, kept
    trace = router.ask("有多少位老师？")
    assert trace.route.chosen == "school", trace.route.reason
    assert trace.rows == [[5]] and "5" in trace.answer
    beijing = router.ask("有多少位老师来自北京？")  # 北京 is a stored value's alias: Beijing
    assert beijing.route.chosen == "school" and beijing.rows == [[3]], (beijing.sql, beijing.route.reason)
