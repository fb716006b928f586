"""The SQL path's parts: knowledge base, prompt, repair loop, and the real model on the demo shop."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from engines.settings import DATA_DIR
from engines.sources import SqlSource
from engines.sql.database import GuardedSQLDatabase, open_engine
from engines.sql.engine import TextToSQLQueryEngine, extract_sql
from engines.sql.knowledge import (
    Knowledge,
    KnowledgeFileError,
    SqlKnowledgeBase,
    example_node,
    file_entries,
    open_knowledge_base,
    schema_entries,
)
from engines.sql.prompts import knowledge_block, write_prompt
from engines.sql.repair import classify_error, closest_names
from engines.trace import RESULT
from tests.conftest import make_settings
from tests.scripted_llm import ScriptedFileWriter, ScriptedSQLWriter

SHOP = DATA_DIR / "demo" / "shop.sqlite"
SHOP_KNOWLEDGE = DATA_DIR / "demo" / "shop-knowledge.yaml"


def _attempts(response) -> list[dict]:
    """The engine's attempts as the trace's JSON shows them."""
    return [a.model_dump() for a in response.metadata[RESULT].attempts]


@pytest.fixture(scope="module")
def database() -> GuardedSQLDatabase:
    return GuardedSQLDatabase(open_engine(SqlSource(name="shop", kind="sql", path=SHOP)), row_limit=100)


@pytest.fixture(scope="module")
def knowledge(tmp_path_factory: pytest.TempPathFactory, database: GuardedSQLDatabase, embed) -> SqlKnowledgeBase:
    settings = make_settings(tmp_path_factory.mktemp("kb"))
    return open_knowledge_base("shop", database.engine, SHOP_KNOWLEDGE, settings, embed)


def test_schema_entries_hold_columns_keys_and_category_values(database: GuardedSQLDatabase) -> None:
    ddl = {n.metadata["table"]: n.get_content() for n in schema_entries(database.engine) if n.metadata["type"] == "ddl"}
    assert set(ddl) == {"customers", "orders", "products"}
    assert ddl["products"].startswith("CREATE TABLE products (\n\tid INTEGER,\n\tname TEXT NOT NULL,")
    assert "-- Values of products.category: 'electronics', 'furniture', 'food', 'stationery'" in ddl["products"]
    assert "Laptop Pro 14" not in ddl["products"]  # eight names in eight rows are not categories
    assert "FOREIGN KEY(customer_id) REFERENCES customers (id)" in ddl["orders"]


def test_refilling_adds_nothing_and_a_changed_file_replaces_its_entries(knowledge: SqlKnowledgeBase, database, tmp_path: Path) -> None:
    assert knowledge.sync("schema", schema_entries(database.engine)) == 0
    assert knowledge.sync("file", file_entries(SHOP_KNOWLEDGE)) == 0
    changed = tmp_path / "k.yaml"
    changed.write_text("descriptions:\n  - VIP = customers older than 40\n", encoding="utf-8")
    assert knowledge.sync("file", file_entries(changed)) == 1
    assert knowledge.retrieve("Who are the VIP customers?").examples == []  # the old file's examples are gone
    assert knowledge.sync("file", file_entries(SHOP_KNOWLEDGE)) > 1


def test_retrieval_groups_tables_descriptions_and_examples(knowledge: SqlKnowledgeBase) -> None:
    found = knowledge.retrieve("上海有哪些客户？")
    assert len(found.tables) == 3 and any("'Shanghai'" in d for d in found.descriptions)
    assert found.examples[0] == ("北京有哪些客户？", "SELECT name FROM customers WHERE city = 'Beijing'")
    prompt = write_prompt("上海有哪些客户？", found, "sqlite", 12_000)
    assert (
        prompt.index("CREATE TABLE")
        < prompt.index("-- What the tables")
        < prompt.index("-- Questions answered")
        < prompt.index("-- 上海有哪些客户？")
    )
    assert "SELECT name FROM customers WHERE city = 'Beijing';" in prompt and "SQLite has no EXTRACT" in prompt


def test_an_example_from_feedback_is_used_and_a_corrected_one_replaces_it(knowledge: SqlKnowledgeBase) -> None:
    question = "Which city has the most customers?"
    knowledge.sync("feedback", [example_node(question, "SELECT city FROM customers LIMIT 1", "feedback")])
    knowledge.sync("feedback", [example_node(question, "SELECT city FROM customers GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1", "feedback")])
    assert [sql for asked, sql in knowledge.retrieve(question).examples if asked == question] == [
        "SELECT city FROM customers GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1"
    ]
    assert knowledge.retrieve("Which city has the most customers?").examples[0][1].startswith("SELECT city FROM customers")


def test_coverage_follows_examples_and_an_empty_base_covers_nothing(knowledge: SqlKnowledgeBase, database, embed, tmp_path: Path) -> None:
    question = "Which product category has the lowest average price?"
    before = knowledge.coverage(embed.get_query_embedding(question))
    knowledge.sync("feedback", [example_node(question, "SELECT category FROM products GROUP BY category ORDER BY AVG(price) LIMIT 1", "feedback")])
    assert before < 0.95 < knowledge.coverage(embed.get_query_embedding(question))  # the new example counts at once
    empty = open_knowledge_base("bare", database.engine, None, make_settings(tmp_path), embed)
    assert empty.coverage(embed.get_query_embedding(question)) == 0.0  # tables alone are not coverage


def test_the_schema_budget_keeps_the_most_relevant_tables_in_a_fixed_order() -> None:
    found = Knowledge(tables=["CREATE TABLE orders (x)", "CREATE TABLE customers (y)", "CREATE TABLE products (z)"])
    assert knowledge_block(found, 10_000).index("customers") < knowledge_block(found, 10_000).index("orders")
    trimmed = knowledge_block(found, 50)
    assert "orders" in trimmed and "customers" in trimmed and "products" not in trimmed


def test_bad_knowledge_files_are_clear_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("examples: [", encoding="utf-8")
    with pytest.raises(KnowledgeFileError, match="not valid YAML"):
        file_entries(broken)
    typo = tmp_path / "typo.yaml"
    typo.write_text("exampels:\n  - question: a\n    sql: SELECT 1\n", encoding="utf-8")
    with pytest.raises(KnowledgeFileError, match="exampels"):
        file_entries(typo)


def test_errors_are_classified_and_unknown_names_get_the_closest_real_ones() -> None:
    assert classify_error(OperationalError("x", {}, Exception("no such column: T1.nmae"))).kind == "unknown-column"
    assert not classify_error(OperationalError("x", {}, Exception("interrupted"))).fixable
    names = ["customers", "customers.name", "customers.age", "products.name"]
    assert closest_names("no such column: T1.nmae", names) == ["customers.name", "products.name"]
    assert extract_sql("```sql\nSELECT 1;\n```\nThis counts.") == "SELECT 1"


def test_a_fixable_error_is_repaired_with_a_hint(database, knowledge) -> None:
    writer = ScriptedSQLWriter(sqls=["SELECT nmae FROM customers WHERE age > 50", "SELECT name FROM customers WHERE age > 50"])
    response = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, write_answer=False).query("Who is older than 50?")
    attempts = _attempts(response)
    assert [a["kind"] for a in attempts] == ["unknown-column", None]
    assert "customers.name" in writer.prompts[1] and "no such column: nmae" in writer.prompts[1]
    assert response.metadata["result"] == [("Maria Rossi",)]


def test_the_loop_stops_when_the_model_repeats_itself(database, knowledge) -> None:
    writer = ScriptedSQLWriter(sqls=["SELECT nmae FROM customers"])
    response = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, max_attempts=3).query("Names?")
    assert [a["kind"] for a in _attempts(response)] == ["unknown-column", "repeated"]


def test_the_real_model_answers_a_chinese_question_from_the_shop(database, knowledge, llm) -> None:
    response = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=llm).query("年龄大于40的客户有多少？")
    assert response.metadata["result"] == [(3,)] or response.metadata["result"] == [(3,)]
    assert "3" in str(response)


def test_fixes_made_before_a_query_runs_are_in_its_attempt(database, knowledge) -> None:
    writer = ScriptedSQLWriter(sqls=["SELECT COUNT(*) FROM products AS T1 JOIN orders AS T2 ON T1.id = T2.product_id WHERE T2.category = 'Food'"])
    response = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, write_answer=False).query("How many orders of food?")
    attempt = _attempts(response)[0]
    assert attempt["fixes"] == ["T2.category -> T1.category", "'Food' -> 'food'"]
    assert attempt["sql"].endswith("WHERE T1.category = 'food'") and attempt["error"] is None


def test_the_engine_runs_every_candidate_guarded_and_keeps_the_winner(database, knowledge) -> None:
    # A scripted LLM double: the point is which written query wins, so the "model" writes exactly these.
    writer = ScriptedSQLWriter(
        sqls=[
            "SELECT name FROM customers WHERE age > 90",
            "DROP TABLE customers",
            "SELECT name FROM customers WHERE age > 50",
            "SELECT name FROM customers WHERE age > 50",
        ]
    )
    engine = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, write_answer=False, candidates=4)
    response = engine.query("Who is older than 50?")
    (attempt,) = _attempts(response)
    assert attempt["sql"] == "SELECT name FROM customers WHERE age > 50" and (attempt["votes"], attempt["written"], attempt["chosen"]) == (2, 4, 2)
    assert attempt["others"] == ["SELECT name FROM customers WHERE age > 90", "DROP TABLE customers"]
    assert response.metadata["result"] == [("Maria Rossi",)]
    assert database.run_sql("SELECT COUNT(*) FROM customers")[1]["result"][0][0] > 0  # the DROP was refused


def test_in_doubt_the_further_ballots_are_written_only_when_the_first_two_leave_the_rows_in_doubt(database, knowledge) -> None:
    # A scripted LLM double: the point is how many queries get written.
    def first_attempt(sqls: list[str]) -> tuple[dict, list]:
        writer = ScriptedSQLWriter(sqls=sqls)
        engine = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, write_answer=False, candidates=3, vote="in_doubt")
        response = engine.query("Who is older than 50?")
        return _attempts(response)[0], response.metadata["result"]

    agree = "SELECT name FROM customers WHERE age > 50"
    assert first_attempt([agree, agree, "SELECT name FROM customers"])[0]["written"] == 2  # two readings agree: no third
    attempt, rows = first_attempt(["SELECT name FROM customers WHERE age > 90", agree])  # the first returns nothing
    assert attempt["written"] == 3 and rows == [("Maria Rossi",)]
    assert first_attempt([agree, "SELECT name FROM customers WHERE age > 40"])[0]["written"] == 3  # they disagree


def test_when_no_candidate_runs_the_greedy_query_is_repaired(database, knowledge) -> None:
    writer = ScriptedSQLWriter(
        sqls=["SELECT nmae FROM customers WHERE age > 50", "SELECT nme FROM customers WHERE age > 50", "SELECT name FROM customers WHERE age > 50"]
    )
    engine = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, write_answer=False, candidates=2)
    attempts = _attempts(engine.query("Who is older than 50?"))
    assert [(a["kind"], a["votes"], a["written"]) for a in attempts] == [("unknown-column", 0, 2), (None, 1, 1)]
    assert "no such column: nmae" in writer.prompts[2]


def test_the_first_ballot_continues_the_sql_file_where_the_model_can_be_continued(database, knowledge) -> None:
    sqls = ["SELECT name FROM customers WHERE age > 50"]
    local, endpoint = ScriptedFileWriter(sqls=sqls), ScriptedSQLWriter(sqls=sqls)
    for writer in (local, endpoint):
        TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=writer, write_answer=False, candidates=3).query("Who is older than 50?")
    assert local.ways == ["file", "answer", "sample"]
    assert endpoint.ways == ["answer", "sample", "sample"]  # a chat API only answers: the greedy answer, then samples


def test_the_continued_turn_is_the_answer_prompt_up_to_the_end_of_the_prompt() -> None:
    from engines.models.llm import chatml_completion, chatml_continued

    prompt = "CREATE TABLE t (a INT)\n-- How many rows?\n"
    assert chatml_completion(prompt).startswith(chatml_continued(prompt)) and chatml_continued(prompt).endswith(prompt)


def test_the_real_model_continues_the_file_with_a_query_that_runs(database, knowledge, llm) -> None:
    from engines.sql.engine import write_sql
    from engines.sql.prompts import write_prompt

    question = "How many customers are older than 40?"
    sql = write_sql(llm, write_prompt(question, knowledge.retrieve(question), "sqlite", 12_000), 0)
    assert sql.upper().startswith("SELECT") and "--" not in sql
    assert database.run_sql(database.guarded(sql))[1]["result"] == [(3,)]
