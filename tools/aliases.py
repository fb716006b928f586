"""A database's bilingual profile, written by the model once and cached beside the descriptions.

The model is asked table by table for the other language's name of the table, of each column and of each value
of its short text columns (the categories a question names: countries, cities, kinds). No library translates a
schema's names, so the prompt and its line parser are written here; what comes back is checked against the
schema (engines/matching/aliases.py) before anything reads it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable

from llama_index.core.llms import LLM
from sqlalchemy import Engine, MetaData, String, func, select
from sqlalchemy.types import NullType

from engines.aliases import Aliases
from engines.language import has_chinese
from engines.settings import Settings
from engines.sources import SqlSource
from tools.descriptions import DescriptionCache

log = logging.getLogger(__name__)

# Values of a text column are translated when it holds at most this many distinct ones (and repeats them: at most
# half as many as rows): categories like a country or a pet type, not people's names.
VALUE_COLUMN_LIMIT = 20
VALUE_CHARS = 40
ITEMS_PER_CALL = 8
LANGUAGE_NAMES = {"zh": "Chinese", "en": "English"}
PROMPT = (
    "Translate each numbered name of a database table, its columns and some of its values into {language}: each on "
    "its own, by its meaning, briefly, as a person would say it in a question. Answer with one line per number, "
    "exactly as `number. name = translation`, and nothing else.\n\n"
    "Table: city\n1. city\n2. City_ID\n3. Official_Name\n4. Population\n5. Tokyo\nAnswer:\n{example}\n\n"
    "Table: {table}\n{items}\nAnswer:\n"
)
EXAMPLES = {
    "zh": "1. city = 城市\n2. City_ID = 城市编号\n3. Official_Name = 正式名称\n4. Population = 人口\n5. Tokyo = 东京",
    "en": "1. city = city\n2. City_ID = city ID\n3. Official_Name = official name\n4. Population = population\n5. Tokyo = Tokyo",
}
# `3. Official_Name = 正式名称`; small models also drop the name (`3. 正式名称`) or add backquotes.
_LINE = re.compile(r"^\s*(?P<number>\d+)[.)、]\s*(?:[^=]*=\s*)?(?P<alias>[^=]+?)\s*$")


def _text_columns(engine: Engine) -> dict[str, dict[str, list[str]]]:
    """Per table, per short text column, its distinct values (only for columns of repeated categories)."""
    metadata = MetaData()
    metadata.reflect(engine)
    found: dict[str, dict[str, list[str]]] = {}
    with engine.connect() as conn:
        for name, table in metadata.tables.items():
            rows = conn.execute(select(func.count()).select_from(table)).scalar() or 0
            found[name] = {}
            for column in table.columns:
                if not isinstance(column.type, (String, NullType)):
                    continue
                values = conn.execute(select(column).distinct().where(column.is_not(None)).limit(VALUE_COLUMN_LIMIT + 1)).scalars().all()
                texts = [str(v).strip() for v in values if isinstance(v, str) and 1 < len(v.strip()) <= VALUE_CHARS]
                repeated = 1 < len(values) <= min(VALUE_COLUMN_LIMIT, rows // 2)
                if repeated and any(c.isalpha() for t in texts for c in t):
                    found[name][column.name] = texts
    return found


def schema_columns(engine: Engine) -> dict[str, list[str]]:
    metadata = MetaData()
    metadata.reflect(engine)
    return {name: [c.name for c in table.columns] for name, table in metadata.tables.items()}


def stored_values(engine: Engine, wanted: set[str]) -> set[str]:
    """Those of `wanted` that some text column of the database holds (no query when there are none to look for)."""
    if not wanted:
        return set()
    metadata = MetaData()
    metadata.reflect(engine)
    found: set[str] = set()
    with engine.connect() as conn:
        for column in (c for t in metadata.tables.values() for c in t.columns if isinstance(c.type, (String, NullType))):
            if wanted - found:
                found |= set(conn.execute(select(column).distinct().where(column.in_(sorted(wanted - found)))).scalars())
    return found


def other_language(names: list[str]) -> str:
    """The language aliases are written in: English for a database named mostly in Chinese, else Chinese."""
    return "en" if 2 * sum(has_chinese(n) for n in names) > len(names) else "zh"


def _fingerprint(columns: dict[str, list[str]], values: dict[str, dict[str, list[str]]]) -> str:
    return hashlib.sha256(json.dumps([columns, values], sort_keys=True).encode()).hexdigest()[:16]


def parse_lines(text: str, items: list[str]) -> dict[str, str]:
    """`number. item = translation` lines -> {item: translation}, read by number: a small model sometimes echoes an
    item translated or respelt, but keeps its number. Numbers out of range are ignored."""
    parsed = {}
    for line in text.splitlines():
        if (match := _LINE.match(line)) and 1 <= int(match["number"]) <= len(items):
            parsed[items[int(match["number"]) - 1]] = match["alias"].strip().strip("`'\"。.")
    return parsed


def _translate(llm: LLM, language: str, table: str, items: list[str]) -> dict[str, str]:
    """The model's translations of `items`, a few per call: a 1.5B model asked for 30 at once repeats one line."""
    answer: dict[str, str] = {}
    for start in range(0, len(items), ITEMS_PER_CALL):
        part = items[start : start + ITEMS_PER_CALL]
        numbered = "\n".join(f"{n}. {item}" for n, item in enumerate(part, 1))
        prompt = PROMPT.format(language=LANGUAGE_NAMES[language], example=EXAMPLES[language], table=table, items=numbered)
        answer |= parse_lines(llm.complete(prompt).text, part)
    return answer


