"""Put a column the model qualified with the wrong table alias back on the table that has it.

The 1.5B default often joins two tables and then writes `T2.name` where `name` is a column of T1 (on Spider dev
this was the commonest execution error: "no such column: T2.Name"). When exactly one other table of the same
SELECT has that column, the intent is unambiguous and the fix needs no model call. sqlglot's optimizer
(`qualify_columns`) validates names but does not move a column between aliases, so this small pass does.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope


def _owner(column: exp.Column, tables: dict[str, str], columns: dict[str, set[str]]) -> str | None:
    """The alias of the only table in scope that has the column, when its own qualifier's table lacks it."""
    name = column.name.lower()
    qualifier = column.table
    if qualifier not in tables or name in columns.get(tables[qualifier], {name}):
        return None
    owners = [alias for alias, table in tables.items() if name in columns.get(table, set())]
    return owners[0] if len(owners) == 1 else None


def requalify(sql: str, columns: dict[str, set[str]], dialect: str = "sqlite") -> tuple[str, list[str]]:
    """The query with misplaced qualifiers moved, and what was moved (`T2.Name -> T1.Name`).

    `columns` maps each lower-cased table name to its lower-cased column names. Unparsable SQL is returned as
    it is: the guard then refuses it with the parser's message.
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return sql, []
    moves: list[str] = []
    for scope in traverse_scope(tree):
        tables = {alias: source.name.lower() for alias, source in scope.sources.items() if isinstance(source, exp.Table)}
        for column in scope.columns:
            owner = _owner(column, tables, columns)
            if owner is not None:
                moves.append(f"{column.table}.{column.name} -> {owner}.{column.name}")
                column.set("table", exp.to_identifier(owner))
    return (tree.sql(dialect=dialect), moves) if moves else (sql, [])
