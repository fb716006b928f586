"""Schema-guided fixes of model-written SQL, made before it runs, where the schema leaves only one reading.

Two mistakes of the 1.5B default are the commonest execution errors on Spider dev, and the repair loop rarely
fixes them (told "no such column: Height" and even where Height is and how to join it, the model wrote the
same query again in three of four probes):
- a column qualified with the wrong alias (`T2.name` where `name` is a column of T1): the column moves to the
  only other table of the same SELECT that has it, and a table joined only for such columns is dropped;
- a column of a table the query forgot to join (`SELECT name FROM poker_player`, where `name` is in `people`):
  when the SELECT reads one table, exactly one other table has every missing column, and exactly one foreign
  key links the two, that table is joined on that key and the SELECT's columns are qualified;
- a column qualified with an alias whose table lacks it, where no table of the SELECT has it (`T2.Course` on
  `course_arrange`, where `Course` is in `course`): when exactly one table outside the SELECT has it and
  exactly one foreign key links it to exactly one of the SELECT's tables, that table is joined on that key
  under a new alias and the column reads it;
- a join whose ON pairs no foreign key: it compares a column with itself (`JOIN car_names AS T2 ON T2.MakeId =
  T2.MakeId`: always true, so every row pairs with every row) or two columns no declared key pairs
  (`countries AS T1 JOIN car_makers AS T2 ON T1.Continent = T2.Country`): when exactly one foreign key links the
  joined table to exactly one table before it, the join is made on that key (both columns must be qualified).
  The first fix makes such an ON too, when the model named both sides of a join after the key's name in one
  table (`cars_data.MakeId = car_names.MakeId`, where cars_data's key is `Id`), so it runs first.
sqlglot's optimizer (`qualify_columns`) validates names but does not move or join, hence this small pass.
Anything else is left as written: the database's error then goes back to the model.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from engines.sql.guard import parse_query
from engines.sql.schema import Schema


def _own_columns(scope: Scope) -> list[exp.Column]:
    """The scope's columns that belong to its own SELECT, not to a subquery inside it."""
    return [c for c in scope.columns if c.find_ancestor(exp.Select) is scope.expression]


def _tables(scope: Scope) -> dict[str, str]:
    return {alias: source.name.lower() for alias, source in scope.sources.items() if isinstance(source, exp.Table)}


def _requalify(scope: Scope, columns: dict[str, set[str]]) -> list[str]:
    tables, moves, emptied = _tables(scope), [], set()
    for column in _own_columns(scope):
        name, qualifier = column.name.lower(), column.table
        if qualifier not in tables or name in columns.get(tables[qualifier], {name}):
            continue
        owners = [alias for alias, table in tables.items() if name in columns.get(table, set())]
        if len(owners) == 1:
            moves.append(f"{qualifier}.{column.name} -> {owners[0]}.{column.name}")
            column.set("table", exp.to_identifier(owners[0]))
            emptied.add(qualifier)
    unused = [join for alias in sorted(emptied) if (join := _unused_join(scope, alias)) is not None]
    for join in unused:
        join.pop()
    return moves + [f"dropped the join of {join.this.sql()}, which no column reads" for join in unused]


def _unused_join(scope: Scope, alias: str) -> exp.Join | None:
    """The join of `alias` when, after its columns moved away, nothing but its own ON condition reads it: the
    model joined that table only for columns that were never in it (on Spider dev: `singer JOIN
    singer_in_concert` to read the singer's own country), and the join would only repeat or drop rows. Kept
    under an aggregate, where the joined rows may be what is counted ("how many orders of food")."""
    join = next((j for j in scope.expression.args.get("joins") or [] if j.this.alias_or_name == alias), None)
    if join is None or any(a.find_ancestor(exp.Select) is scope.expression for a in scope.expression.find_all(exp.AggFunc)):
        return None
    readers = [c for c in scope.expression.find_all(exp.Column) if c.table == alias and c.find_ancestor(exp.Join) is not join]
    return None if readers else join


def _link(schema: Schema, one: str, other: str) -> tuple[str, str] | None:
    """The columns (on `one`, on `other`) of the only foreign key between two tables; None if none or several."""
    found = [(a, b) if t.lower() == one else (b, a) for t, a, r, b in schema.links if {t.lower(), r.lower()} == {one, other}]
    return found[0] if len(found) == 1 else None


def _join_missing(scope: Scope, schema: Schema, columns: dict[str, set[str]]) -> list[str]:
    select, tables = scope.expression, _tables(scope)
    if not isinstance(select, exp.Select) or len(tables) != 1 or select.args.get("joins"):
        return []
    ((alias, table),) = tables.items()
    named = {e.alias.lower() for e in select.expressions if e.alias}
    own = [c for c in _own_columns(scope) if not c.table or c.table == alias]
    missing = {c.name.lower() for c in own} - columns.get(table, set()) - named
    if not missing:
        return []
    others = [t for t in schema.columns if t.lower() != table and missing <= columns[t.lower()]]
    link = _link(schema, table, others[0].lower()) if len(others) == 1 else None
    if link is None:
        return []
    other = others[0]
    for column in own:
        if column.name.lower() not in named:
            column.set("table", exp.to_identifier(alias if column.name.lower() in columns[table] else other))
    select.join(exp.to_table(other), on=f"{alias}.{link[0]} = {other}.{link[1]}", copy=False)
    return [f"joined {other} ON {alias}.{link[0]} = {other}.{link[1]}"]


