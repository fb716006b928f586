"""The SQL path on a real PostgreSQL server (a throwaway cluster on 127.0.0.1, `postgres` in conftest.py).

The demo shop and two Spider databases are copied into it. Hostile statements (written by `ScriptedSQLWriter`,
a scripted LLM double, so that the "model" writes exactly them) and hostile questions to the real model change
no table: a checksum of every table's rows, taken over a separate superuser connection, is the same before and
after. Behind the guard, the server itself refuses writes (READ ONLY transactions) and stops long statements
(statement_timeout).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import DBAPIError

from engines.settings import DATA_DIR
from engines.sources import SqlSource
from engines.sql.database import DatabaseError, GuardedSQLDatabase, open_engine
from engines.sql.knowledge import open_knowledge_base
from evals.datasets import EVAL_DIR
from evals.postgres import Cluster, copy_sqlite
from tests.conftest import make_settings
from tests.engines.sql.test_guard import POSTGRES_HOSTILE
from tests.engines.sql.test_safety import BOMBS, HOSTILE_QUESTIONS, HOSTILE_SQL, _ask
from tests.scripted_llm import ScriptedSQLWriter

SHOP = DATA_DIR / "demo" / "shop.sqlite"
SPIDER = EVAL_DIR / "spider" / "database"
BUDGET_S = 0.5


@pytest.fixture(scope="module")
def shop_url(postgres: Cluster) -> str:
    url = postgres.create_database("shop")
    copy_sqlite(SHOP, url)
    return url


def _checksums(url: str) -> dict[str, str]:
    """md5 of every table's rows in a fixed order, read by the superuser outside the product's engine."""
    engine = create_engine(url)
    with engine.connect() as conn:
        tables = inspect(conn).get_table_names()
        sums = {t: conn.execute(text(f"SELECT md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM \"{t}\" r")).scalar() for t in tables}
    engine.dispose()
    return sums


@pytest.fixture(scope="module")
def database(shop_url: str) -> GuardedSQLDatabase:
    return GuardedSQLDatabase(open_engine(SqlSource(name="shop", kind="sql", url=shop_url), budget_s=BUDGET_S), row_limit=100)


@pytest.fixture(scope="module")
def knowledge(tmp_path_factory: pytest.TempPathFactory, database: GuardedSQLDatabase, embed):
    return open_knowledge_base("shop", database.engine, None, make_settings(tmp_path_factory.mktemp("kb")), embed)


def test_the_server_refuses_writes_and_stops_long_statements_behind_the_guard(database, shop_url: str) -> None:
    before = _checksums(shop_url)
    with database.engine.connect() as conn, pytest.raises(DBAPIError, match="read-only transaction"):
        conn.exec_driver_sql("DELETE FROM orders")
    with database.engine.connect() as conn, pytest.raises(DBAPIError, match="statement timeout"):
        conn.exec_driver_sql("SELECT pg_sleep(5)")
    assert _checksums(shop_url) == before


@pytest.mark.parametrize("sql", HOSTILE_SQL + [sql for sql, _ in POSTGRES_HOSTILE])
def test_hostile_model_sql_is_refused_and_changes_no_table(sql: str, database, knowledge, shop_url: str) -> None:
    before = _checksums(shop_url)
    result = _ask(database, knowledge, ScriptedSQLWriter(sqls=[sql]), "How many customers are there?")
    assert _checksums(shop_url) == before
    assert all(a["error"] for a in result["attempts"]) and result["result"] == []
    assert "refused by rule" in result["attempts"][0]["error"], result["attempts"][0]
    assert result["answer"].startswith("I could not get an answer from the database")


@pytest.mark.parametrize("sql", BOMBS)
def test_runaway_queries_end_at_the_statement_timeout(sql: str, database, knowledge, shop_url: str) -> None:
    before = _checksums(shop_url)
    result = _ask(database, knowledge, ScriptedSQLWriter(sqls=[sql]), "How many orders are there?")
    assert _checksums(shop_url) == before
    assert [a["kind"] for a in result["attempts"]] == ["timeout"]  # stopped by the server, and not retried
    assert "statement timeout" in result["answer"]


@pytest.mark.parametrize("question", HOSTILE_QUESTIONS)
def test_hostile_questions_to_the_real_model_change_no_table(question: str, database, knowledge, llm, shop_url: str) -> None:
    before = _checksums(shop_url)
    result = _ask(database, knowledge, llm, question)
    assert _checksums(shop_url) == before
    assert result["answer"].strip()
    for attempt in (a for a in result["attempts"] if not a["error"]):
        assert attempt["ran"].lstrip().upper().startswith(("SELECT", "WITH"))


def test_the_real_model_answers_from_postgres(database, knowledge, llm) -> None:
    result = _ask(database, knowledge, llm, "How many customers are older than 30?")
    assert result["result"] == [(7,)] and "7" in result["answer"]
    assert '"' not in result["sql_query"] or result["sql_query"].islower()  # lower-case names, as Postgres folds them


@pytest.mark.parametrize(
    ("db", "question", "expected"),
    [
        ("concert_singer", "How many singers do we have?", [(6,)]),
        ("world_1", "What is the population of the country named Aruba?", [(103000,)]),
    ],
)
def test_spider_copies_answer_through_a_sources_file(db: str, question: str, expected: list, postgres: Cluster, tmp_path: Path, llm, embed) -> None:
    from tools.build import build_router

    url = postgres.create_database(db.lower())
    copy_sqlite(SPIDER / db / f"{db}.sqlite", url)
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - name: {db}\n    kind: sql\n    url: {url}\n")
    router = build_router(make_settings(tmp_path / "state"), sources, llm=llm, embed=embed)
    trace = router.ask(question)
    assert trace.route.chosen == db and trace.rows == [list(r) for r in expected], trace.sql_attempts


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda c: c.url("shop", password="wrong"), "password authentication failed"),
        (lambda c: c.url("no_such_database"), 'database "no_such_database" does not exist'),
        (lambda c: c.url("shop").replace(f":{c.port}/", ":9/"), "connection"),  # nothing listens on the discard port
        (lambda c: c.url("shop").replace("127.0.0.1", "no-such-host.invalid"), "no-such-host.invalid"),
        (lambda c: "postgresql+psycopg//missing-colon", "not a SQLAlchemy database URL"),
    ],
)
def test_bad_server_urls_are_clear_errors_naming_the_source(change, reason: str, postgres: Cluster, shop_url: str) -> None:
    with pytest.raises(DatabaseError, match="^source 'shop': ") as err:
        open_engine(SqlSource(name="shop", kind="sql", url=change(postgres)))
    assert reason in str(err.value)


def test_the_cli_names_the_source_of_a_wrong_password_and_exits_2(postgres: Cluster, shop_url: str, cli_env: dict, tmp_path: Path) -> None:
    from tests.ui.test_cli import run

    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - name: shop\n    kind: sql\n    url: {postgres.url('shop', password='wrong')}\n")
    before = _checksums(shop_url)
    result = run(cli_env, "ingest", "--sources", str(sources))
    assert result.returncode == 2 and "source 'shop'" in result.stderr and "password authentication failed" in result.stderr
    assert "wrong" not in result.stderr  # the URL, password and all, is not echoed
    assert _checksums(shop_url) == before


def test_mixed_case_names_are_found_in_their_stored_case(postgres: Cluster, embed, tmp_path: Path) -> None:
    """Tables and columns created quoted ("Customers", "FullName"), as ORMs create them; the scripted double
    writes them unquoted and in other cases, as a model does."""
    url = postgres.create_database("crm")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text('CREATE TABLE "Customers" ("Id" int PRIMARY KEY, "FullName" text, "Age" int)'))
        conn.execute(text("INSERT INTO \"Customers\" VALUES (1, 'Ada', 36), (2, 'Bob', 28), (3, 'Cy', 41)"))
    engine.dispose()
    database = GuardedSQLDatabase(open_engine(SqlSource(name="crm", kind="sql", url=url)), row_limit=100)
    knowledge = open_knowledge_base("crm", database.engine, None, make_settings(tmp_path), embed)
    writer = ScriptedSQLWriter(sqls=["SELECT fullname FROM customers WHERE AGE > 30 ORDER BY Fullname"])
    result = _ask(database, knowledge, writer, "Which customers are older than 30?")
    assert result["result"] == [("Ada",), ("Cy",)], result["attempts"]
    assert '"Customers"' in result["sql_query"] and '"FullName"' in result["sql_query"]


def test_sqlites_double_quoted_strings_are_strings_on_postgres(database, knowledge) -> None:
    """`"Berlin"` is a string to SQLite (no such column) and a column to PostgreSQL; LIKE's `%` is no placeholder."""
    writer = ScriptedSQLWriter(sqls=['SELECT count(*) FROM customers WHERE city = "Berlin" OR name LIKE "%Martin%"'])
    result = _ask(database, knowledge, writer, "How many customers live in Berlin or are called Martin?")
    expected = database.run_sql("SELECT count(*) FROM customers WHERE city = 'Berlin' OR name LIKE '%Martin%'")[1]["result"]
    assert result["result"] == expected and expected[0][0] > 0, result["attempts"]
