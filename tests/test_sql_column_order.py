"""The SELECT's columns in the order the question names them: aggregates and columns move past each other, and
nothing moves where the question does not place every column."""

from __future__ import annotations

import pytest

from engines.sql_column_order import order_columns

MOVED = "the columns in the order the question names them"


@pytest.mark.parametrize(
    ("question", "written", "ordered"),
    [
        ("List the maximum weight and pet type.", "SELECT PetType, MAX(weight) FROM Pets GROUP BY PetType",
         "SELECT MAX(weight), PetType FROM Pets GROUP BY PetType"),
        ("Count the number of employees for each city.", "SELECT city, COUNT(*) FROM employee GROUP BY city",
         "SELECT COUNT(*), city FROM employee GROUP BY city"),
        # StuID shares "id" with PetID; it is still placed by "ids", after "how many".
        ("How many pets does each student have? List their ids.", "SELECT T1.StuID, COUNT(T1.PetID) FROM Has_Pet AS T1 GROUP BY T1.StuID",
         "SELECT COUNT(T1.PetID), T1.StuID FROM Has_Pet AS T1 GROUP BY T1.StuID"),
        ("What is the average and maximum age for each pet type?", "SELECT PetType, AVG(pet_age), MAX(pet_age) FROM Pets GROUP BY PetType",
         "SELECT AVG(pet_age), MAX(pet_age), PetType FROM Pets GROUP BY PetType"),
    ],
)
def test_aggregates_and_columns_take_the_questions_order(question: str, written: str, ordered: str) -> None:
    assert order_columns(question, written) == (ordered, [MOVED])


@pytest.mark.parametrize(
    ("question", "written"),
    [
        # Already in the question's order.
        ("Show all countries and the number of singers in each country.", "SELECT Country, COUNT(*) FROM singer GROUP BY Country"),
        # The continent is named first as the group, the id is asked for first: columns keep their written order.
        ("For each continent, list its id, name, and how many countries it has?",
         "SELECT T1.ContId, T1.Continent, COUNT(*) FROM continents AS T1 JOIN countries AS T2 ON T1.ContId = T2.Continent GROUP BY T1.ContId"),
        # A column the question does not name ("fname" is no word of it): nothing is placed.
        ("Give each student's name and the number of pets.", "SELECT COUNT(*), Fname FROM Student GROUP BY Fname"),
        # ORDER BY 2 names a place in the SELECT.
        ("List the maximum weight and pet type.", "SELECT PetType, MAX(weight) FROM Pets GROUP BY PetType ORDER BY 2"),
        # A Chinese question cannot name English columns.
        ("每种宠物的最大体重是多少？", "SELECT PetType, MAX(weight) FROM Pets GROUP BY PetType"),
        ("Not SQL", "SELEC nothing FROM"),
    ],
)
def test_left_alone_where_the_question_does_not_place_every_column(question: str, written: str) -> None:
    assert order_columns(question, written) == (written, [])
