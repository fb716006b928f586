"""Schema-guided SQL fixes: made only where the schema leaves one reading, never otherwise."""

from __future__ import annotations

from engines.sql.fixes import fix_columns
from engines.sql.schema import Schema

SINGERS = Schema(
    columns={
        "singer": ["Singer_ID", "Name", "Age", "Country"],
        "singer_in_concert": ["Singer_ID", "concert_ID"],
        "concert": ["concert_ID", "Name", "Year"],
    },
    links=[("singer_in_concert", "Singer_ID", "singer", "Singer_ID"), ("singer_in_concert", "concert_ID", "concert", "concert_ID")],
)
POKER = Schema(
    columns={"people": ["People_ID", "Name", "Height"], "poker_player": ["Poker_Player_ID", "People_ID", "Earnings", "Money_Rank"]},
    links=[("poker_player", "People_ID", "people", "People_ID")],
)


def test_a_column_on_the_wrong_alias_moves_to_the_table_that_has_it() -> None:
    sql, fixes = fix_columns("SELECT T2.Age, T2.concert_ID FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID", SINGERS)
    assert sql == "SELECT T1.Age, T2.concert_ID FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    assert fixes == ["T2.Age -> T1.Age"]


def test_a_column_two_joined_tables_have_is_left_alone() -> None:
    sql = "SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID JOIN concert AS T3 ON T2.concert_ID = T3.concert_ID"
    assert fix_columns(sql, SINGERS) == (sql, [])


def test_a_forgotten_join_is_added_on_the_only_foreign_key() -> None:
    sql, fixes = fix_columns("SELECT Money_Rank FROM poker_player ORDER BY Height DESC LIMIT 1", POKER)
    assert (
        sql
        == "SELECT poker_player.Money_Rank FROM poker_player JOIN people ON poker_player.People_ID = people.People_ID ORDER BY people.Height DESC LIMIT 1"
    )
    assert fixes == ["joined people ON poker_player.People_ID = people.People_ID"]


def test_a_forgotten_join_inside_a_subquery_is_added_there() -> None:
    sql, _ = fix_columns("SELECT Name FROM singer WHERE Singer_ID NOT IN (SELECT Singer_ID FROM singer_in_concert WHERE Year = 2014)", SINGERS)
    assert (
        "(SELECT singer_in_concert.Singer_ID FROM singer_in_concert JOIN concert ON singer_in_concert.concert_ID = concert.concert_ID WHERE concert.Year = 2014)"
        in sql
    )
    assert sql.startswith("SELECT Name FROM singer WHERE")


def test_no_join_when_the_tables_are_not_linked_or_the_name_is_an_output_alias() -> None:
    for sql in (
        "SELECT Year FROM singer",  # concert has Year, but no key links it to singer directly
        "SELECT COUNT(*) AS total FROM singer ORDER BY total",
        "SELECT Name FROM singer WHERE Age > (SELECT AVG(Age) FROM singer)",
        "SELECT T1.nmae FROM singer AS T1",  # no table has it: the database's error goes back to the model
        "SELEC name FROM",
    ):
        assert fix_columns(sql, SINGERS) == (sql, [])


def test_a_table_joined_only_for_columns_it_lacks_is_dropped_and_a_used_one_kept() -> None:
    sql, fixes = fix_columns(
        "SELECT DISTINCT T2.Country FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID WHERE T1.Age > 20", SINGERS
    )
    assert sql == "SELECT DISTINCT T1.Country FROM singer AS T1 WHERE T1.Age > 20"
    assert fixes == ["T2.Country -> T1.Country", "dropped the join of singer_in_concert AS T2, which no column reads"]
    kept, _ = fix_columns(
        "SELECT T2.Age, COUNT(T2.concert_ID) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID GROUP BY T1.Singer_ID",
        SINGERS,
    )
    assert "JOIN singer_in_concert AS T2" in kept and kept.startswith("SELECT T1.Age, COUNT(T2.concert_ID)")


