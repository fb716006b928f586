"""A database's names in the other language: checked against the schema, read by the linker and the SQL prompt."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from engines.aliases import Aliases
from engines.matching.schema_terms import SchemaLinker, schema_vocabulary
from engines.sources import SourcesError, load_sources

COLUMNS = {"singer": ["Singer_ID", "Name", "Country"], "concert": ["concert_ID", "Year"]}


def test_only_names_and_values_the_database_has_are_kept() -> None:
    aliases = Aliases(
        names={"singer": "歌手", "singer.Country": "国家", "singer.Height": "身高", "stadium": "体育场", "concert.Year": "Year", "concert": " "},
        values={"France": "法国", "Japan": "日本"},
    )
    checked = aliases.checked(COLUMNS, stored={"France", "Netherlands"})
    assert checked.names == {"singer": "歌手", "singer.Country": "国家"}  # no such column or table; the name itself; blank
    assert checked.values == {"France": "法国"}


def test_a_person_s_aliases_win_over_the_model_s() -> None:
    mine = Aliases(names={"singer": "艺人"})
    assert mine.over(Aliases(names={"singer": "歌手", "singer.Country": "国家"})).names == {"singer": "艺人", "singer.Country": "国家"}


def test_tables_in_the_other_language_are_texts_to_embed() -> None:
    aliases = Aliases(names={"singer": "歌手", "singer.Name": "歌手姓名", "singer.Country": "国家"})
    assert aliases.table_texts(COLUMNS) == ["歌手（singer）：歌手姓名、国家"]


def _database(path: Path, script: str):
    with sqlite3.connect(path) as conn:
        conn.executescript(script)
    return create_engine(f"sqlite:///{path}")


def test_a_chinese_question_links_to_the_database_its_aliases_name(tmp_path: Path) -> None:
    music = _database(
        tmp_path / "music.sqlite", "CREATE TABLE singer (Name TEXT, Country TEXT); INSERT INTO singer VALUES ('A', 'France'), ('B', 'France');"
    )
    pets = _database(tmp_path / "pets.sqlite", "CREATE TABLE pets (PetType TEXT, weight REAL);")
    vocabularies = {
        "music": schema_vocabulary(music, Aliases(names={"singer": "歌手", "singer.Country": "国家"}, values={"France": "法国"})),
        "pets": schema_vocabulary(pets, Aliases(names={"pets": "宠物", "pets.weight": "体重"})),
    }
    linker = SchemaLinker(vocabularies, term_weight=0.03, value_bonus=0.02)
    shares = linker.term_shares("每个国家有多少歌手？")
    assert shares["music"] > 0 and shares["pets"] == 0
    assert linker.named_values("法国歌手有几位？") == {"music": {"france"}, "pets": set()}
    assert linker.names_only_in("宠物的平均体重是多少？", "pets", "music") == {"pet", "weight"}


def test_the_sources_file_takes_aliases_and_rejects_a_misspelt_key(tmp_path: Path) -> None:
    database = tmp_path / "music.sqlite"
    _database(database, "CREATE TABLE singer (Name TEXT);")
    good = tmp_path / "good.yaml"
    good.write_text(
        f"sources:\n  - {{name: music, kind: sql, path: {database}, aliases: {{names: {{singer: 歌手}}, values: {{}}}}}}\n", encoding="utf-8"
    )
    assert load_sources(good)[0].aliases.names == {"singer": "歌手"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"sources:\n  - {{name: music, kind: sql, path: {database}, aliases: {{name: {{singer: 歌手}}}}}}\n", encoding="utf-8")
    with pytest.raises(SourcesError, match="aliases.name"):
        load_sources(bad)
