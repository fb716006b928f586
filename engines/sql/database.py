"""SQL databases: a read-only, time-boxed connection, and a LlamaIndex SQLDatabase that runs only guarded SQL."""

from __future__ import annotations

import datetime
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from llama_index.core import SQLDatabase
from sqlalchemy import create_engine, event, inspect, make_url
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError

from engines.sources import SqlSource
from engines.sql.guard import guard_sql

SQLITE_MAGIC = b"SQLite format 3\x00"
# SQLAlchemy's dialect names where sqlglot spells them differently.
SQLGLOT_DIALECTS = {"postgresql": "postgres", "mssql": "tsql"}
# An unknown host or a closed port is an error after this long, not a hang.
CONNECT_TIMEOUT_S = 5


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


def _server_engine(source: SqlSource, budget_s: float) -> Engine:
    """A server database's engine; on PostgreSQL every transaction is READ ONLY and every statement stops at the
    budget, set by the server itself for the session, so no query of the model's can write or run on."""
    try:
        parsed = make_url(source.url)
    except ArgumentError as err:  # the URL itself is not repeated: it may hold a password
        raise DatabaseError(
            f"source '{source.name}': `url` is not a SQLAlchemy database URL (dialect+driver://user:password@host:port/database)"
        ) from err
    if parsed.get_backend_name() != "postgresql":
        return create_engine(parsed, pool_pre_ping=True)
    options = f"-c default_transaction_read_only=on -c statement_timeout={int(budget_s * 1000)}"
    return create_engine(parsed, pool_pre_ping=True, connect_args={"options": options, "connect_timeout": CONNECT_TIMEOUT_S})


def _reason(err: Exception) -> str:
    """The driver's own first line ("password authentication failed for user ..."), without SQLAlchemy's
    background link or the statement."""
    original = getattr(err, "orig", None) or err
    return (str(original).strip().splitlines() or [type(original).__name__])[0]


def open_engine(source: SqlSource, budget_s: float = 10.0) -> Engine:
    if source.path is not None:
        _check_sqlite_file(source.path)
        engine = create_engine(f"sqlite:///file:{source.path}?mode=ro&uri=true")
        _time_box(engine, budget_s)
    else:
        engine = _server_engine(source, budget_s)
    try:
        tables = inspect(engine).get_table_names()
    except Exception as err:
        engine.dispose()
        raise DatabaseError(f"source '{source.name}': cannot read the database: {_reason(err)}") from err
    if not tables:
        engine.dispose()
        raise DatabaseError(f"source '{source.name}': the database has no tables")
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
        text, result = super().run_sql(self.guarded(command))
        if "result" in result:
            result["result"] = [tuple(plain_value(v) for v in row) for row in result["result"]]
        return text, result


def plain_value(value: Any) -> Any:
    """A value as SQLite would return it, so answers, traces (JSON) and scores read the same on every database:
    PostgreSQL's NUMERIC comes back as Decimal (AVG of an integer column: Decimal('10.4285714285714286')), its
    dates and times as datetime objects."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat()
    if isinstance(value, (uuid.UUID, datetime.timedelta)):
        return str(value)
    return value


def schema_summary(database: SQLDatabase) -> list[str]:
    """One line per table, `table(col1, col2, ...)`: the text the router and descriptions are built from."""
    inspector = inspect(database.engine)
    return [f"{table}({', '.join(c['name'] for c in inspector.get_columns(table))})" for table in sorted(database.get_usable_table_names())]