def test_a_join_under_an_aggregate_is_kept_as_its_rows_may_be_what_is_counted() -> None:
    sql, fixes = fix_columns(
        "SELECT COUNT(*) FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID WHERE T2.Country = 'France'", SINGERS
    )
    assert fixes == ["T2.Country -> T1.Country"] and "JOIN singer_in_concert AS T2" in sql


def test_a_column_one_more_join_away_is_read_through_the_only_key_to_its_table() -> None:
    sql, fixes = fix_columns("SELECT T1.Name, T2.Year FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID", SINGERS)
    assert sql == (
        "SELECT T1.Name, T3.Year FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
        "JOIN concert AS T3 ON T2.concert_ID = T3.concert_ID"
    )
    assert fixes == ["joined concert AS T3 ON T2.concert_ID = T3.concert_ID for T2.Year"]


def test_no_extra_join_when_two_tables_could_supply_the_column() -> None:
    sql = "SELECT T2.Name FROM singer_in_concert AS T2 WHERE T2.concert_ID = 1"  # singer and concert both have Name
    assert fix_columns(sql, SINGERS) == (sql, [])


def test_a_join_on_a_column_compared_with_itself_is_made_on_the_only_key() -> None:
    sql, fixes = fix_columns("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.Singer_ID = T2.Singer_ID", SINGERS)
    assert sql == "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    assert fixes == ["ON T2.Singer_ID = T2.Singer_ID compares a column with itself: joined on T1.Singer_ID = T2.Singer_ID"]
    # singer_in_concert has a key to both tables before it: which one was meant is not for a fix to guess
    ambiguous = "SELECT T1.Name FROM singer AS T1 JOIN concert AS T3 ON T3.Year > 2000 JOIN singer_in_concert AS T2 ON T2.Singer_ID = T2.Singer_ID"
    assert fix_columns(ambiguous, SINGERS) == (ambiguous, [])


MAKERS = Schema(
    columns={"countries": ["CountryId", "CountryName", "Continent"], "car_makers": ["Id", "Maker", "Country"]},
    links=[("car_makers", "Country", "countries", "CountryId")],
)


def test_a_join_on_columns_no_key_pairs_is_made_on_the_only_key() -> None:
    sql, fixes = fix_columns(
        "SELECT T1.CountryName FROM countries AS T1 JOIN car_makers AS T2 ON T1.Continent = T2.Country GROUP BY T1.CountryName", MAKERS
    )
    assert sql == "SELECT T1.CountryName FROM countries AS T1 JOIN car_makers AS T2 ON T1.CountryId = T2.Country GROUP BY T1.CountryName"
    assert fixes == ["ON T1.Continent = T2.Country pairs no foreign key: joined on T1.CountryId = T2.Country"]
    keyed = "SELECT T1.CountryName FROM countries AS T1 JOIN car_makers AS T2 ON T2.Country = T1.CountryId"
    assert fix_columns(keyed, MAKERS) == (keyed, [])
    # unqualified columns may belong to either table: not for a fix to guess
    bare = "SELECT CountryName FROM countries JOIN car_makers ON Continent = Country"
    assert fix_columns(bare, MAKERS) == (bare, [])


CARS = Schema(
    columns={"car_names": ["MakeId", "Model", "Make"], "cars_data": ["Id", "Horsepower", "Year"]},
    links=[("cars_data", "Id", "car_names", "MakeId")],
)


def test_a_join_key_named_as_in_the_other_table_is_joined_on_the_real_key() -> None:
    # cars_data has no MakeId: moving it to car_names leaves ON comparing car_names.MakeId with itself
    sql, fixes = fix_columns(
        "SELECT T2.Model FROM cars_data AS T1 JOIN car_names AS T2 ON T1.MakeId = T2.MakeId ORDER BY T1.Horsepower LIMIT 1", CARS
    )
    assert sql == "SELECT T2.Model FROM cars_data AS T1 JOIN car_names AS T2 ON T1.Id = T2.MakeId ORDER BY T1.Horsepower LIMIT 1"
    assert fixes == ["T1.MakeId -> T2.MakeId", "ON T2.MakeId = T2.MakeId compares a column with itself: joined on T1.Id = T2.MakeId"]
