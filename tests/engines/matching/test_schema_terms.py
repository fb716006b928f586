"""Schema linking: schema words re-rank SQL sources among themselves; a stored value a question names lifts its source."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata
from sqlalchemy import create_engine

from engines.matching.schema_terms import SchemaLinker, named_phrases, schema_vocabulary, split_name, terms
from engines.routing.selectors import ProfileEmbeddingSelector


def _database(path: Path, script: str):
    with sqlite3.connect(path) as conn:
        conn.executescript(script)
    return create_engine(f"sqlite:///{path}")


def _linker(tmp_path: Path, term_weight: float = 0.03, value_bonus: float = 0.02) -> SchemaLinker:
    flights = _database(
        tmp_path / "flights.sqlite",
        "CREATE TABLE airports (AirportCode TEXT, City TEXT); INSERT INTO airports VALUES ('ABZ', 'Aberdeen'), ('ASY', 'Ashley');"
        "CREATE TABLE flights (FlightNo INTEGER, SourceAirport TEXT, DestAirport TEXT);",
    )
    pets = _database(
        tmp_path / "pets.sqlite", "CREATE TABLE pets (PetID INTEGER, PetType TEXT, pet_age INTEGER); INSERT INTO pets VALUES (1, 'dog', 3);"
    )
    return SchemaLinker({"flights": schema_vocabulary(flights), "pets": schema_vocabulary(pets)}, term_weight, value_bonus)


def test_names_become_words() -> None:
    assert split_name("SurfaceArea") == "surface area"
    assert split_name("GNPOld") == "gnp old"
    assert split_name("pet_age") == "pet age"
    assert terms("How many countries have the largest populations?") == {"mani", "countri", "largest", "popul"}


def test_named_phrases_skip_the_first_word_and_stopwords() -> None:
    phrases = named_phrases("How many flights fly from Aberdeen to Ashley?")
    assert {"aberdeen", "ashley", "aberdeen to ashley"} <= phrases
    assert "how" not in phrases and "how many" not in phrases


def test_vocabulary_holds_schema_words_and_text_values(tmp_path: Path) -> None:
    linker = _linker(tmp_path)
    assert linker.named_values("How many flights fly from Aberdeen to Ashley?") == {"flights": {"aberdeen", "ashley"}, "pets": set()}
    shares = linker.term_shares("What is the average age of the pets?")
    assert shares["pets"] > shares["flights"] == 0.0


def test_schema_words_rerank_sql_sources_without_raising_the_best(tmp_path: Path) -> None:
    linker = _linker(tmp_path, value_bonus=0.0)
    scores = {"flights": 0.80, "pets": 0.79, "web": 0.81}
    adjusted = linker.adjust("What is the average pet age for each pet type?", scores)
    assert set(adjusted) == {"flights", "pets"}
    assert adjusted["pets"] > adjusted["flights"]
    assert max(adjusted.values()) == max(scores["flights"], scores["pets"])  # a shared word cannot outbid the web


def test_a_named_value_lifts_its_database(tmp_path: Path) -> None:
    linker = _linker(tmp_path, term_weight=0.0)
    adjusted = linker.adjust("How many flights fly from Aberdeen to Ashley?", {"flights": 0.78, "pets": 0.70})
    assert abs(adjusted["flights"] - 0.80) < 1e-9 and adjusted["pets"] == 0.70


def test_no_sql_sources_means_no_change(tmp_path: Path) -> None:
    assert SchemaLinker({}, 0.03, 0.02).adjust("anything", {"web": 0.8}) == {}


def test_the_route_reason_names_the_stored_value(tmp_path: Path, embed) -> None:
    choices = [
        ToolMetadata(name="flights", description="SQL database of airports and flights."),
        ToolMetadata(name="pets", description="SQL database of pets."),
    ]
    selector = ProfileEmbeddingSelector(embed, {}, linker=_linker(tmp_path))
    result = selector.select(choices, QueryBundle("How many flights leave from Aberdeen?"))
    assert result.ind == 0 and "'aberdeen'" in result.reason


def test_what_only_another_database_has_is_what_takes_a_follow_up_there(tmp_path: Path) -> None:
    linker = _linker(tmp_path)
    assert "aberdeen" in linker.names_only_in("And those from Aberdeen?", "flights", "pets")
    assert linker.names_only_in("And their ages?", "flights", "pets") == set()  # nothing flights has that pets lacks
    assert "pet" in linker.names_only_in("What about their pets?", "pets", "flights")
    assert linker.names_only_in("其中哪些至少有两个？", "pets", "flights") == set()  # Chinese names no schema word
    assert linker.names_only_in("And their pets?", "pets", "no such source") == set()


def test_the_words_of_a_request_take_no_follow_up_elsewhere(tmp_path: Path) -> None:
    list_db = _database(tmp_path / "cars.sqlite", "CREATE TABLE model_list (ModelId INTEGER, Maker TEXT);")
    pets = _database(tmp_path / "pets2.sqlite", "CREATE TABLE pets (PetID INTEGER, PetType TEXT);")
    linker = SchemaLinker({"cars": schema_vocabulary(list_db), "pets": schema_vocabulary(pets)}, 0.03, 0.02)
    assert linker.names_only_in("List all the other ids.", "cars", "pets") == set()
    assert linker.names_only_in("Which makers are there?", "cars", "pets") == {"maker"}


def test_a_follow_up_does_not_leave_for_a_word_inside_a_value_the_previous_database_holds(tmp_path: Path) -> None:
    world = _database(
        tmp_path / "world.sqlite", "CREATE TABLE country (Name TEXT, Continent TEXT); INSERT INTO country VALUES ('Peru', 'South America');"
    )
    cars = _database(
        tmp_path / "cars.sqlite", "CREATE TABLE continents (ContId INTEGER, Continent TEXT); INSERT INTO continents VALUES (1, 'america');"
    )
    linker = SchemaLinker({"world": schema_vocabulary(world), "cars": schema_vocabulary(cars)}, 0.03, 0.02)
    assert linker.names_only_in("And in South America?", "cars", "world") == set()
    assert linker.names_only_in("And in America?", "cars", "world") == {"america"}
