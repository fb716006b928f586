"""Document metadata fields: declared per source, typed (given or inferred), and summarised at ingest into a
catalog (each field's type, its values when they are few, its range) that the metadata instruction is checked
against."""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engines.sources import FieldType, MetadataField

# A text field with at most this many distinct values lists them in the catalog (and the model's prompt), so a
# value the model names can be checked and put in its stored spelling.
MAX_LISTED_VALUES = 40
DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d-%b-%Y", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y年%m月%d日")
VERSION = re.compile(r"^\d+(\.(\d+|x))+$")  # 3.10, 2.7.12, 3.x


class FieldSummary(BaseModel):
    name: str
    type: FieldType
    description: str | None = None
    values: list[str] = []  # every distinct value, when there are at most MAX_LISTED_VALUES (text and list fields)
    low: Any = None
    high: Any = None
    documents: int = 0  # documents that have a value


class Catalog(BaseModel):
    source: str
    documents: int
    fields: list[FieldSummary]

    def field(self, name: str) -> FieldSummary | None:
        return next((f for f in self.fields if f.name == name), None)


def as_date(value: Any) -> str | None:
    """An ISO date string (which Milvus compares correctly as text), or None when `value` is not a date."""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(str(value).strip(), fmt).date().isoformat()
        except ValueError:
            continue
    return None


def version_key(value: str) -> tuple[int, ...]:
    """3.10 after 3.9, as a person reads versions (text order would put 3.10 first)."""
    return tuple(int(part) if part.isdigit() else 0 for part in value.split("."))


def _number(value: Any) -> int | float | None:
    """A number, or a string that reads as one (a CSV's cells are all strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    for read in (int, float):
        try:
            return read(str(value))
        except ValueError:
            continue
    return None


def infer_type(values: list[Any]) -> FieldType:
    present = [v for v in values if v is not None and v != ""]
    if not present:
        return "text"
    if all(isinstance(v, list) for v in present):
        return "list"
    # "3.10" is a version, not 3.1: strings that a float would change are versions (declare `float` for prices).
    if all(isinstance(v, str) and VERSION.match(v) for v in present) and any(str(_number(v)) != v for v in present):
        return "version"
    numbers = [_number(v) for v in present]
    if all(isinstance(n, int) for n in numbers):
        return "int"
    if all(n is not None for n in numbers):
        return "float"
    if all(as_date(v) for v in present):
        return "date"
    return "text"


def coerce(value: Any, kind: FieldType) -> Any:
    """The value as stored in Milvus for a field of `kind`; None when it is missing or cannot be read as one."""
    if value is None or value == "":
        return None
    try:
        if kind == "list":
            items = value if isinstance(value, list) else str(value).split(",")
            return [str(item).strip() for item in items if str(item).strip()]
        if kind == "int":
            return int(float(value))
        if kind == "float":
            return float(value)
    except (TypeError, ValueError):
        return None
    if kind == "date":
        return as_date(value)
    if kind == "version":
        return str(value) if VERSION.match(str(value)) else None
    return str(value)


def summarise(field: MetadataField, kind: FieldType, values: list[Any]) -> FieldSummary:
    present = [v for v in values if v is not None]
    summary = FieldSummary(name=field.name, type=kind, description=field.description, documents=len(present))
    if kind in ("text", "list", "version"):
        distinct = sorted({str(i) for v in present for i in (v if isinstance(v, list) else [v])})
        summary.values = distinct if len(distinct) <= MAX_LISTED_VALUES else []
    if kind not in ("text", "list") and present:
        key = version_key if kind == "version" else None
        summary.low, summary.high = min(present, key=key), max(present, key=key)
    return summary


def catalog_path(state_dir: Path, source_name: str) -> Path:
    return state_dir / "metadata" / f"{source_name}.json"


def save_catalog(state_dir: Path, catalog: Catalog) -> None:
    path = catalog_path(state_dir, catalog.source)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(catalog.model_dump_json(indent=1), encoding="utf-8")
    path.with_suffix(".tmp").replace(path)


def load_catalog(state_dir: Path, source_name: str) -> Catalog | None:
    path = catalog_path(state_dir, source_name)
    return Catalog.model_validate(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
