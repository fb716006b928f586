"""Match a string the model compared a column with to the spelling stored in that column.

The 1.5B default capitalises values (`PetType = 'Dog'` where the data says `'dog'`, `'Europe'` for `'europe'`),
and a query that runs but matches nothing is never sent back for repair. Where the literal is not in the
column and exactly one stored value equals it ignoring case, the literal is replaced by that value. The
category lists in the prompt cover only columns with few values; this covers every text column, one small
lookup per literal.

It also compares the wrong column of the right table (`car_names.Make = 'volvo'`, where `'volvo'` is a
`Model`; `Maker = 'American Motor Company'`, a `FullName`): when an `=` or `<>` literal is in no spelling in
its column but in exactly one other column of the query's tables, the comparison moves to that column.
"""

from __future__ import annotations

import sqlglot
from sqlalchemy import column, func, select, table
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

COMPARISONS = (exp.EQ, exp.NEQ, exp.In)


def _table_of(col: exp.Column, tables: dict[str, str], columns: dict[str, list[str]]) -> tuple[str, str] | None:
    """(table, column) with their stored spelling, when the column resolves to exactly one table of the scope."""
    candidates = [tables[col.table]] if col.table in tables else list(tables.values())
    found = [(t, c) for t in candidates for c in columns.get(t, []) if c.lower() == col.name.lower()]
    return found[0] if len(found) == 1 else None


STORED, ABSENT = "stored", "absent"


def _spelling(engine: Engine, owner: tuple[str, str], literal: str) -> str | None:
    """STORED when the column holds `literal`; else the one stored value equal to it ignoring case; ABSENT when
    none is; None when it cannot be told (several spellings, a non-text value, a lookup over the time budget)."""
    target = column(owner[1])
    source = table(owner[0], target)
    try:
        with engine.connect() as conn:
            if conn.execute(select(target).select_from(source).where(target == literal).limit(1)).first():
                return STORED
            rows = conn.execute(select(target).select_from(source).where(func.lower(target) == literal.lower()).distinct().limit(2)).scalars().all()
    except SQLAlchemyError:  # e.g. the time budget ran out on a large table: the literal stays as written
        return None
    if not rows:
        return ABSENT
    return rows[0] if len(rows) == 1 and isinstance(rows[0], str) else None


def _elsewhere(engine: Engine, tables: dict[str, str], columns: dict[str, list[str]], owner: tuple[str, str], literal: str) -> tuple[str, str, str] | None:
    """(alias, column, stored spelling) of the only other column of the scope's tables that holds `literal`."""
    found = []
    for alias, name in tables.items():
        for other in columns.get(name, []):
            if (name, other) != owner and (spelling := _spelling(engine, (name, other), literal)) not in (None, ABSENT):
                found.append((alias, other, literal if spelling == STORED else spelling))
    return found[0] if len(found) == 1 else None


def _respell(engine: Engine, node: exp.Expression, col: exp.Column, owner: tuple[str, str], tables: dict[str, str], columns: dict[str, list[str]]) -> list[str]:
    """Each string literal of one comparison in its stored spelling, or the comparison moved to the column that holds it."""
    changes, operator = [], "<>" if isinstance(node, exp.NEQ) else "="
    for literal in _literals(node):
        spelling = _spelling(engine, owner, literal.this)
        if spelling == ABSENT and not isinstance(node, exp.In) and (moved := _elsewhere(engine, tables, columns, owner, literal.this)):
            alias, other, stored = moved
            changes.append(f"{col.sql()} {operator} '{literal.this}' -> {alias}.{other} {operator} '{stored}'")
            col.set("this", exp.to_identifier(other))
            col.set("table", exp.to_identifier(alias))
            literal.replace(exp.Literal.string(stored))
        elif spelling not in (None, STORED, ABSENT):
            changes.append(f"'{literal.this}' -> '{spelling}'")
            literal.replace(exp.Literal.string(spelling))
    return changes


def _literals(node: exp.Expression) -> list[exp.Literal]:
    sides = node.expressions if isinstance(node, exp.In) else [node.left, node.right]
    return [s for s in sides if isinstance(s, exp.Literal) and s.is_string]


def match_values(sql: str, engine: Engine, columns: dict[str, list[str]], dialect: str = "sqlite") -> tuple[str, list[str]]:
    """The query with compared strings in their stored spelling, and the replacements made (`'Dog' -> 'dog'`).

    `columns` maps each table to its column names, in the database's spelling.
    """
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return sql, []
    changes: list[str] = []
    for scope in traverse_scope(tree):
        tables = {alias: next((t for t in columns if t.lower() == s.name.lower()), s.name) for alias, s in scope.sources.items() if isinstance(s, exp.Table)}
        for node in (n for n in scope.expression.find_all(*COMPARISONS) if n.find_ancestor(exp.Select) is scope.expression):
            col = node.this if isinstance(node, exp.In) else next((s for s in (node.left, node.right) if isinstance(s, exp.Column)), None)
            owner = _table_of(col, tables, columns) if isinstance(col, exp.Column) else None
            if owner:
                changes += _respell(engine, node, col, owner, tables, columns)
    return (tree.sql(dialect=dialect), changes) if changes else (sql, [])
