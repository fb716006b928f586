"""Keep the model's filters to what the question says. A small model adds filters nobody asked for ("type ==
Process" for "the oldest PEP"), files a value under the wrong field ("topic == Process") or filters on the name
of the documents themselves ("type == PEP"); each filter is kept only when the question names its value, moved
to the one field whose listed values hold it, and dropped when its value is the source's own name. Every change
is a note in the trace."""

from __future__ import annotations

import re

from engines.documents.metadata.fields import Catalog
from engines.documents.metadata.instruction import Condition, MetadataInstruction

NON_WORD = re.compile(r"[\W_]+")


def _squeezed(text: str) -> str:
    """Case, spaces and punctuation gone: "Standards Track" is named by "standards-track PEPs"."""
    return NON_WORD.sub("", text.casefold())


def _named(question: str, condition: Condition, kind: str) -> bool:
    value = str(condition.value)
    if kind == "date":
        return value[:4] in question  # a year at least: "before 2005", "2020 年"
    if kind in ("int", "float"):
        number = float(condition.value) if re.fullmatch(r"-?\d+(\.\d+)?", value) else None
        shown = str(int(number)) if number is not None and number.is_integer() else value
        return shown in question.replace(",", "")
    return _squeezed(value) in _squeezed(question)


def _owner(catalog: Catalog, condition: Condition) -> str | None:
    """The one text field whose listed values include the condition's value, when it is not the field named."""
    wanted = str(condition.value).casefold()
    owners = [f.name for f in catalog.fields if f.type == "text" and any(wanted == v.casefold() for v in f.values)]
    return owners[0] if len(owners) == 1 and owners[0] != condition.field else None


def _as_named(question: str, condition: Condition, kind: str) -> Condition:
    """A date as precise as the question names it: "2026 年" with the value 2026-08-05 (the newest date, which the
    prompt shows) is the year 2026."""
    value = str(condition.value)
    if kind != "date" or value in question:
        return condition
    for length in (7, 4):  # 2026-08, then 2026
        if value[:length] in question:
            return condition.model_copy(update={"value": value[:length]})
    return condition


def ground(instruction: MetadataInstruction, catalog: Catalog, question: str) -> tuple[MetadataInstruction, list[str]]:
    """The instruction with only the filters the question names, each under the field that holds its value."""
    kept, notes = [], []
    source_names = {catalog.source.casefold(), catalog.source.casefold().rstrip("s")}
    for condition in instruction.filters:
        field = catalog.field(condition.field)
        described = f"{condition.field} {condition.op} {condition.value}"
        if str(condition.value).casefold() in source_names:
            notes.append(f"dropped the filter {described}: '{condition.value}' names the documents themselves")
        elif field is not None and not _named(question, condition, field.type):
            notes.append(f"dropped the filter {described}: the question does not name '{condition.value}'")
        elif (
            field is not None
            and field.type == "text"
            and (owner := _owner(catalog, condition))
            and not any(v.casefold() == str(condition.value).casefold() for v in field.values)
        ):
            notes.append(f"moved the filter {described} to the field {owner}, whose values include it")
            kept.append(condition.model_copy(update={"field": owner}))
        else:
            kept.append(_as_named(question, condition, field.type) if field is not None else condition)
    return instruction.model_copy(update={"filters": kept}), notes
