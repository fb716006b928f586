import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from engines.settings import DATA_DIR
from engines.sources import SqlSource
from engines.sql.database import DatabaseError, GuardedSQLDatabase, open_engine
from engines.sql.guard import SQLRefused

SHOP = DATA_DIR / "demo" / "shop.sqlite"


def _source(path: Path) -> SqlSource:
    return SqlSource(name="shop", kind="sql", path=path)


def test_guarded_database_runs_a_select_with_a_limit() -> None:
    database = GuardedSQLDatabase(open_engine(_source(SHOP)), row_limit=5)
    _, meta = database.run_sql("SELECT name FROM customers")
    assert len(meta["result"]) == 5


def test_writes_are_refused_and_the_file_is_unchanged(tmp_path: Path) -> None:
    copy = tmp_path / "shop.sqlite"
    shutil.copy(SHOP, copy)
    before = copy.read_bytes()
    database = GuardedSQLDatabase(open_engine(_source(copy)), row_limit=100)
    with pytest.raises(SQLRefused):
        database.run_sql("DELETE FROM orders")
    with database.engine.begin() as connection, pytest.raises(Exception, match="readonly|read-only|query_only"):
        connection.execute(text("DELETE FROM orders"))  # even unguarded, the connection itself is read-only
    assert copy.read_bytes() == before


def test_runaway_query_is_stopped_by_the_time_budget() -> None:
    database = GuardedSQLDatabase(open_engine(_source(SHOP), budget_s=0.5), row_limit=100)
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    with pytest.raises(Exception, match="interrupted"):
        database.run_sql(endless)


def test_missing_and_non_sqlite_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="does not exist"):
        open_engine(_source(tmp_path / "absent.sqlite"))
    fake = tmp_path / "fake.sqlite"
    fake.write_text("not a database")
    with pytest.raises(DatabaseError, match="not a SQLite database"):
        open_engine(_source(fake))
