"""Question-guided query shapes: each rewrite checked by the rows it returns on a real SQLite database, and left
alone where the question or the query does not call for it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engines.sql.schema import Schema
from engines.sql.shapes import reshape

PETS = Schema(
    columns={"Student": ["StuID", "Fname", "Age"], "Has_Pet": ["StuID", "PetID"], "Pets": ["PetID", "PetType", "weight"]},
    links=[("Has_Pet", "StuID", "Student", "StuID"), ("Has_Pet", "PetID", "Pets", "PetID")],
)
JOINED = "FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID JOIN Pets AS T3 ON T2.PetID = T3.PetID"


@pytest.fixture()
def pets(tmp_path: Path) -> sqlite3.Connection:
    """Ann has a cat and a dog, Bob a cat, Cai a dog, Dee no pet."""
    db = sqlite3.connect(tmp_path / "pets.sqlite")
    db.executescript(
        "CREATE TABLE Student (StuID INTEGER PRIMARY KEY, Fname TEXT, Age INTEGER);"
        "CREATE TABLE Pets (PetID INTEGER PRIMARY KEY, PetType TEXT, weight REAL);"
        "CREATE TABLE Has_Pet (StuID INTEGER REFERENCES Student(StuID), PetID INTEGER REFERENCES Pets(PetID));"
        "INSERT INTO Student VALUES (1, 'Ann', 20), (2, 'Bob', 21), (3, 'Cai', 22), (4, 'Dee', 23);"
        "INSERT INTO Pets VALUES (1, 'cat', 4.0), (2, 'dog', 10.0), (3, 'cat', 6.0), (4, 'dog', 20.0);"
        "INSERT INTO Has_Pet VALUES (1, 1), (1, 2), (2, 3), (3, 4);"
    )
    return db


def _names(db: sqlite3.Connection, sql: str) -> list:
    return sorted(db.execute(sql).fetchall())


def test_both_a_and_b_is_an_intersect_of_the_two_values(pets: sqlite3.Connection) -> None:
    written = f"SELECT T1.Fname {JOINED} WHERE T3.PetType IN ('cat', 'dog')"
    sql, notes = reshape("Find the first name of students who have both cat and dog pets.", written, PETS)
    assert _names(pets, written) == [("Ann",), ("Ann",), ("Bob",), ("Cai",)] and _names(pets, sql) == [("Ann",)]
    assert "INTERSECT" in sql and notes == ["'both A and B' read as an INTERSECT of the two values"]


def test_two_values_joined_by_and_on_a_joined_table_are_an_intersect_without_both(pets: sqlite3.Connection) -> None:
    written = f"SELECT T1.Fname {JOINED} WHERE T3.PetType IN ('cat', 'dog')"
    sql, notes = reshape("Which students have a pet of type 'cat' and a pet of type 'dog'?", written, PETS)
    assert _names(pets, sql) == [("Ann",)] and notes == ["'both A and B' read as an INTERSECT of the two values"]


def test_two_values_compared_with_or_are_read_as_the_same_list(pets: sqlite3.Connection) -> None:
    written = f"SELECT T1.Fname {JOINED} WHERE T3.PetType = 'cat' OR T3.PetType = 'dog'"
    sql, notes = reshape("Which students have a pet of type 'cat' and a pet of type 'dog'?", written, PETS)
    assert _names(pets, written) == [("Ann",), ("Ann",), ("Bob",), ("Cai",)] and _names(pets, sql) == [("Ann",)]
    assert notes == ["'both A and B' read as an INTERSECT of the two values"]


def test_how_many_counts_the_ids_a_query_sums(pets: sqlite3.Connection) -> None:
    sql, notes = reshape("How many pets are there in total?", "SELECT SUM(PetID) FROM Pets", PETS)
    assert pets.execute(sql).fetchall() == [(4,)] and notes == ["'how many' read as a count of the ids summed"]


def test_does_not_have_is_not_in_the_rows_that_have_it(pets: sqlite3.Connection) -> None:
    written = f"SELECT T1.Fname, T1.Age {JOINED} WHERE T3.PetType <> 'cat'"
    sql, notes = reshape("Which students do not own a cat, and how old are they?", written, PETS)
    assert _names(pets, written) == [("Ann", 20), ("Cai", 22)]  # Ann owns a cat as well as the dog
    assert _names(pets, sql) == [("Cai", 22), ("Dee", 23)] and notes == ["'does not have' read as NOT IN the rows that have it"]


def test_has_b_but_not_a_keeps_the_join_and_the_other_condition(pets: sqlite3.Connection) -> None:
    written = f"SELECT T1.Fname {JOINED} WHERE T3.PetType = 'dog' AND T3.PetType <> 'cat'"
    sql, _ = reshape("Who has a dog but does not have a cat?", written, PETS)
    assert _names(pets, written) == [("Ann",), ("Cai",)] and _names(pets, sql) == [("Cai",)]


def test_for_each_x_groups_by_the_column_named_like_x(pets: sqlite3.Connection) -> None:
    sql, notes = reshape("What is the average weight for each type of pet?", "SELECT AVG(weight) FROM Pets", PETS)
    assert _names(pets, sql) == [(5.0, "cat"), (15.0, "dog")] and notes == ["'for each X' grouped by X"]


def test_grouped_aggregates_show_the_columns_they_are_grouped_by(pets: sqlite3.Connection) -> None:
    written = "SELECT MAX(weight) FROM Pets GROUP BY PetType"
    sql, notes = reshape("What is the heaviest weight of a pet of each type?", written, PETS)
    assert _names(pets, written) == [(6.0,), (20.0,)] and _names(pets, sql) == [(6.0, "cat"), (20.0, "dog")]
    assert notes == ["the grouping columns shown beside the aggregates"]


def test_a_join_nothing_reads_of_a_table_the_question_does_not_name_is_dropped(pets: sqlite3.Connection) -> None:
    written = "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID JOIN Pets AS T3 ON T2.PetID = T3.PetID"
    sql, notes = reshape("What are the first names of the students?", written, PETS)
    assert _names(pets, written) == [("Ann",), ("Ann",), ("Bob",), ("Cai",)]  # Ann once per pet, Dee (no pet) never
    assert _names(pets, sql) == [("Ann",), ("Bob",), ("Cai",), ("Dee",)]
    assert notes == ["dropped the joins nothing reads of tables the question does not name"]


def test_a_joined_table_named_only_by_words_another_table_shares_is_dropped(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "concerts.sqlite")
    db.executescript(
        "CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Country TEXT, Age INTEGER);"
        "CREATE TABLE singer_in_concert (concert_ID INTEGER, Singer_ID INTEGER REFERENCES singer(Singer_ID));"
        "INSERT INTO singer VALUES (1, 'France', 30), (2, 'Netherlands', 40);"
        "INSERT INTO singer_in_concert VALUES (1, 1), (2, 1);"
    )
    schema = Schema(
        {"singer": ["Singer_ID", "Country", "Age"], "singer_in_concert": ["concert_ID", "Singer_ID"]},
        [("singer_in_concert", "Singer_ID", "singer", "Singer_ID")],
    )
    written = "SELECT DISTINCT T1.Country FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID WHERE T1.Age > 20"
    sql, notes = reshape("What are the different countries with singers above age 20?", written, schema)
    assert _names(db, written) == [("France",)] and _names(db, sql) == [("France",), ("Netherlands",)]
    assert notes == ["dropped the joins nothing reads of tables the question does not name"]
    assert reshape("Which countries have singers who sang in a concert?", written, schema) == (written, [])  # "concert" is its own


def test_a_ranking_by_an_aggregate_over_a_join_is_grouped_by_the_columns_shown(pets: sqlite3.Connection) -> None:
    written = "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID ORDER BY COUNT(*) DESC LIMIT 1"
    sql, notes = reshape("Which student has the most pets?", written, PETS)
    with pytest.raises(sqlite3.OperationalError, match="misuse of aggregate"):
        pets.execute(written)
    assert pets.execute(sql).fetchall() == [("Ann",)]
    assert notes == ["a ranking by an aggregate grouped by the columns shown"]


UNREAD_JOIN = "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID"


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        ("Which students have a cat or a dog?", f"SELECT T1.Fname {JOINED} WHERE T3.PetType IN ('cat', 'dog')"),  # no "both"
        ("Which students have a cat or a dog?", f"SELECT T1.Fname {JOINED} WHERE T3.PetType = 'cat' OR T3.PetType = 'dog'"),
        ("Students with a cat and a dog, or aged 20?", f"SELECT T1.Fname {JOINED} WHERE T3.PetType = 'cat' OR T1.Age = 20"),
        ("What is the total weight of the pets?", "SELECT SUM(weight) FROM Pets"),  # a sum of a measure, not of ids
        ("How many kilograms do the pets weigh?", "SELECT SUM(weight) FROM Pets"),
        ("Which pets are a cat and a dog?", "SELECT PetID FROM Pets AS T3 WHERE T3.PetType IN ('cat', 'dog')"),  # one value per pet
        # each Has_Pet row joins one pet: "cats and dogs" are either
        (
            "Which pet owners have cat and dog pets?",
            "SELECT T1.StuID FROM Has_Pet AS T1 JOIN Pets AS T2 ON T1.PetID = T2.PetID WHERE T2.PetType IN ('cat', 'dog')",
        ),
        (
            "Which students with pets are 20 and which 21?",
            "SELECT T1.Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID WHERE T1.Age IN (20, 21)",
        ),
        ("Students who have both a cat, a dog and a bird?", f"SELECT T1.Fname {JOINED} WHERE T3.PetType IN ('cat', 'dog', 'bird')"),
        ("Which pets are not cats, and whose are they?", f"SELECT T1.Fname, T3.PetType {JOINED} WHERE T3.PetType <> 'cat'"),  # reads T3
        ("Which students do not own a cat?", "SELECT Fname FROM Student WHERE Age <> 20"),  # no join to undo
        ("What is the average weight for each owner?", "SELECT AVG(weight) FROM Pets"),  # no column named like it
        ("What is the average weight of the pets?", "SELECT AVG(weight) FROM Pets"),
        ("Count the pets for each type.", "SELECT PetType, COUNT(*) FROM Pets GROUP BY PetType"),  # already grouped
        ("Which type has the most pets?", "SELECT COUNT(*) FROM Pets GROUP BY PetType ORDER BY COUNT(*) DESC LIMIT 1"),
        ("Which type has the most pets?", "SELECT PetType FROM Pets ORDER BY COUNT(*) DESC LIMIT 1"),  # no join: each group one row
        ("Which students have a pet?", UNREAD_JOIN),  # the question names the joined table: the join picks the rows
        ("How many students are there?", "SELECT COUNT(*) FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID"),
        ("What are the students' names?", "SELECT Fname FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID"),  # unqualified
        ("学生的名字是什么？", UNREAD_JOIN),  # a Chinese question cannot name an English table
        ("both", "SELEC nothing"),  # unparsable: the guard refuses it later with the parser's message
    ],
)
def test_a_query_its_question_does_not_call_to_change_is_left_as_written(question: str, sql: str) -> None:
    assert reshape(question, sql, PETS) == (sql, [])
