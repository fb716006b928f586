"""The model writes the metadata instruction for a question, from the source's fields as the catalog lists them;
its reply is parsed and validated by pydantic, then checked against the catalog."""

from __future__ import annotations

from typing import Any

from llama_index.core.llms import LLM

from engines.documents.metadata.fields import Catalog, FieldSummary
from engines.documents.metadata.grounding import ground
from engines.documents.metadata.instruction import InstructionError, MetadataInstruction, check_instruction
from engines.models.llm import complete_json, json_reply

MAX_PROMPT_VALUES = 30

PROMPT = """Documents have these metadata fields:
{fields}

Turn the question into a JSON instruction that finds the documents it asks for by these fields:
{{"filters": [{{"field": ..., "op": "==" | "!=" | ">" | ">=" | "<" | "<=" | "contains", "value": ...}}], "sort_by": a field or null, "order": "asc" or "desc", "limit": how many documents, "count": true or false}}
- newest, latest, most recent: sort_by the date field, "desc"; oldest, earliest, first: "asc".
- longest, largest, most, highest: "desc"; shortest, smallest, fewest, lowest: "asc".
- "how many": "count": true. "top 3", "three", 三个, 前三: "limit": 3.
- A year or month is a value like "2021" or "2021-05"; a name inside a list field uses "contains".
- Use only the fields above, and values as they are listed.
- A question that no field answers (it asks about the documents' content) gets no filters, no sort_by and "count": false.

Examples, for videos with the fields channel (text), length_s (int), published (date):
Which is the shortest video? -> {{"filters": [], "sort_by": "length_s", "order": "asc", "limit": 1, "count": false}}
How many Science videos came out in 2021? -> {{"filters": [{{"field": "channel", "op": "==", "value": "Science"}}, {{"field": "published", "op": "==", "value": "2021"}}], "sort_by": null, "order": "desc", "limit": 1, "count": true}}
最新的三个视频是哪些？ -> {{"filters": [], "sort_by": "published", "order": "desc", "limit": 3, "count": false}}
What does the volcano video explain? -> {{"filters": [], "sort_by": null, "order": "desc", "limit": 1, "count": false}}

Question: {question}
JSON:"""


def _describe_field(field: FieldSummary) -> str:
    kind = "list of names" if field.type == "list" else field.type
    line = f"- {field.name} ({kind})"
    if field.description:
        line += f": {field.description}"
    if field.values and field.type != "list":
        shown = field.values[:MAX_PROMPT_VALUES]
        line += f"; values: {', '.join(shown)}" + (", ..." if len(field.values) > len(shown) else "")
    elif field.low is not None:
        line += f"; from {field.low} to {field.high}"
    return line


def instruction_schema(catalog: Catalog) -> dict[str, Any]:
    """The instruction's JSON schema with the source's own field names as the only choices (the local model's
    grammar)."""
    names = [f.name for f in catalog.fields]
    value = {"anyOf": [{"type": "string"}, {"type": "number"}]}
    condition = {
        "type": "object",
        "properties": {"field": {"enum": names}, "op": {"enum": ["==", "!=", ">", ">=", "<", "<=", "contains"]}, "value": value},
        "required": ["field", "op", "value"],
    }
    return {
        "type": "object",
        "properties": {
            "filters": {"type": "array", "items": condition, "maxItems": 4},
            "sort_by": {"anyOf": [{"enum": [n for n in names if catalog.field(n).type != "list"]}, {"type": "null"}]},
            "order": {"enum": ["asc", "desc"]},
            "limit": {"type": "integer"},
            "count": {"type": "boolean"},
        },
        "required": ["filters", "sort_by", "order", "limit", "count"],
    }


def parse_instruction(reply: str, catalog: Catalog, question: str | None = None) -> tuple[MetadataInstruction, list[str]]:
    """The reply as a checked instruction, kept to what `question` names (when given), with notes on what was
    changed; InstructionError (its message fit for the trace) when it is not one."""
    try:
        instruction = json_reply(reply, MetadataInstruction)
    except ValueError as err:
        raise InstructionError(f"the model's reply is not a JSON instruction ({err})") from err
    notes: list[str] = []
    if question is not None:
        instruction, notes = ground(instruction, catalog, question)
    return check_instruction(instruction, catalog), notes


def write_instruction(llm: LLM, question: str, catalog: Catalog) -> tuple[MetadataInstruction, list[str]]:
    fields = "\n".join(_describe_field(f) for f in catalog.fields)
    reply = complete_json(llm, PROMPT.format(fields=fields, question=question), instruction_schema(catalog))
    return parse_instruction(reply, catalog, question)
