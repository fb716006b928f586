"""The sources file: a YAML list of document collections, SQL databases and web search, validated by pydantic."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engines.aliases import Aliases

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$"
FIELD_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# Names the collection's own columns or the pipeline's stamps already use.
RESERVED_FIELDS = {"id", "doc_id", "document_id", "ref_doc_id", "embedding", "sparse_embedding", "text", "_node_content", "_node_type"}


class SourcesError(ValueError):
    """The sources file cannot be used; the message names the file and the entry."""


FieldType = Literal["text", "int", "float", "date", "version", "list"]


class MetadataField(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    type: FieldType | None = None  # None: inferred from the values at ingest
    description: str | None = None


class _Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME_PATTERN)
    description: str | None = None


class DocumentsSource(_Source):
    kind: Literal["documents"]
    path: Path
    # files: a folder or file read by SimpleDirectoryReader; jsonl: one document per line; squad: one per paragraph;
    # rgb: the RGB benchmark's JSON lines, one document per distinct positive or negative passage.
    format: Literal["files", "jsonl", "squad", "rgb"] = "files"
    id_field: str = "_id"
    text_fields: list[str] = ["title", "text"]
    language: Literal["en", "zh", "mixed"] = "mixed"
    # Fields that sort and filter questions can use ("the newest policy"): a list of names, or a mapping of name to
    # a type or to {type, description}; filled from the JSON lines' keys, Markdown front matter, the file's own
    # properties (file_size, last_modified_date) or `metadata_file`, a CSV with a `file_name` or id column.
    metadata_fields: list[MetadataField] = []
    metadata_file: Path | None = None

    @field_validator("metadata_fields", mode="before")
    @classmethod
    def _field_list(cls, value: object) -> object:
        if isinstance(value, dict):
            return [{"name": k, **(v if isinstance(v, dict) else {"type": v})} for k, v in value.items()]
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("metadata_fields")
    @classmethod
    def _field_names(cls, fields: list[MetadataField]) -> list[MetadataField]:
        names = [f.name for f in fields]
        for name in names:
            if not FIELD_PATTERN.match(name) or name in RESERVED_FIELDS:
                raise ValueError(f"metadata field '{name}' is not allowed: use letters, digits and _ (and not {', '.join(sorted(RESERVED_FIELDS))})")
        if len(set(names)) < len(names):
            raise ValueError("metadata field names must be unique")
        return fields

    def metadata_names(self) -> list[str]:
        return [f.name for f in self.metadata_fields]


class SqlSource(_Source):
    kind: Literal["sql"]
    path: Path | None = None
    url: str | None = None
    # A YAML file of descriptions (business terms, synonyms) and question -> SQL examples for the SQL knowledge base.
    knowledge: Path | None = None
    # The tables', columns' and values' names in the other language (names: {singer: 歌手, singer.Country: 国家},
    # values: {France: 法国}); they win over the ones the model writes (tools/aliases.py).
    aliases: Aliases = Aliases()

    @model_validator(mode="after")
    def _one_location(self) -> SqlSource:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of `path` (a SQLite file) or `url` (a SQLAlchemy URL)")
        return self


class WebSource(_Source):
    kind: Literal["web"]


Source = Annotated[DocumentsSource | SqlSource | WebSource, Field(discriminator="kind")]


class SourcesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sources: list[Source] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> SourcesFile:
        names = [s.name for s in self.sources]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"source names must be unique; repeated: {', '.join(repeated)}")
        return self


def _resolve(source: Source, base: Path) -> Source:
    update = {}
    for field_name in ("path", "knowledge", "metadata_file"):
        path = getattr(source, field_name, None)
        if path is None:
            continue
        resolved = path if path.is_absolute() else (base / path).resolve()
        if not resolved.exists():
            raise SourcesError(f"source '{source.name}': {field_name} {resolved} does not exist")
        update[field_name] = resolved
    return source.model_copy(update=update)


def load_sources(file: Path) -> list[Source]:
    """Read and validate a sources file; paths are taken relative to the file's folder."""
    if not file.is_file():
        raise SourcesError(f"sources file {file} does not exist")
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
        parsed = SourcesFile.model_validate(raw)
    except yaml.YAMLError as err:
        raise SourcesError(f"sources file {file} is not valid YAML: {err}") from err
    except ValidationError as err:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise SourcesError(f"sources file {file} is invalid: {details}") from err
    return [_resolve(s, file.parent) for s in parsed.sources]
