"""Which failed queries go back to the model, and the hint that goes with them (the closest real names)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from engines.sql.guard import SQLRefused

# Errors a model can fix by rewriting its query, by the database's message (SQLite's, then PostgreSQL/MySQL's).
FIXABLE = {
    "no such column": "unknown-column",
    "no such table": "unknown-table",
    "no such function": "unknown-function",
    "does not exist": "unknown-name",
    "unknown column": "unknown-column",
    "syntax error": "syntax",
    "incomplete input": "syntax",
    "unrecognized token": "syntax",
    "ambiguous column": "ambiguous-column",
    "misuse of aggregate": "aggregate",
    "wrong number of arguments": "function-arguments",
    "must appear in the group by": "aggregate",
    "operator does not exist": "types",  # PostgreSQL compares no text with a number: a cast or a quoted literal fixes it
    "invalid input syntax": "types",
}
# Errors no rewrite fixes: retrying would only repeat the harm or the wait.
UNFIXABLE = {
    "interrupted": "timeout",
    "timeout": "timeout",
    "readonly": "permissions",
    "read-only": "permissions",
    "attempt to write": "permissions",
    "permission denied": "permissions",
    "not authorized": "permissions",
}
# Guard rules that mean the model got a name or the syntax wrong, not that the statement was hostile.
FIXABLE_RULES = {"known-tables": "unknown-table", "parse": "syntax"}
UNKNOWN_NAME = re.compile(r"(?:no such (?:column|table|function)|unknown column|column|relation|function)[:\s]+[\"'`]?([\w.]+)", re.I)


@dataclass(frozen=True)
class Failure:
    kind: str
    fixable: bool
    message: str


def classify_refusal(err: SQLRefused) -> Failure:
    kind = FIXABLE_RULES.get(err.rule)
    return Failure(kind or f"refused:{err.rule}", kind is not None, str(err))


def classify_error(err: Exception) -> Failure:
    # LlamaIndex's run_sql re-raises the driver's error (with the whole statement) from the original one.
    cause = err.__cause__ or err
    message = " ".join(str(getattr(cause, "orig", None) or cause).split())[:300]
    lowered = message.lower()
    for needle, kind in UNFIXABLE.items():
        if needle in lowered:
            return Failure(kind, False, message)
    for needle, kind in FIXABLE.items():
        if needle in lowered:
            return Failure(kind, True, message)
    return Failure("other", False, message)


def closest_names(message: str, names: list[str]) -> list[str]:
    """Real table/column names that look like the one the error complains about (`T1.nme` -> `name`)."""
    found = UNKNOWN_NAME.search(message)
    if not found:
        return []
    wanted = found.group(1).split(".")[-1].lower()
    short = {n.split(".")[-1].lower() for n in names}
    close = difflib.get_close_matches(wanted, sorted(short), n=3, cutoff=0.6)
    # Every table's column of a close name: `name` may be in customers and in products.
    return [n for m in close for n in names if n.split(".")[-1].lower() == m][:6]


def repair_hint(failure: Failure, names: list[str]) -> str:
    close = closest_names(failure.message, names) if failure.kind.startswith("unknown") else []
    return failure.message + (f"\nThe closest real names: {', '.join(close)}." if close else "")
