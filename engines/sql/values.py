"""Match a string the model compared a column with to the spelling stored in that column.

The 1.5B default capitalises values (`PetType = 'Dog'` where the data says `'dog'`, `'Europe'` for `'europe'`),
and a query that runs but matches nothing is never sent back for repair. Where the literal is not in the
column and exactly one stored value equals it ignoring case, the literal is replaced by that value. The
category lists in the prompt cover only columns with few values; this covers every text column, one small
lookup per literal.

It also compares the wrong column of the right table (`car_names.Make = 'volvo'`, where `'volvo'` is a
`Model`; `Maker = 'American Motor Company'`, a `FullName`): when an `=` or `<>` literal is in no spelling in
its column but in exactly one other column of the query's tables, the comparison moves to that column.

And it compares a key with the name of what the key refers to (`countrylanguage.CountryCode = 'Aruba'`: the
key holds codes, the name is in `country`): when the literal is not in the key column, nor in another column of
the query's tables, but names the same rows wherever it is in the table the foreign key refers to, the
comparison becomes a lookup there (`CountryCode IN (SELECT Code FROM country WHERE Name = 'Aruba')`). A key
the model made up (`car_makers.Country = '2'` for "car makers in france": the question gives no key) is looked
up the same way by the name the question gives, when exactly that table stores it (`countries.CountryName`).
"""

from __future__ import annotations

from sqlalchemy import column, func, select, table
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from engines.matching.schema_terms import question_phrases
from engines.sql.guard import parse_query
from engines.sql.schema import Schema

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


def _elsewhere(
    engine: Engine, tables: dict[str, str], columns: dict[str, list[str]], owner: tuple[str, str], literal: str
) -> tuple[str, str, str] | None:
    """(alias, column, stored spelling) of the only other column of the scope's tables that holds `literal`."""
    found = []
    for alias, name in tables.items():
        for other in columns.get(name, []):
            if (name, other) != owner and (spelling := _spelling(engine, (name, other), literal)) not in (None, ABSENT):
                found.append((alias, other, literal if spelling == STORED else spelling))
    return found[0] if len(found) == 1 else None


def _keys(engine: Engine, table_name: str, key: str, holder: str, stored: str) -> frozenset | None:
    found = table(table_name, column(key), column(holder))
    try:
        with engine.connect() as conn:
            return frozenset(conn.execute(select(found.c[key]).where(found.c[holder] == stored)).scalars().all())
    except SQLAlchemyError:
        return None


def _one_reading(engine: Engine, table_name: str, key: str, found: list[tuple[str, str]]) -> tuple[str, str, str, str] | None:
    """(table, key, column, stored value) of the first of `found` when all of them name the same rows."""
    keys = {_keys(engine, table_name, key, other, stored) for other, stored in found}
    return (table_name, key, *found[0]) if found and len(keys) == 1 and None not in keys else None


def _key_target(schema: Schema, owner: tuple[str, str]) -> tuple[str, str] | None:
    """(table, column) that `owner` refers to, when it is a foreign key to exactly one."""
    refs = [(t2, c2) for t1, c1, t2, c2 in schema.links if (t1, c1) == owner]
    return refs[0] if len(refs) == 1 else None


def _referred(engine: Engine, schema: Schema, owner: tuple[str, str], literal: str) -> tuple[str, str, str, str] | None:
    """(referred table, its key, the column holding `literal`, stored spelling) when `owner` is a foreign key and
    the literal names the same rows wherever it is in the table the key refers to (`'Aruba'` is both a country's
    `Name` and its `LocalName`: the first is taken)."""
    if (target := _key_target(schema, owner)) is None:
        return None
    table_name, key = target
    found = [
        (other, literal if spelling == STORED else spelling)
        for other in schema.columns.get(table_name, [])
        if other != key and (spelling := _spelling(engine, (table_name, other), literal)) not in (None, ABSENT)
    ]
    return _one_reading(engine, table_name, key, found)