def _table_aliases(llm: LLM, language: str, table: str, columns: list[str], values: dict[str, list[str]]) -> Aliases:
    """A table's name, its columns' and its categories' translations."""
    answer = _translate(llm, language, table, [table, *columns, *(v for vs in values.values() for v in vs)])
    names = {table: answer.get(table, "")} | {f"{table}.{c}": answer.get(c, "") for c in columns}
    stored = {v: answer.get(v, "") for vs in values.values() for v in vs}
    return Aliases(names=names, values=stored)


def generate_aliases(columns: dict[str, list[str]], values: dict[str, dict[str, list[str]]], llm: LLM) -> Aliases:
    """The model's aliases of every table, column and category value, checked against the schema."""
    language = other_language([*columns, *(c for cs in columns.values() for c in cs)])
    names: dict[str, str] = {}
    stored: dict[str, str] = {}
    for table, cols in columns.items():
        part = _table_aliases(llm, language, table, cols, values[table])
        names |= part.names
        stored |= part.values
    everything = {v for vs in values.values() for col in vs.values() for v in col}
    return Aliases(names=names, values=stored).checked(columns, everything)


def cached_aliases(name: str, engine: Engine, llm: Callable[[], LLM] | None, cache: DescriptionCache) -> Aliases:
    """Source `name`'s generated aliases: from the cache while its schema (and its category values) are unchanged,
    else made by the model and cached; when `llm` is None, whatever the cache holds (or none)."""
    entry = cache.get(name) or {}
    if llm is None:
        return Aliases.model_validate(entry.get("aliases", {}))
    columns, values = schema_columns(engine), _text_columns(engine)
    fingerprint = _fingerprint(columns, values)
    if entry.get("aliases") is not None and entry.get("schema") == fingerprint:
        return Aliases.model_validate(entry["aliases"])
    log.info("writing the bilingual profile of %s with the model (once; cached in %s)", name, cache.path)
    aliases = generate_aliases(columns, values, llm())
    cache.put(name, {**entry, "aliases": aliases.model_dump(), "schema": fingerprint})
    return aliases


def source_aliases(source: SqlSource, engine: Engine, settings: Settings, llm: Callable[[], LLM] | None, again: bool = False) -> Aliases:
    """The sources file's aliases over the model's (written when none are cached for this schema, or `again`;
    only read from the cache when `llm` is None), checked against the schema."""
    cache = DescriptionCache(settings.state_dir / "descriptions.json")
    if again and (entry := cache.get(source.name)):
        cache.put(source.name, {k: v for k, v in entry.items() if k not in ("aliases", "schema")})
    aliases = source.aliases.over(cached_aliases(source.name, engine, llm, cache))
    return aliases.checked(schema_columns(engine), stored_values(engine, set(aliases.values)))
