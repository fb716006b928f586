"""Build one QueryEngineTool per source, with the description and profile texts the router needs."""

from __future__ import annotations

from dataclasses import dataclass

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.tools import QueryEngineTool

from engines.coverage_probe import Probe, coverage_probe, probe_copy_path
from engines.document_store import docstore_path, is_lite, open_index
from engines.documents import build_documents_engine
from engines.output_guard import OutputGuard
from engines.schema_match import SchemaVocabulary, schema_vocabulary
from engines.settings import Settings
from engines.sql import GuardedSQLDatabase, open_engine, schema_summary
from engines.sql_knowledge import SqlKnowledgeBase, open_knowledge_base
from engines.text_to_sql import TextToSQLQueryEngine
from engines.web import WebQueryEngine
from tools.descriptions import WEB_DESCRIPTION, WEB_PROFILE, DescriptionCache, clauses, describe_database, table_profile, table_words
from tools.sources import DocumentsSource, Source, SourcesError, SqlSource, WebSource


@dataclass
class SourceTool:
    source: Source
    tool: QueryEngineTool
    profile: list[str]
    database: GuardedSQLDatabase | None = None
    knowledge: SqlKnowledgeBase | None = None
    vocabulary: SchemaVocabulary | None = None
    probe: Probe | None = None
    index: VectorStoreIndex | None = None

    def profile_with(self, description: str) -> list[str]:
        """The profile the router would read were `description` the source's own (its contents unchanged)."""
        contents = self.profile[1 + len(clauses(self.source.description)):]
        return profile_texts(description, description, contents)


def profile_texts(description: str, given: str | None, contents: list[str]) -> list[str]:
    """A source's profile: the description it routes by, the user's own description clause by clause, then
    texts of what it holds (the layout `SourceTool.profile_with` relies on)."""
    return [description, *clauses(given), *contents]


def _documents_tool(
    source: DocumentsSource, settings: Settings, llm: LLM, embed: BaseEmbedding, cache: DescriptionCache, guard: OutputGuard
) -> SourceTool:
    entry = cache.get(source.name)
    if entry is None or not docstore_path(settings, source.name).is_file():
        raise SourcesError(f"source '{source.name}' has not been ingested yet: run `ragrouter ingest` (with the same --sources file) first")
    description = source.description or entry["description"]
    index = open_index(source, settings, embed)
    engine = build_documents_engine(index, settings, llm, embed, source.language, guard)
    tool = QueryEngineTool.from_defaults(engine, name=source.name, description=description)
    profile = profile_texts(description, source.description, entry["samples"])
    probe = coverage_probe(index.vector_store, is_lite(settings.milvus_uri), probe_copy_path(settings.state_dir, source.name))
    return SourceTool(source, tool, profile, probe=probe, index=index)


def _sql_profile(source: SqlSource, database: GuardedSQLDatabase) -> list[str]:
    """The description (given, or derived from the schema) followed by two texts per table: as named, and in words."""
    tables = schema_summary(database)
    description = source.description or describe_database(source.name, tables)
    return profile_texts(description, source.description, [*table_profile(tables), *table_words(tables)])


def _sql_tool(source: SqlSource, settings: Settings, llm: LLM, embed: BaseEmbedding) -> SourceTool:
    database = GuardedSQLDatabase(open_engine(source, settings.sql_timeout_s), settings.sql_row_limit)
    knowledge = open_knowledge_base(source.name, database.engine, source.knowledge, settings, embed)
    engine = TextToSQLQueryEngine(database=database, knowledge=knowledge, llm=llm, max_attempts=settings.sql_max_attempts, candidates=settings.sql_candidates)
    profile = _sql_profile(source, database)
    tool = QueryEngineTool.from_defaults(engine, name=source.name, description=profile[0])
    return SourceTool(source, tool, profile, database, knowledge, schema_vocabulary(database.engine), probe=knowledge.coverage)


def _web_profile(source: WebSource) -> list[str]:
    return profile_texts(source.description or WEB_DESCRIPTION, source.description, WEB_PROFILE)


def build_tools(sources: list[Source], settings: Settings, llm: LLM, embed: BaseEmbedding, guard: OutputGuard) -> list[SourceTool]:
    cache = DescriptionCache(settings.state_dir / "descriptions.json")
    tools = []
    for source in sources:
        if isinstance(source, DocumentsSource):
            tools.append(_documents_tool(source, settings, llm, embed, cache, guard))
        elif isinstance(source, SqlSource):
            tools.append(_sql_tool(source, settings, llm, embed))
        else:
            description = source.description or WEB_DESCRIPTION
            engine = WebQueryEngine(settings=settings, llm=llm)
            tool = QueryEngineTool.from_defaults(engine, name=source.name, description=description)
            tools.append(SourceTool(source, tool, _web_profile(source)))
    return tools
