"""The answer to a metadata question, written from the lookup (no model writes it): how many documents match, or
the first ones in order, each named by its title and the field values that put it there; or that none match."""

from __future__ import annotations

from typing import Any

from engines.documents.metadata.instruction import MetadataInstruction
from engines.documents.metadata.lookup import Lookup
from engines.language import answer_in_chinese


def shown_fields(instruction: MetadataInstruction) -> list[str]:
    """The fields whose values explain a document's place: the sort field, then each filtered one."""
    names = [instruction.sort_by] if instruction.sort_by else []
    names += [c.field for c in instruction.filters if c.field not in names]
    return [n for n in names if n != "title"]


def label(document: dict[str, Any], instruction: MetadataInstruction) -> str:
    """ "PEP 20: The Zen of Python (pep-0020), created 2004-08-19" as far as the fields allow."""
    ident = document.get("file_name") or document["doc_id"]
    name = f"{document['title']} ({ident})" if document.get("title") else str(ident)
    values = [f"{f} {_value(document.get(f))}" for f in shown_fields(instruction)]
    return ", ".join([name, *values])


def _value(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def conditions(instruction: MetadataInstruction) -> str:
    return ", ".join(f"{c.field} {c.op} {c.value}" for c in instruction.filters)


def _matching(count: int) -> str:
    return "1 document matches" if count == 1 else f"{count} documents match"


def _order(instruction: MetadataInstruction, chinese: bool) -> str:
    if chinese:
        return f"按 {instruction.sort_by} {'从高到低' if instruction.order == 'desc' else '从低到高'}"
    return f"by {instruction.sort_by}, {'highest' if instruction.order == 'desc' else 'lowest'} first"


def metadata_answer(question: str, lookup: Lookup, instruction: MetadataInstruction) -> str:
    zh = answer_in_chinese(question)
    matched, where = len(lookup.documents), conditions(instruction)
    if not matched:
        if zh:
            return f"没有文档符合条件（{where or '无'}）。"
        return f"No document matches {where or 'these conditions'}."
    if instruction.count:
        if zh:
            return f"共有 {matched} 篇文档符合条件（{where or '全部'}）。"
        return f"{_matching(matched)}{f' {where}' if where else ''}."
    listed = lookup.documents[: instruction.listed()]
    lines = [label(d, instruction) for d in listed]
    if zh:
        head = f"符合条件的文档共 {matched} 篇" + (f"，{_order(instruction, True)}" if instruction.sort_by else "") + "："
    else:
        head = _matching(matched) + (f", {_order(instruction, False)}" if instruction.sort_by else "") + ":"
    if len(lines) == 1:
        return f"{head} {lines[0]}."
    return head + "\n" + "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
