"""Example first questions for the start page: one per kind of source, made from the configured sources, so a
new user sees what each route can answer before asking anything."""

from __future__ import annotations

import re

from engines.sources import SqlSource
from engines.sql.knowledge import read_knowledge_file
from tools.build import BuiltSource

WEB_EXAMPLE = "What is the weather in Berlin today?"
# A description lists what a source holds after its first colon ("HR policies: remote work, annual leave, …").
LISTED = re.compile(r":\s*([^,;/.，、。]+)")


def _documents_example(tool: BuiltSource) -> str:
    listed = LISTED.search(tool.tool.metadata.description or "")
    topic = listed.group(1).strip() if listed else tool.source.name
    return f"What does {tool.source.name} say about {topic}?"


def _sql_example(tool: BuiltSource) -> str:
    source = tool.source
    if isinstance(source, SqlSource) and source.knowledge:
        examples = read_knowledge_file(source.knowledge).examples
        if examples:
            return examples[0].question
    tables = sorted(tool.database.get_usable_table_names()) if tool.database else []
    return f"How many {tables[0].replace('_', ' ')} are there?" if tables else f"What is in {source.name}?"


def example_questions(tools: list[BuiltSource]) -> list[str]:
    """The first documents, SQL and web source's example question, in that order (those configured)."""
    examples = []
    for kind, make in (("documents", _documents_example), ("sql", _sql_example), ("web", lambda t: WEB_EXAMPLE)):
        tool = next((t for t in tools if t.source.kind == kind), None)
        if tool is not None:
            examples.append(make(tool))
    return examples
