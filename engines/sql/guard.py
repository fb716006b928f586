"""The SQL guard: model-written SQL is parsed with sqlglot and only a single read-only SELECT gets through."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

# exp.Lock is a locking clause (FOR UPDATE / FOR SHARE): it takes row locks, which a read-only transaction allows.
FORBIDDEN = (exp.Insert, exp.Update, exp.Delete, exp.Drop, exp.Create, exp.Alter, exp.Command, exp.Pragma, exp.Into, exp.Merge, exp.Lock)

# SQLite's extension and file functions; PostgreSQL's that sleep, read or write files, large objects or settings,
# take advisory locks, signal backends, advance sequences or run SQL given as a string.
FORBIDDEN_FUNCTIONS = {
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "set_config",
    "nextval",
    "setval",
    "txid_current",
    "query_to_xml",
    "query_to_xml_and_xmlschema",
    "cursor_to_xml",
    "table_to_xml",
    "database_to_xml",
    "schema_to_xml",
}
# PostgreSQL's administration functions (pg_sleep, pg_read_file, pg_ls_dir, pg_terminate_backend, pg_notify,
# pg_advisory_lock, ...), large objects (lo_import, lo_export) and dblink all go by these prefixes.
FORBIDDEN_PREFIXES = ("pg_", "lo_", "dblink")


class SQLRefused(ValueError):
    """The statement was not executed; the message names the rule that refused it."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"refused by rule '{rule}': {detail}")
        self.rule = rule


def parse_query(sql: str, dialect: str) -> exp.Expression | None:
    """The query's syntax tree, or None where sqlglot cannot read it; the fix passes then leave it as written, and
    the guard refuses it with the parser's message."""
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:  # ParseError, or a TokenError (an unclosed quote or comment)
        return None


def _parse_one(sql: str, dialect: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except sqlglot.errors.SqlglotError as err:  # ParseError, or a TokenError (an unclosed quote or comment)
        raise SQLRefused("parse", str(err).splitlines()[0]) from err
    if len(statements) != 1:
        raise SQLRefused("single-statement", f"expected exactly one statement, got {len(statements)}")
    return statements[0]


def guard_sql(sql: str, known_tables: set[str], dialect: str = "sqlite", row_limit: int = 100) -> str:
    """Return the statement to execute (with a LIMIT when it had none), or raise SQLRefused."""
    tree = _parse_one(sql, dialect)
    if not isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
        raise SQLRefused("select-only", f"only SELECT queries may run, not {sql.split()[0].upper()}")
    bad = next((node for node in tree.walk() if isinstance(node, FORBIDDEN)), None)
    if bad is not None:
        raise SQLRefused("select-only", f"{bad.key.upper()} is not allowed inside a query")
    called = {name for f in tree.find_all(exp.Anonymous) if (name := f.name.lower()) in FORBIDDEN_FUNCTIONS or name.startswith(FORBIDDEN_PREFIXES)}
    if called:
        raise SQLRefused("forbidden-function", f"function {', '.join(sorted(called))} is not allowed")
    allowed = {t.lower() for t in known_tables} | {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    unknown = sorted({t.name or t.sql(dialect=dialect) for t in tree.find_all(exp.Table) if t.name.lower() not in allowed})
    if unknown:
        raise SQLRefused("known-tables", f"no such table: {', '.join(unknown)}")
    if isinstance(tree, exp.Select) and tree.args.get("limit") is None:
        tree = tree.limit(row_limit)
    return tree.sql(dialect=dialect)
