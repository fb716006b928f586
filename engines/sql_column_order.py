"""The SELECT's columns in the order the question names them.

"List the maximum weight and pet type" asks for the weight first; the 1.5B default writes the grouping column
first out of habit (`SELECT PetType, MAX(weight) ... GROUP BY PetType`). The rows are the same, but a table the
user reads, and a result compared as tuples, have their columns in the question's order. Each shown expression
is placed where the question first names it: a column by a word of its name that the other shown columns'
names lack (`Fname` / `Lname`: first / last), an aggregate by its word ("how many", "average", "maximum", ...).
Only aggregates and columns move past each other; among themselves they keep the written order. When any shown
expression cannot be placed, the query is left as written.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from engines.language import has_chinese
from engines.schema_match import split_name, stem, terms

# The words that ask for each aggregate, as the question would say them.
AGGREGATE_WORDS = {
    exp.Count: re.compile(r"\b(?:how many|number|count|total number)\b", re.I),
    exp.Avg: re.compile(r"\b(?:average|mean|avg)\b", re.I),
    exp.Max: re.compile(r"\b(?:max|maximum|highest|largest|biggest|greatest|oldest|latest|longest)\b", re.I),
    exp.Min: re.compile(r"\b(?:min|minimum|lowest|smallest|least|youngest|earliest|shortest)\b", re.I),
    exp.Sum: re.compile(r"\b(?:total|sum)\b", re.I),
}
_WORD = re.compile(r"[a-z]+")


def _column_place(column: exp.Column, others: list[exp.Column], words: list[str]) -> int | None:
    """The first word of the question that names the column, by the words of its name the others' names lack,
    else by any word of its name (`StuID` beside `PetID`: "their ids")."""
    own = terms(split_name(column.name))
    shared = {t for other in others if other.name != column.name for t in terms(split_name(other.name))}
    for wanted in (own - shared, own):
        place = next((i for i, word in enumerate(words) if word in wanted), None)
        if place is not None:
            return place
    return None


def _aggregate_place(aggregate: exp.AggFunc, question: str) -> int | None:
    """Where the question asks for the aggregate, in words from its start."""
    cue = next((pattern for kind, pattern in AGGREGATE_WORDS.items() if isinstance(aggregate, kind)), None)
    found = cue.search(question) if cue else None
    return len(_WORD.findall(question[: found.start()].lower())) if found else None


def _place(expression: exp.Expression, columns: list[exp.Column], question: str, words: list[str]) -> tuple[int, int] | None:
    """(place in the question, tie-break) of one shown expression; None when the question does not name it."""
    shown = expression.this if isinstance(expression, exp.Alias) else expression
    if isinstance(shown, exp.Column):
        place = _column_place(shown, columns, words)
        return None if place is None else (place, 0)
    if isinstance(shown, exp.AggFunc):
        place = _aggregate_place(shown, question)
        inner = shown.find(exp.Column)
        tie = _column_place(inner, columns, words) if inner is not None else 0
        return None if place is None else (place, tie if tie is not None else 0)
    return None


def _kept_in_kind(expressions: list[exp.Expression], places: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The places with the written order kept among the columns and among the aggregates: only where aggregates
    stand between columns moves. ("For each continent, list its id, name, and how many countries": the
    continent is named first as the group, but the id is asked for first; on Spider dev every gain of the
    reordering was an aggregate moved past a column.)"""
    kept, latest = list(places), {}
    for i, expression in enumerate(expressions):
        kind = bool(expression.find(exp.AggFunc))
        latest[kind] = kept[i] = max(places[i], latest.get(kind, places[i]))
    return kept


def in_question_order(question: str, tree: exp.Expression) -> exp.Expression | None:
    """The query with its shown expressions reordered as the question names them; None when nothing moves."""
    if has_chinese(question) or not isinstance(tree, exp.Select) or len(tree.expressions) < 2:
        return None
    order = tree.args.get("order")
    if order is not None and any(isinstance(o.this, exp.Literal) for o in order.expressions):  # ORDER BY 2 names a place
        return None
    words = [stem(w) for w in _WORD.findall(question.lower())]
    columns = [e.this if isinstance(e, exp.Alias) else e for e in tree.expressions]
    columns = [c for c in columns if isinstance(c, exp.Column)] + [c for e in tree.expressions for c in e.find_all(exp.Column) if c.find_ancestor(exp.AggFunc)]
    places = [_place(e, columns, question, words) for e in tree.expressions]
    if any(p is None for p in places):
        return None
    kept = _kept_in_kind(tree.expressions, places)
    moved = sorted(range(len(places)), key=lambda i: (kept[i], i))
    if moved == list(range(len(places))):
        return None
    reordered = tree.copy()
    reordered.set("expressions", [tree.expressions[i].copy() for i in moved])
    return reordered


def order_columns(question: str, sql: str, dialect: str = "sqlite") -> tuple[str, list[str]]:
    """The query with its columns in the question's order, and the note saying so; else as written."""
    try:
        ordered = in_question_order(question, sqlglot.parse_one(sql, read=dialect))
    except sqlglot.errors.ParseError:
        return sql, []
    return (ordered.sql(dialect=dialect), ["the columns in the order the question names them"]) if ordered is not None else (sql, [])
