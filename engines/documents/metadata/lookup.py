"""Apply a checked metadata instruction to a source's collection: Milvus filters what it can compare (numbers,
dates, listed values), code does the rest (a name inside a list, part of a title, version ranges) and the sort,
one row per document."""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
from llama_index.vector_stores.milvus import MilvusVectorStore
from llama_index.vector_stores.milvus.utils import parse_standard_filters

from engines.documents.metadata.fields import Catalog, version_key
from engines.documents.metadata.instruction import Condition, MetadataInstruction, listed_values

# A query iterator on Milvus Lite warns on every call that Lite keeps no server timestamp and reads with the
# client's instead, which is all a one-process store needs. (Set here: pymilvus configures its loggers on import.)
logging.getLogger("pymilvus.orm.iterator").setLevel(logging.ERROR)
COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
MILVUS_OPS = {
    "==": FilterOperator.EQ,
    "!=": FilterOperator.NE,
    ">": FilterOperator.GT,
    ">=": FilterOperator.GTE,
    "<": FilterOperator.LT,
    "<=": FilterOperator.LTE,
}
QUERY_BATCH = 1000
IDENTITY = ("doc_id", "file_name")  # how the answer names a document that has no title: its file, else its id


@dataclass
class Lookup:
    """The documents that match, in order (all of them; the answer lists the first `limit`), and the Milvus
    expression that filtered them."""

    documents: list[dict[str, Any]]
    expression: str
    unsorted: int = 0  # documents that match but have no value for the sort field


def _milvus_filter(catalog: Catalog, condition: Condition) -> MetadataFilter | None:
    kind = catalog.field(condition.field).type
    if kind in ("int", "float", "date"):
        return MetadataFilter(key=condition.field, operator=MILVUS_OPS[condition.op], value=condition.value)
    values = listed_values(catalog, condition) if condition.op in ("==", "!=") and kind == "text" else []
    if values:
        return MetadataFilter(key=condition.field, operator=FilterOperator.IN if condition.op == "==" else FilterOperator.NIN, value=values)
    return None


def _holds(condition: Condition, kind: str, stored: Any) -> bool:
    """A condition Milvus was not given, checked on one document's value (text compared without case)."""
    if stored is None:
        return False
    wanted = str(condition.value).casefold()
    if kind == "list":
        found = any(wanted in str(item).casefold() for item in stored)
        return found if condition.op != "!=" else not found
    if condition.op == "contains":
        return wanted in str(stored).casefold()
    if kind == "version":
        return COMPARE[condition.op](version_key(str(stored)), version_key(str(condition.value)))
    return COMPARE[condition.op](str(stored).casefold(), wanted)


def _rows(store: MilvusVectorStore, expression: str, fields: list[str]) -> list[dict[str, Any]]:
    iterator = store.client.query_iterator(store.collection_name, filter=expression, output_fields=[*IDENTITY, *fields], batch_size=QUERY_BATCH)
    rows: list[dict[str, Any]] = []
    try:
        while batch := iterator.next():
            rows.extend(batch)
    finally:
        iterator.close()
    return rows


def _sort_key(kind: str) -> Callable[[Any], Any]:
    return (lambda v: version_key(str(v))) if kind == "version" else (lambda v: str(v).casefold() if kind == "text" else v)


def find_documents(store: MilvusVectorStore, catalog: Catalog, instruction: MetadataInstruction) -> Lookup:
    """Every document matching the instruction's filters (one per document, not per chunk), sorted as it asks."""
    in_milvus, in_code = [], []
    for condition in instruction.filters:
        built = _milvus_filter(catalog, condition)
        in_milvus.append(built) if built else in_code.append(condition)
    _, expression = parse_standard_filters(MetadataFilters(filters=in_milvus))
    fields = [f.name for f in catalog.fields]
    by_document: dict[str, dict[str, Any]] = {}
    for row in _rows(store, expression or 'doc_id != ""', fields):
        by_document.setdefault(row["doc_id"], {name: row.get(name) for name in (*IDENTITY, *fields)})
    documents = [d for d in by_document.values() if all(_holds(c, catalog.field(c.field).type, d.get(c.field)) for c in in_code)]
    documents.sort(key=lambda d: d["doc_id"])
    if instruction.sort_by is None:
        return Lookup(documents, expression)
    sortable = [d for d in documents if d.get(instruction.sort_by) is not None]
    key = _sort_key(catalog.field(instruction.sort_by).type)
    sortable.sort(key=lambda d: key(d[instruction.sort_by]), reverse=instruction.order == "desc")
    return Lookup(sortable, expression, unsorted=len(documents) - len(sortable))
