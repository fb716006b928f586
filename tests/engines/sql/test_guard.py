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
        ("SELECT load_extension('evil')", "forbidden-function"),
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


POSTGRES_HOSTILE = [
    ("COPY customers TO '/tmp/x'", "select-only"),
    ("COPY customers FROM PROGRAM 'rm -rf /'", "select-only"),
    ("SET statement_timeout = 0", "select-only"),
    ("SET TRANSACTION READ WRITE", "select-only"),
    ("DO $$ BEGIN DELETE FROM orders; END $$", "select-only"),
    ("CALL wipe()", "select-only"),
    ("LISTEN channel", "select-only"),
    ("NOTIFY channel", "select-only"),
    ("LOCK TABLE orders", "select-only"),
    ("SELECT * FROM customers FOR UPDATE", "select-only"),
    ("SELECT * FROM orders FOR SHARE", "select-only"),
    ("SELECT pg_sleep(60)", "forbidden-function"),
    ("SELECT pg_read_file('/etc/passwd')", "forbidden-function"),
    ("SELECT * FROM pg_ls_dir('.')", "forbidden-function"),
    ("SELECT lo_import('/etc/passwd')", "forbidden-function"),
    ("SELECT * FROM dblink('host=x', 'DELETE FROM orders') AS t(a int)", "forbidden-function"),
    ("SELECT pg_advisory_lock(1)", "forbidden-function"),
    ("SELECT pg_terminate_backend(1)", "forbidden-function"),
    ("SELECT set_config('default_transaction_read_only', 'off', false)", "forbidden-function"),
    ("SELECT nextval('orders_id_seq')", "forbidden-function"),
    ("SELECT query_to_xml('DELETE FROM orders', true, true, '')", "forbidden-function"),
    ("SELECT name FROM customers UNION SELECT usename FROM pg_user", "known-tables"),
    ("SELECT * FROM pg_catalog.pg_shadow", "known-tables"),
    ("WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone", "select-only"),
]


@pytest.mark.parametrize(("sql", "rule"), POSTGRES_HOSTILE)
def test_postgres_refusals_name_their_rule(sql: str, rule: str) -> None:
    with pytest.raises(SQLRefused) as err:
        guard_sql(sql, TABLES, "postgres")
    assert err.value.rule == rule


def test_postgres_select_passes_in_its_dialect() -> None:
    assert guard_sql("SELECT name FROM customers WHERE name ILIKE '%a%'", TABLES, "postgres", row_limit=5).endswith("LIMIT 5")
