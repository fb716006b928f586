"""Build what the router chooses among, from the sources file: one QueryEngineTool per source, with the
description and profile texts the router reads, and the router over them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llama_index.core import Settings as LlamaSettings
from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.query_engine import BaseQueryEngine
from llama_index.core.tools import QueryEngineTool

from engines.aliases import Aliases
from engines.answers.output_guard import OutputGuard, load_output_guard
from engines.crag.workflow import CorrectiveQueryEngine, CorrectiveRAG
from engines.documents.engine import build_documents_engine
from engines.documents.metadata.engine import MetadataQueryEngine
from engines.documents.metadata.fields import Catalog, load_catalog
from engines.documents.store import docstore_path, open_index
from engines.matching.coverage_probe import coverage_probe, probe_copy_path
from engines.matching.schema_terms import schema_vocabulary
from engines.milvus import is_lite
from engines.models.embeddings import settings_embedding
from engines.models.llm import build_llm
from engines.routing.router import RagRouter
from engines.routing.source_tool import SourceTool, profile_texts
from engines.settings import Settings
from engines.sources import DocumentsSource, Source, SourcesError, SqlSource, WebSource, load_sources
from engines.sql.database import GuardedSQLDatabase, open_engine, schema_summary
from engines.sql.engine import TextToSQLQueryEngine, engine_limits
from engines.sql.knowledge import SqlKnowledgeBase, open_knowledge_base
from engines.tracing.export import start_export, unexported
from engines.web import WebQueryEngine
from tools.aliases import schema_columns, source_aliases
from tools.descriptions import WEB_DESCRIPTION, WEB_PROFILE, DescriptionCache, describe_database, table_profile, table_words


@dataclass
class BuiltSource(SourceTool):
    """A source's tool as the router takes it, with the path's parts that the app and evals reach for (a database
    to check corrected SQL on, the SQL knowledge base to add examples to, the index to retrieve from directly)."""

    database: GuardedSQLDatabase | None = None
    knowledge: SqlKnowledgeBase | None = None
    index: VectorStoreIndex | None = None
    aliases: Aliases | None = None


def built_sources(router: RagRouter) -> list[BuiltSource]:
    """The router's tools as this module built them."""
    return [t for t in router.tools if isinstance(t, BuiltSource)]


def built(router: RagRouter, name: str) -> BuiltSource:
    """Source `name` as this module built it (SourcesError when the router has none of that name)."""
    tool = router.tool(name)
    if not isinstance(tool, BuiltSource):
        raise SourcesError(f"source '{name}' was not built by tools/build.py")
    return tool


def build_router(settings: Settings, sources_file: Path | None = None, llm: LLM | None = None, embed: BaseEmbedding | None = None) -> RagRouter:
    """Everything needed to answer: the sources file read, the models (unless given), one tool per source and
    the router over them. A bad sources file fails before any model loads."""
    sources = load_sources(sources_file or settings.sources_file)
    start_export(settings)  # a bad RAGROUTER_OTEL target fails here too, before any model loads
    embed = embed or settings_embedding(settings)
    llm = llm or build_llm(settings)
    # Keep LlamaIndex from reaching for its OpenAI defaults anywhere we did not pass a model explicitly.
    LlamaSettings.llm, LlamaSettings.embed_model = llm, embed
    guard = load_output_guard(settings.output_guard_file)
    with unexported():  # embedding the profiles and probes answers no question: no trace of its own
        return RagRouter(settings, build_tools(sources, settings, llm, embed, guard), llm, embed, guard)


def _documents_engine(
    index: VectorStoreIndex, settings: Settings, llm: LLM, embed: BaseEmbedding, source: DocumentsSource, guard: OutputGuard
) -> BaseQueryEngine:
    """The plain documents path, or (with `RAGROUTER_CRAG`) the plain path's pieces inside the Corrective RAG workflow;
    its passages labelled with the source's metadata fields."""
    engine = build_documents_engine(index, settings, llm, embed, source.language, source.metadata_names())
    if not settings.crag:
        return engine
    return CorrectiveQueryEngine(workflow=CorrectiveRAG(engine, llm, settings, guard, embed))


def _catalog(source: DocumentsSource, settings: Settings) -> Catalog:
    catalog = load_catalog(settings.state_dir, source.name)
    missing = set(source.metadata_names()) - {f.name for f in catalog.fields} if catalog else set(source.metadata_names())
    if missing:
        raise SourcesError(
            f"source '{source.name}' declares metadata fields its collection was not ingested with ({', '.join(sorted(missing))}): "
            "run `ragrouter ingest` (with the same --sources file) again"
        )
    return catalog


def _documents_tool(
    source: DocumentsSource, settings: Settings, llm: LLM, embed: BaseEmbedding, cache: DescriptionCache, guard: OutputGuard
) -> BuiltSource:
    entry = cache.get(source.name)
    if entry is None or not docstore_path(settings, source.name).is_file():
        raise SourcesError(f"source '{source.name}' has not been ingested yet: run `ragrouter ingest` (with the same --sources file) first")
    description = source.description or entry["description"]
    index = open_index(source, settings, embed)
    engine = _documents_engine(index, settings, llm, embed, source, guard)
    if source.metadata_fields and settings.metadata_instructions:
        engine = MetadataQueryEngine(engine, index.vector_store, _catalog(source, settings), llm)
    tool = QueryEngineTool.from_defaults(engine, name=source.name, description=description)
    profile = profile_texts(description, source.description, entry["samples"])
    probe = coverage_probe(index.vector_store, is_lite(settings.milvus_uri), probe_copy_path(settings.state_dir, source.name))
    return BuiltSource(source, tool, profile, probe=probe, index=index)


def _sql_profile(source: SqlSource, database: GuardedSQLDatabase) -> list[str]:
    """The description (given, or derived from the schema) followed by two texts per table: as named, and in words."""
    tables = schema_summary(database)
    description = source.description or describe_database(source.name, tables)
    return profile_texts(description, source.description, [*table_profile(tables), *table_words(tables)])


def _sql_tool(source: SqlSource, settings: Settings, llm: LLM, embed: BaseEmbedding) -> BuiltSource:
    database = GuardedSQLDatabase(open_engine(source, settings.sql_timeout_s), settings.sql_row_limit)
    aliases = source_aliases(source, database.engine, settings, (lambda: llm) if settings.aliases else None)
    knowledge = open_knowledge_base(source.name, database.engine, source.knowledge, settings, embed)
    engine = TextToSQLQueryEngine(
        database=database,
        knowledge=knowledge,
        llm=llm,
        source_name=source.name,
        **engine_limits(settings),
    )
    profile = _sql_profile(source, database)
    tool = QueryEngineTool.from_defaults(engine, name=source.name, description=profile[0])
    vocabulary = schema_vocabulary(database.engine, aliases)
    translated = aliases.table_texts(schema_columns(database.engine))
    return BuiltSource(source, tool, profile, vocabulary, knowledge.coverage, translated, database, knowledge, aliases=aliases)


def _web_profile(source: WebSource) -> list[str]:
    return profile_texts(source.description or WEB_DESCRIPTION, source.description, WEB_PROFILE)


def build_tools(sources: list[Source], settings: Settings, llm: LLM, embed: BaseEmbedding, guard: OutputGuard) -> list[BuiltSource]:
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
            tools.append(BuiltSource(source, tool, _web_profile(source)))
    return tools
