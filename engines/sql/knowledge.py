"""The SQL knowledge base (the RAGFlow/Vanna design): per database, what the model needs to write its SQL.

Three kinds of entry in one Milvus collection, told apart by the `type` field: `ddl` (one per table: its
columns, types and foreign keys, and the values of its low-cardinality text columns), `description` (what tables and
columns mean: synonyms, business terms) and `qsql` (a question with the SQL that answers it). The schema fills
it at start-up (again only when the schema changed), a knowledge file named in the sources file extends it,
and so does SQL people confirmed or corrected (feedback, origin `feedback`). Per question, retrieval by embedding picks the tables, descriptions and
examples to show the model, so a large schema does not overflow the prompt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import yaml
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters, VectorStoreQuery
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import MetaData, String, Table, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.schema import CreateTable
from sqlalchemy.types import NullType, UserDefinedType

from engines.matching.coverage_probe import nearest_cosine
from engines.milvus import open_vector_store
from engines.models.embeddings import embedding_dim
from engines.settings import Settings
from engines.sources import SourcesError

MAX_CELL_CHARS = 40
# A text column with at most this many distinct values is listed with its values (e.g. 年龄段, status, continent).
LOW_CARDINALITY = 20
# What the router's probe compares a question with: the questions users asked of this database and its business
# terms; not the tables, whose long texts match any question loosely (the table signatures are in the profile).
COVERAGE_KINDS = ("qsql", "description")


class KnowledgeFileError(SourcesError):
    """A knowledge file cannot be used; the message names the file and the problem."""


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1)
    sql: str = Field(min_length=1)


class KnowledgeFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    descriptions: list[str] = []
    examples: list[Example] = []


@dataclass
class Knowledge:
    """What one question is shown: tables first (most relevant first), then descriptions, then examples."""

    tables: list[str] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)
    examples: list[tuple[str, str]] = field(default_factory=list)


def read_knowledge_file(path: Path) -> KnowledgeFile:
    try:
        return KnowledgeFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise KnowledgeFileError(f"knowledge file {path} is not valid YAML: {err}") from err
    except ValidationError as err:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise KnowledgeFileError(f"knowledge file {path} is invalid: {details}") from err


def _cell(value: object) -> str:
    text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def table_entry(engine: Engine, table: Table) -> str:
    """The table's CREATE TABLE statement in the database's dialect (columns, types, keys), then, as SQL comments,
    the values of its low-cardinality text columns, so the model writes `'Planned'`, not `'planned'`.

    Measured on 120 Spider dev questions with the 1.5B default (docs/experiments/text-to-sql.md): CREATE TABLE statements and a SQL-comment
    question got 66.7 % of first attempts right where LlamaIndex's "Table 'x' has columns: ..." summaries got
    54.2 %; three sample rows per table added little (68.3 %) for longer prompts.
    """
    lines = [line.rstrip().replace(" ,", ",") for line in str(CreateTable(table).compile(engine)).strip().splitlines()]
    with engine.connect() as conn:
        rows = conn.execute(select(func.count()).select_from(table)).scalar() or 0
        for column in table.columns:
            if not isinstance(column.type, (String, _Untyped)):  # untyped SQLite columns often hold text
                continue
            values = conn.execute(select(column).distinct().where(column.is_not(None)).limit(LOW_CARDINALITY + 1)).scalars().all()
            # Categories repeat (a status, a continent); names in a 15-row table do not, and would only add length.
            if 1 < len(values) <= min(LOW_CARDINALITY, rows // 2):
                lines.append(f"-- Values of {table.name}.{column.name}: {', '.join(repr(_cell(v)) for v in values)}")
    return "\n".join(lines)


def _node(kind: str, origin: str, text: str, **extra: str) -> TextNode:
    """An entry with an id derived from its content, so re-filling the base from the same source adds nothing."""
    # The SQL is part of the id: a question whose SQL was corrected is another entry, which `sync` swaps in.
    ident = hashlib.sha256(f"{kind}\x00{origin}\x00{text}\x00{extra.get('sql', '')}".encode()).hexdigest()[:32]
    return TextNode(
        id_=ident, text=text, metadata={"type": kind, "origin": origin, **extra}, excluded_embed_metadata_keys=["type", "origin", "sql", "added"]
    )


class _Untyped(UserDefinedType):
    """A column declared without a type (SQLite allows it), which CreateTable cannot otherwise write."""

    cache_ok = True

    def get_col_spec(self) -> str:
        return ""


def schema_entries(engine: Engine) -> list[TextNode]:
    """One `ddl` entry per table; a `description` entry for each table or column comment the database holds."""
    metadata = MetaData()
    metadata.reflect(engine)
    for column in (c for table in metadata.tables.values() for c in table.columns if isinstance(c.type, NullType)):
        column.type = _Untyped()  # this reflection is private to this function
    nodes = [_node("ddl", "schema", table_entry(engine, table), table=name) for name, table in sorted(metadata.tables.items())]
    for name, table in sorted(metadata.tables.items()):
        comments = [f"{name}: {table.comment}"] if table.comment else []
        comments += [f"{name}.{c.name}: {c.comment}" for c in table.columns if c.comment]
        nodes += [_node("description", "schema", text, table=name) for text in comments]
    return nodes


def example_node(question: str, sql: str, origin: str) -> TextNode:
    """A question -> SQL example; the question is what gets embedded, the SQL rides along."""
    added = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return _node("qsql", origin, question.strip(), sql=sql.strip(), added=added)


def file_entries(path: Path) -> list[TextNode]:
    knowledge = read_knowledge_file(path)
    nodes = [_node("description", "file", text) for text in knowledge.descriptions]
    return nodes + [_node("qsql", "file", e.question.strip(), sql=e.sql.strip()) for e in knowledge.examples]


def _kind_filter(kind: str) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key="type", value=kind, operator=FilterOperator.EQ)])


class SqlKnowledgeBase:
    """One database's knowledge in its own Milvus collection (`rr_sqlkb_<source>`)."""

    def __init__(self, source_name: str, settings: Settings, embed: BaseEmbedding, top_descriptions: int = 5, top_examples: int = 3) -> None:
        self._embed = embed
        self.store = open_vector_store(settings, f"sqlkb_{source_name}", embedding_dim(embed), hybrid=False)
        self._top = {"description": top_descriptions, "qsql": top_examples}
        self._coverage: np.ndarray | None = None

    def _stored_ids(self, origin: str) -> set[str]:
        rows = self.store.client.query(self.store.collection_name, filter=f'origin == "{origin}"', output_fields=["id"])
        return {row["id"] for row in rows}

    def _add(self, nodes: list[TextNode]) -> None:
        vectors = self._embed.get_text_embedding_batch([n.get_content(metadata_mode="embed") for n in nodes])
        for node, vector in zip(nodes, vectors):
            node.embedding = vector
        self.store.add(nodes)
        self._coverage = None

    def sync(self, origin: str, nodes: list[TextNode]) -> int:
        """Make the entries of `origin` exactly `nodes`: add the new ones, delete the gone ones; returns how many were added."""
        stored = self._stored_ids(origin)
        wanted = {n.node_id: n for n in nodes}
        gone = sorted(stored - wanted.keys())
        if gone:
            self.store.client.delete(self.store.collection_name, ids=gone)
            self._coverage = None
        new = [n for ident, n in wanted.items() if ident not in stored]
        if new:
            self._add(new)
        return len(new)

    def coverage(self, vector: list[float]) -> float:
        """Cosine of the stored example question or description nearest to a query vector (0 when there is none).

        The router's probe for this database: a question like one a user confirmed routes here. The vectors are
        few (examples and terms, not rows), so they are held in memory and re-read after every change.
        """
        if self._coverage is None:
            kinds = ", ".join(f'"{k}"' for k in COVERAGE_KINDS)
            field = self.store.embedding_field
            rows = self.store.client.query(self.store.collection_name, filter=f"type in [{kinds}]", output_fields=[field])
            self._coverage = np.asarray([row[field] for row in rows], dtype=np.float32)
        return nearest_cosine(self._coverage, vector)

    def _search(self, vector: list[float], kind: str, top_k: int) -> list[TextNode]:
        query = VectorStoreQuery(query_embedding=vector, similarity_top_k=top_k, filters=_kind_filter(kind))
        return list(self.store.query(query).nodes or [])

    def retrieve(self, question: str, max_tables: int = 64) -> Knowledge:
        vector = self._embed.get_query_embedding(question)
        return Knowledge(
            tables=[n.get_content() for n in self._search(vector, "ddl", max_tables)],
            descriptions=[n.get_content() for n in self._search(vector, "description", self._top["description"])],
            examples=[(n.get_content(), n.metadata["sql"]) for n in self._search(vector, "qsql", self._top["qsql"])],
        )


def open_knowledge_base(source_name: str, engine: Engine, knowledge_file: Path | None, settings: Settings, embed: BaseEmbedding) -> SqlKnowledgeBase:
    """The source's knowledge base, brought up to date with its schema and its knowledge file."""
    base = SqlKnowledgeBase(source_name, settings, embed)
    base.sync("schema", schema_entries(engine))
    base.sync("file", file_entries(knowledge_file) if knowledge_file else [])
    return base
