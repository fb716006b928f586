import pytest

from engines.sql.guard import SQLRefused, guard_sql

TABLES = {"customers", "orders"}


@pytest.mark.parametrize(
    ("sql", "rule"),
    [
        ("SELECT 1; DROP TABLE customers", "single-statement"),
        ("DROP TABLE customers", "select-only"),
        ("DELETE FROM orders", "select-only"),
        ("UPDATE customers SET age = 1", "select-only"),
        ("PRAGMA table_info(customers)", "select-only"),
        ("ATTACH DATABASE 'x.db' AS x", "select-only"),
        ("VACUUM", "select-only"),
        ("SELECT * INTO backup FROM customers", "select-only"),
        ("SELECT load_extension('evil')", "no-extensions"),
        ("SELECT * FROM secrets", "known-tables"),
    ],
)
def test_refusals_name_their_rule(sql: str, rule: str) -> None:
    with pytest.raises(SQLRefused) as err:
        guard_sql(sql, TABLES)
    assert err.value.rule == rule


def test_limit_is_added_only_when_missing() -> None:
    assert guard_sql("SELECT name FROM customers", TABLES, row_limit=7).endswith("LIMIT 7")
    assert guard_sql("SELECT name FROM customers LIMIT 3", TABLES).endswith("LIMIT 3")


def test_ctes_and_joins_pass() -> None:
    sql = "WITH big AS (SELECT * FROM orders) SELECT c.name FROM customers c JOIN big b ON b.customer_id = c.id"
    assert "JOIN" in guard_sql(sql, TABLES)
