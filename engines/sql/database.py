"""SQL databases: a read-only, time-boxed connection, and a LlamaIndex SQLDatabase that runs only guarded SQL."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from llama_index.core import SQLDatabase
from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine

from engines.sources import SqlSource
from engines.sql.guard import guard_sql

SQLITE_MAGIC = b"SQLite format 3\x00"
# SQLAlchemy's dialect names where sqlglot spells them differently.
SQLGLOT_DIALECTS = {"postgresql": "postgres", "mssql": "tsql"}


class DatabaseError(ValueError):
    """The database of a source cannot be opened; the message says which and why."""


def _check_sqlite_file(path: Path) -> None:
    if not path.is_file():
        raise DatabaseError(f"database file {path} does not exist")
    with path.open("rb") as handle:
        if handle.read(16) != SQLITE_MAGIC:
            raise DatabaseError(f"{path} is not a SQLite database file")


def _time_box(engine: Engine, budget_s: float) -> None:
    """Stop any statement that runs past the budget (a runaway recursive CTE or cross join) via SQLite's progress handler."""
    deadline = {"at": float("inf")}

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute("PRAGMA query_only = 1")
        dbapi_conn.set_progress_handler(lambda: int(time.monotonic() > deadline["at"]), 10_000)

    @event.listens_for(engine, "before_cursor_execute")
    def _on_execute(*_args: Any) -> None:
        deadline["at"] = time.monotonic() + budget_s


def open_engine(source: SqlSource, budget_s: float = 10.0) -> Engine:
    if source.path is not None:
        _check_sqlite_file(source.path)
        engine = create_engine(f"sqlite:///file:{source.path}?mode=ro&uri=true")
        _time_box(engine, budget_s)
    else:
        engine = create_engine(source.url)
    try:
        inspect(engine).get_table_names()
    except Exception as err:
        raise DatabaseError(f"source '{source.name}': cannot read the database: {err}") from err
    return engine


class GuardedSQLDatabase(SQLDatabase):
    """SQLDatabase whose run_sql lets only a guarded single SELECT through; the stock one runs whatever the model wrote."""

    def __init__(self, engine: Engine, row_limit: int) -> None:
        super().__init__(engine)
        self._row_limit = row_limit

    @property
    def sqlglot_dialect(self) -> str:
        return SQLGLOT_DIALECTS.get(self.dialect, self.dialect)

    def guarded(self, command: str) -> str:
        return guard_sql(command, set(self.get_usable_table_names()), self.sqlglot_dialect, self._row_limit)

    def run_sql(self, command: str) -> tuple[str, dict]:
        return super().run_sql(self.guarded(command))


def schema_summary(database: SQLDatabase) -> list[str]:
    """One line per table, `table(col1, col2, ...)`: the text the router and descriptions are built from."""
    inspector = inspect(database.engine)
    return [f"{table}({', '.join(c['name'] for c in inspector.get_columns(table))})" for table in sorted(database.get_usable_table_names())]
