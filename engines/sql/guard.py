"""The SQL guard: model-written SQL is parsed with sqlglot and only a single read-only SELECT gets through."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

FORBIDDEN = (exp.Insert, exp.Update, exp.Delete, exp.Drop, exp.Create, exp.Alter, exp.Command, exp.Pragma, exp.Into, exp.Merge)

FORBIDDEN_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


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
    called = {f.name.lower() for f in tree.find_all(exp.Anonymous)} & FORBIDDEN_FUNCTIONS
    if called:
        raise SQLRefused("no-extensions", f"function {', '.join(sorted(called))} is not allowed")
    allowed = {t.lower() for t in known_tables} | {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    unknown = sorted({t.name or t.sql(dialect=dialect) for t in tree.find_all(exp.Table) if t.name.lower() not in allowed})
    if unknown:
        raise SQLRefused("known-tables", f"no such table: {', '.join(unknown)}")
    if isinstance(tree, exp.Select) and tree.args.get("limit") is None:
        tree = tree.limit(row_limit)
    return tree.sql(dialect=dialect)