def _named_in_referred(engine: Engine, schema: Schema, owner: tuple[str, str], question: str) -> tuple[str, str, str, str] | None:
    """(referred table, its key, the column holding the value, stored spelling) when `owner` is a foreign key and
    the question names a value of the table the key refers to, the same rows wherever it is stored ("car makers
    in france": `countries.CountryName`)."""
    if (target := _key_target(schema, owner)) is None:
        return None
    (table_name, key), phrases = target, sorted(question_phrases(question))
    if not phrases:
        return None
    found = []
    for other in (c for c in schema.columns.get(table_name, []) if c != key):
        holder = column(other)
        try:
            with engine.connect() as conn:
                stored = (
                    conn.execute(select(holder).select_from(table(table_name, holder)).where(func.lower(holder).in_(phrases)).distinct().limit(3))
                    .scalars()
                    .all()
                )
        except SQLAlchemyError:  # e.g. the time budget ran out on a large table: no lookup
            return None
        found += [(other, v) for v in stored if isinstance(v, str)]
    return _one_reading(engine, table_name, key, found)


def _lookup(col: exp.Column, operator: str, table_name: str, key: str, holder: str, stored: str) -> exp.Expression:
    """`col IN (SELECT key FROM table WHERE holder = 'stored')`, or NOT IN for `<>`."""
    named = exp.select(exp.column(key)).from_(exp.to_table(table_name)).where(exp.column(holder).eq(exp.Literal.string(stored)))
    lookup = exp.In(this=col.copy(), query=exp.Subquery(this=named))
    return exp.Not(this=lookup) if operator == "<>" else lookup


def _lookup_target(
    engine: Engine, schema: Schema, owner: tuple[str, str], literal: str, spelling: str | None, question: str
) -> tuple[str, str, str, str] | None:
    """Where a key's comparison looks its rows up: by the name written (a key compared with a name), else by the
    name the question gives (a key the question does not give, so the model made it up); None for neither."""
    if spelling == ABSENT and (referred := _referred(engine, schema, owner, literal)):
        return referred
    if spelling in (STORED, ABSENT) and literal.lower() not in question.lower():
        return _named_in_referred(engine, schema, owner, question)
    return None


def _respell(
    engine: Engine, node: exp.Expression, col: exp.Column, owner: tuple[str, str], tables: dict[str, str], schema: Schema, question: str
) -> list[str]:
    """Each string literal of one comparison in its stored spelling, or the comparison moved to the column that
    holds it, or made a lookup in the table its key refers to."""
    changes, operator, single = [], "<>" if isinstance(node, exp.NEQ) else "=", not isinstance(node, exp.In)
    for literal in _literals(node):
        spelling = _spelling(engine, owner, literal.this)
        if spelling == ABSENT and single and (moved := _elsewhere(engine, tables, schema.columns, owner, literal.this)):
            alias, other, stored = moved
            changes.append(f"{col.sql()} {operator} '{literal.this}' -> {alias}.{other} {operator} '{stored}'")
            col.set("this", exp.to_identifier(other))
            col.set("table", exp.to_identifier(alias))
            literal.replace(exp.Literal.string(stored))
        elif single and (referred := _lookup_target(engine, schema, owner, literal.this, spelling, question)):
            lookup = _lookup(col, operator, *referred)
            changes.append(f"{node.sql()} -> {lookup.sql()}")
            node.replace(lookup)
        elif spelling not in (None, STORED, ABSENT):
            changes.append(f"'{literal.this}' -> '{spelling}'")
            literal.replace(exp.Literal.string(spelling))
    return changes


def _literals(node: exp.Expression) -> list[exp.Literal]:
    sides = node.expressions if isinstance(node, exp.In) else [node.left, node.right]
    return [s for s in sides if isinstance(s, exp.Literal) and s.is_string]


def match_values(sql: str, engine: Engine, schema: Schema, dialect: str = "sqlite", question: str = "") -> tuple[str, list[str]]:
    """The query with compared strings in their stored spelling, and the replacements made (`'Dog' -> 'dog'`)."""
    tree = parse_query(sql, dialect)
    if tree is None:
        return sql, []
    changes: list[str] = []
    columns = schema.columns
    for scope in traverse_scope(tree):
        tables = {
            alias: next((t for t in columns if t.lower() == s.name.lower()), s.name) for alias, s in scope.sources.items() if isinstance(s, exp.Table)
        }
        # A list, not a generator: a key lookup replaces the comparison node while the loop walks the tree.
        for node in [n for n in scope.expression.find_all(*COMPARISONS) if n.find_ancestor(exp.Select) is scope.expression]:
            col = node.this if isinstance(node, exp.In) else next((s for s in (node.left, node.right) if isinstance(s, exp.Column)), None)
            owner = _table_of(col, tables, columns) if isinstance(col, exp.Column) else None
            if owner:
                changes += _respell(engine, node, col, owner, tables, schema, question)
    return (tree.sql(dialect=dialect), changes) if changes else (sql, [])