def _reach(tables: dict[str, str], schema: Schema, name: str, columns: dict[str, set[str]]) -> tuple[str, str, tuple[str, str]] | None:
    """The only (alias in the SELECT, table outside it, foreign key between them) through which `name` can be read."""
    found = [
        (alias, other, link)
        for other in schema.columns
        if other.lower() not in tables.values() and name in columns[other.lower()]
        for alias, table in tables.items()
        if (link := _link(schema, table, other.lower())) is not None
    ]
    return found[0] if len(found) == 1 else None


def _join_through(scope: Scope, schema: Schema, columns: dict[str, set[str]]) -> list[str]:
    select, tables, fixes = scope.expression, _tables(scope), []
    if not isinstance(select, exp.Select):
        return []
    for column in _own_columns(scope):
        name, qualifier = column.name.lower(), column.table
        if qualifier not in tables or any(name in columns.get(t, set()) for t in tables.values()):
            continue
        if (reach := _reach(tables, schema, name, columns)) is None:
            continue
        alias, other, (here, there) = reach
        new = next(f"T{n}" for n in range(1, len(tables) + 2) if f"T{n}" not in tables)
        select.join(exp.to_table(other).as_(new), on=f"{alias}.{here} = {new}.{there}", copy=False)
        column.set("table", exp.to_identifier(new))
        fixes.append(f"joined {other} AS {new} ON {alias}.{here} = {new}.{there} for {qualifier}.{column.name}")
        tables = {**tables, new: other.lower()}
    return fixes


def _keyed(on: exp.EQ, tables: dict[str, str], schema: Schema) -> bool:
    """Whether an ON compares the two columns of a declared foreign key (either way round)."""
    left, right = on.this, on.expression
    sides = {(tables.get(left.table), left.name.lower()), (tables.get(right.table), right.name.lower())}
    return any(sides == {(t.lower(), a.lower()), (r.lower(), b.lower())} for t, a, r, b in schema.links)


def _unkeyed_joins(scope: Scope, schema: Schema) -> list[str]:
    select, tables, fixes = scope.expression, _tables(scope), []
    start = select.args.get("from_") if isinstance(select, exp.Select) else None
    if start is None or not isinstance(start.this, exp.Table):
        return []
    before = [start.this.alias_or_name]
    for join in select.args.get("joins") or []:
        alias, on = join.this.alias_or_name, join.args.get("on")
        if isinstance(on, exp.EQ) and all(isinstance(c, exp.Column) and c.table in tables for c in (on.this, on.expression)) and alias in tables:
            keys = [(other, link) for other in before if other in tables and (link := _link(schema, tables[other], tables[alias]))]
            if len(keys) == 1 and not _keyed(on, tables, schema):
                other, (there, here) = keys[0]
                why = "compares a column with itself" if on.this == on.expression else "pairs no foreign key"
                join.set("on", exp.condition(f"{other}.{there} = {alias}.{here}"))
                fixes.append(f"ON {on.sql()} {why}: joined on {other}.{there} = {alias}.{here}")
        before.append(alias)
    return fixes


# Where a double-quoted word is a value being compared, not a name.
COMPARED = (exp.EQ, exp.NEQ, exp.In, exp.Like, exp.ILike, exp.GT, exp.GTE, exp.LT, exp.LTE)


def fix_columns(sql: str, schema: Schema, dialect: str = "sqlite") -> tuple[str, list[str]]:
    """The query with its column references fixed where only one reading exists, and the fixes made.

    Unparsable SQL is returned as it is: the guard then refuses it with the parser's message.
    """
    tree = parse_query(sql, dialect)
    if tree is None:
        return sql, []
    columns = schema.lowered
    fixes: list[str] = []
    for scope in traverse_scope(tree):
        # Requalifying first: moving a column to the table that has it can leave an ON comparing it with itself.
        fixes += _requalify(scope, columns) + _unkeyed_joins(scope, schema) + _join_missing(scope, schema, columns)
        fixes += _join_through(scope, schema, columns)
    return (tree.sql(dialect=dialect), fixes) if fixes else (sql, [])


def postgres_names(sql: str, schema: Schema, dialect: str) -> tuple[str, list[str]]:
    """On PostgreSQL, names as the database needs them, where SQLite would have read them as the model meant.

    - A double-quoted word that names no column, compared with something (`status = "Shutdown"`,
      `LIKE "%Street%"`), becomes the string SQLite takes it for; PostgreSQL reads it as a column.
    - Table and column names are put in their stored case, quoted, where that case is not lower: PostgreSQL folds
      an unquoted name to lower case, so `FROM Customers` cannot find a table created as "Customers" (ORMs and
      hand-written schemas often have them). SQLite and most other databases match names whatever their case.
    """
    tree = parse_query(sql, dialect) if dialect == "postgres" else None
    if tree is None:
        return sql, []
    stored = {t.lower(): t for t in schema.columns} | {c.lower(): c for names in schema.columns.values() for c in names}
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    fixes = []
    for col in list(tree.find_all(exp.Column)):
        word = col.name
        unknown = word.lower() not in stored and word.lower() not in aliases
        if col.this.quoted and not col.table and unknown and isinstance(col.parent, COMPARED):
            col.replace(exp.Literal.string(word))
            fixes.append(f"\"{word}\" read as the string '{word}', as SQLite reads it")
    spelled = []
    for identifier in tree.find_all(exp.Identifier):
        name = stored.get(identifier.name.lower())
        if name and name != name.lower() and (identifier.name != name or not identifier.quoted):
            identifier.set("this", name)
            identifier.set("quoted", True)
            spelled.append(name)
    if spelled:
        fixes.append(f"names in their stored case, quoted for PostgreSQL: {', '.join(sorted(set(spelled)))}")
    return (tree.sql(dialect=dialect), fixes) if fixes else (sql, [])
