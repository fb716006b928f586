"""The metadata instruction: what the model writes for a sort, superlative, count or filter question ("the newest
policy", "how many Final PEPs are there?"), validated by pydantic and then checked against the source's catalog,
so that every field exists and every value is one the documents have, in its stored spelling."""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from engines.documents.metadata.fields import VERSION, Catalog, FieldSummary

Op = Literal["==", "!=", ">", ">=", "<", "<=", "contains"]
RANGE_OPS = (">", ">=", "<", "<=")
MAX_LIMIT = 20
PARTIAL_DATE = re.compile(r"^(\d{4})(?:[-/.](\d{1,2}))?(?:[-/.](\d{1,2}))?$")


class Condition(BaseModel):
    field: str
    op: Op = "=="
    value: str | int | float | list[str | int | float]


class MetadataInstruction(BaseModel):
    """Filters, then an optional sort, then the first `limit` documents; `count` asks how many match."""

    filters: list[Condition] = []
    sort_by: str | None = None
    order: Literal["asc", "desc"] = "desc"
    limit: int = Field(default=1, ge=1)
    count: bool = False

    @field_validator("limit")
    @classmethod
    def _at_most(cls, limit: int) -> int:
        return min(limit, MAX_LIMIT)  # "list all of them" still answers, with the first MAX_LIMIT

    def is_empty(self) -> bool:
        return not (self.filters or self.sort_by or self.count)

    def listed(self) -> int:
        """How many documents the answer names: the first `limit` of a sort; every match (up to MAX_LIMIT) of a
        filter ("which PEPs did Brett Cannon write in 2023?" asks for all of them)."""
        return self.limit if self.sort_by else MAX_LIMIT


class InstructionError(ValueError):
    """The instruction names a field or value the source does not have; the message says which."""


def _field(catalog: Catalog, name: str) -> FieldSummary:
    field = catalog.field(name)
    if field is None:
        raise InstructionError(
            f"the instruction names the field '{name}', which this source does not have (fields: {', '.join(f.name for f in catalog.fields)})"
        )
    return field


def _listed_matches(field: FieldSummary, value: str) -> list[str]:
    """The stored values that are `value` or list it among comma-separated parts ("Packaging" also matches
    "Governance, Packaging"), ignoring case."""
    wanted = value.strip().casefold()
    return [v for v in field.values if wanted in (part.strip().casefold() for part in v.split(","))]


def _date_bounds(value: Any) -> tuple[str, str]:
    """The first day of the period a (partial) date names and the first day after it: 2010 -> 2010-01-01, 2011-01-01."""
    match = PARTIAL_DATE.match(str(value).strip())
    if not match:
        raise InstructionError(f"'{value}' is not a date")
    year, month, day = (int(g) if g else None for g in match.groups())
    try:
        if day:
            start = date(year, month, day)
            return start.isoformat(), date.fromordinal(start.toordinal() + 1).isoformat()
        if month:
            return date(year, month, 1).isoformat(), (date(year + month // 12, month % 12 + 1, 1)).isoformat()
        return date(year, 1, 1).isoformat(), date(year + 1, 1, 1).isoformat()
    except ValueError as err:
        raise InstructionError(f"'{value}' is not a date ({err})") from err


def _date_conditions(condition: Condition) -> list[Condition]:
    start, after = _date_bounds(condition.value)
    as_range = {
        "==": [(">=", start), ("<", after)],
        "!=": [],  # rare in questions; a partial date's "not in 2010" has no single comparison
        ">": [(">=", after)],
        ">=": [(">=", start)],
        "<": [("<", start)],
        "<=": [("<", after)],
    }.get(condition.op)
    if not as_range:
        raise InstructionError(f"'{condition.op}' cannot compare the date field '{condition.field}'")
    return [Condition(field=condition.field, op=op, value=v) for op, v in as_range]


def _number(field: FieldSummary, value: Any) -> int | float:
    try:
        number = float(value)
    except (TypeError, ValueError) as err:
        raise InstructionError(f"'{value}' is not a number, and '{field.name}' holds numbers") from err
    return int(number) if field.type == "int" and number.is_integer() else number


def _checked_condition(catalog: Catalog, condition: Condition) -> list[Condition]:
    field = _field(catalog, condition.field)
    value = condition.value[0] if isinstance(condition.value, list) and len(condition.value) == 1 else condition.value
    if isinstance(value, list):
        raise InstructionError(f"the filter on '{field.name}' gives several values; give one per filter")
    condition = condition.model_copy(update={"value": value})
    if field.type == "date":
        return _date_conditions(condition)
    if field.type in ("int", "float"):
        if condition.op == "contains":
            raise InstructionError(f"'contains' cannot compare the number field '{field.name}'")
        return [condition.model_copy(update={"value": _number(field, value)})]
    if field.type == "version" and not VERSION.match(str(value)):
        raise InstructionError(f"'{value}' is not a version like 3.10, and '{field.name}' holds versions")
    if condition.op in RANGE_OPS and field.type != "version":
        raise InstructionError(f"'{condition.op}' cannot compare the text field '{field.name}'")
    # A text field's values are categories: one the documents lack is a misreading. A version not listed is
    # simply one no document targets ("PEPs for Python 1.5": none).
    if condition.op in ("==", "!=") and field.type == "text" and field.values and not _listed_matches(field, str(value)):
        raise InstructionError(f"no document has {field.name} '{value}' (its values: {', '.join(field.values)})")
    return [condition.model_copy(update={"value": str(value)})]


def check_instruction(instruction: MetadataInstruction, catalog: Catalog) -> MetadataInstruction:
    """The instruction with dates made ranges and values checked; InstructionError when it cannot be applied."""
    filters = [checked for c in instruction.filters for checked in _checked_condition(catalog, c)]
    if instruction.sort_by is not None:
        sort_field = _field(catalog, instruction.sort_by)
        if sort_field.type == "list":
            raise InstructionError(f"documents cannot be sorted by the list field '{sort_field.name}'")
    return instruction.model_copy(update={"filters": filters})


def listed_values(catalog: Catalog, condition: Condition) -> list[str]:
    """For == and != on a field whose values the catalog lists: the stored values the condition means."""
    field = _field(catalog, condition.field)
    return _listed_matches(field, str(condition.value)) if field.values and field.type != "list" else []
