"""Misplaced table qualifiers are moved only where the table that has the column is unambiguous."""

from __future__ import annotations

from engines.sql_aliases import requalify

COLUMNS = {
    "singer": {"singer_id", "name", "age", "country"},
    "singer_in_concert": {"singer_id", "concert_id"},
    "concert": {"concert_id", "name", "year"},
}


def test_a_column_on_the_wrong_alias_moves_to_the_table_that_has_it() -> None:
    sql, moved = requalify("SELECT T2.age FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id", COLUMNS)
    assert sql == "SELECT T1.age FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id"
    assert moved == ["T2.age -> T1.age"]


def test_a_column_two_joined_tables_have_is_left_alone() -> None:
    sql = "SELECT T2.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id JOIN concert AS T3 ON T2.concert_id = T3.concert_id"
    assert requalify(sql, COLUMNS) == (sql, [])


def test_right_queries_subqueries_and_unparsable_text_are_unchanged() -> None:
    for sql in (
        "SELECT name FROM singer WHERE age > (SELECT AVG(age) FROM singer)",
        "SELECT singer.name FROM singer_in_concert JOIN singer ON singer.singer_id = singer_in_concert.singer_id",
        "SELECT T1.nmae FROM singer AS T1",  # no table has it: the database's error goes back to the model
        "SELEC name FROM",
    ):
        assert requalify(sql, COLUMNS) == (sql, [])


def test_each_subquery_is_fixed_in_its_own_scope() -> None:
    sql, moved = requalify("SELECT name FROM singer WHERE singer_id IN (SELECT T1.singer_id FROM concert AS T2 JOIN singer_in_concert AS T1 ON T1.concert_id = T2.concert_id WHERE T1.year = 2014)", COLUMNS)
    assert moved == ["T1.year -> T2.year"] and "WHERE T2.year = 2014" in sql
