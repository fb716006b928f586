"""Compared strings take the spelling stored in the column, only where exactly one stored value matches."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from engines.sql.schema import Schema
from engines.sql.values import match_values

PETS = Schema({"pets": ["PetID", "PetType", "weight"], "owners": ["name", "PetID"]})


def _database(path: Path, *statements: str) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
    return engine


@pytest.fixture()
def engine(tmp_path: Path) -> Engine:
    return _database(
        tmp_path / "pets.sqlite",
        "CREATE TABLE pets (PetID INTEGER, PetType TEXT, weight REAL)",
        "CREATE TABLE owners (name TEXT, PetID INTEGER)",
        "INSERT INTO pets VALUES (1, 'dog', 12.0), (2, 'cat', 3.5), (3, 'Bird', 0.1), (4, 'bird', 0.2)",
        "INSERT INTO owners VALUES ('Ana', 1)",
    )


def test_a_literal_in_the_wrong_case_takes_the_stored_spelling(engine: Engine) -> None:
    sql, changes = match_values("SELECT COUNT(*) FROM pets AS T1 WHERE T1.PetType = 'Dog' OR T1.PetType IN ('CAT')", engine, PETS)
    assert sql == "SELECT COUNT(*) FROM pets AS T1 WHERE T1.PetType = 'dog' OR T1.PetType IN ('cat')"
    assert changes == ["'Dog' -> 'dog'", "'CAT' -> 'cat'"]


def test_stored_ambiguous_unknown_and_unresolvable_literals_stay(engine: Engine) -> None:
    for sql in (
        "SELECT weight FROM pets WHERE PetType = 'cat'",  # stored as written
        "SELECT weight FROM pets WHERE PetType = 'BIRD'",  # 'Bird' and 'bird': no single spelling
        "SELECT weight FROM pets WHERE PetType = 'fish'",
        "SELECT name FROM owners JOIN pets ON owners.PetID = pets.PetID WHERE PetID = 'x'",  # two tables have PetID
    ):
        assert match_values(sql, engine, PETS) == (sql, [])


def test_unqualified_columns_resolve_to_the_joined_table_that_has_them(engine: Engine) -> None:
    sql, changes = match_values("SELECT name FROM owners JOIN pets ON owners.PetID = pets.PetID WHERE PetType = 'Dog' AND name = 'ana'", engine, PETS)
    assert changes == ["'Dog' -> 'dog'", "'ana' -> 'Ana'"] and sql.endswith("WHERE PetType = 'dog' AND name = 'Ana'")


def test_a_literal_only_another_column_holds_moves_the_comparison_there(engine: Engine) -> None:
    sql, changes = match_values("SELECT PetType FROM pets AS T1 JOIN owners AS T2 ON T1.PetID = T2.PetID WHERE T1.PetType = 'ANA'", engine, PETS)
    assert sql == "SELECT PetType FROM pets AS T1 JOIN owners AS T2 ON T1.PetID = T2.PetID WHERE T2.name = 'Ana'"
    assert changes == ["T1.PetType = 'ANA' -> T2.name = 'Ana'"]
    # in no column, or in an IN list: left as written
    for kept in ("SELECT weight FROM pets WHERE PetType = 'fish'", "SELECT weight FROM pets WHERE PetType IN ('Ana', 'dog')"):
        assert match_values(kept, engine, PETS) == (kept, [])


@pytest.fixture()
def keyed(tmp_path: Path) -> Engine:
    """A key table and a table that refers to it, with a name stored in two columns of the key table."""
    return _database(
        tmp_path / "world.sqlite",
        "CREATE TABLE country (Code TEXT PRIMARY KEY, Name TEXT, LocalName TEXT)",
        "CREATE TABLE spoken (CountryCode TEXT REFERENCES country (Code), Language TEXT)",
        "INSERT INTO country VALUES ('ABW', 'Aruba', 'Aruba'), ('NLD', 'Netherlands', 'Nederland')",
        "INSERT INTO spoken VALUES ('ABW', 'Papiamento'), ('NLD', 'Dutch')",
    )


KEYED = {"country": ["Code", "Name", "LocalName"], "spoken": ["CountryCode", "Language"]}
LINKED = Schema(KEYED, [("spoken", "CountryCode", "country", "Code")])


def test_a_key_compared_with_a_name_looks_the_name_up_where_the_key_refers(keyed: Engine) -> None:
    sql, changes = match_values("SELECT Language FROM spoken AS T1 WHERE T1.CountryCode = 'aruba'", keyed, LINKED)
    assert sql == "SELECT Language FROM spoken AS T1 WHERE T1.CountryCode IN (SELECT Code FROM country WHERE Name = 'Aruba')"
    assert changes == ["T1.CountryCode = 'aruba' -> T1.CountryCode IN (SELECT Code FROM country WHERE Name = 'Aruba')"]
    sql, _ = match_values("SELECT Language FROM spoken WHERE CountryCode <> 'Nederland'", keyed, LINKED)
    assert sql == "SELECT Language FROM spoken WHERE NOT CountryCode IN (SELECT Code FROM country WHERE LocalName = 'Nederland')"
    with keyed.connect() as conn:
        assert conn.exec_driver_sql(sql).scalars().all() == ["Papiamento"]


def test_a_key_keeps_its_comparison_when_the_name_is_nowhere_or_there_is_no_foreign_key(keyed: Engine) -> None:
    for kept in ("SELECT Language FROM spoken WHERE CountryCode = 'ABW'", "SELECT Language FROM spoken WHERE CountryCode = 'Atlantis'"):
        assert match_values(kept, keyed, LINKED) == (kept, [])
    unlinked = "SELECT Language FROM spoken WHERE CountryCode = 'Aruba'"
    assert match_values(unlinked, keyed, Schema(KEYED)) == (unlinked, [])


def test_a_key_the_question_does_not_give_is_looked_up_by_the_name_it_gives(keyed: Engine) -> None:
    guessed = "SELECT Language FROM spoken AS T1 WHERE T1.CountryCode = 'ABW'"
    sql, changes = match_values(guessed, keyed, LINKED, question="Which languages are spoken in the netherlands?")
    assert sql == "SELECT Language FROM spoken AS T1 WHERE T1.CountryCode IN (SELECT Code FROM country WHERE Name = 'Netherlands')"
    assert changes == [f"T1.CountryCode = 'ABW' -> {sql.split('WHERE ', 1)[1]}"]
    with keyed.connect() as conn:
        assert conn.exec_driver_sql(sql).scalars().all() == ["Dutch"]
    # the key is the question's own, or the question names nothing the key refers to: left as written
    for question in ("Which languages are spoken in country abw?", "Which languages are spoken in the largest country?"):
        assert match_values(guessed, keyed, LINKED, question=question) == (guessed, [])
