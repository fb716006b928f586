"""A database's tables, columns and foreign keys, read once: what the SQL fixes and repair hints check names against."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy import inspect
from sqlalchemy.engine import Engine


@dataclass(frozen=True)
class Schema:
    """Each table's columns, and the foreign keys as (table, column, referred table, referred column)."""

    columns: dict[str, list[str]]
    links: list[tuple[str, str, str, str]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Tables, then `table.column` for every column: the names a repair hint picks the closest from."""
        return list(self.columns) + [f"{t}.{c}" for t, names in self.columns.items() for c in names]

    @cached_property
    def lowered(self) -> dict[str, set[str]]:
        """Lower-cased table -> lower-cased column names, computed once per schema (the fixes check every query)."""
        return {t.lower(): {c.lower() for c in names} for t, names in self.columns.items()}


def read_schema(engine: Engine, tables: list[str]) -> Schema:
    inspector = inspect(engine)
    links = [
        (t, a, key["referred_table"], b)
        for t in tables
        for key in inspector.get_foreign_keys(t)
        for a, b in zip(key["constrained_columns"], key["referred_columns"])
    ]
    return Schema({t: [c["name"] for c in inspector.get_columns(t)] for t in tables}, links)
