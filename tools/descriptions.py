"""Tool descriptions: all the router reads about a source. Written by the user, or generated and cached."""

from __future__ import annotations

import json
from pathlib import Path

from typing import Callable

from llama_index.core import Document
from llama_index.core.llms import LLM

from tools.sources import DocumentsSource

WEB_DESCRIPTION = (
    "Web search for current events, news, recent facts, prices, weather, sports results and anything about the "
    "world outside the local sources / 网络搜索：新闻、最新消息、天气、比赛结果、公众人物等实时信息。"
)
SAMPLE_COUNT = 8
SAMPLE_CHARS = 300

DESCRIBE_PROMPT = (
    "Here are excerpts from a document collection:\n\n{samples}\n\n"
    "In one sentence, say what subjects this collection covers and what questions it can answer. "
    "Start with 'Documents about'."
)


class DescriptionCache:
    """JSON file of generated descriptions and sample passages, one entry per source name."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def get(self, name: str) -> dict | None:
        return self._entries.get(name)

    def put(self, name: str, entry: dict) -> None:
        self._entries[name] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self._entries, ensure_ascii=False, indent=1), encoding="utf-8")


def sample_texts(documents: list[Document]) -> list[str]:
    """Up to SAMPLE_COUNT evenly spaced document openings: what the collection is about, cheaply."""
    step = max(1, len(documents) // SAMPLE_COUNT)
    return [" ".join(d.text.split())[:SAMPLE_CHARS] for d in documents[::step][:SAMPLE_COUNT] if d.text.strip()]


def describe_documents(samples: list[str], llm: LLM) -> str:
    text = "\n---\n".join(s[:200] for s in samples)
    return llm.complete(DESCRIBE_PROMPT.format(samples=text)).text.strip()


def describe_database(name: str, tables: list[str]) -> str:
    """Derived from the schema itself: deterministic, instant, and exactly what the database can answer."""
    return (
        f"SQL database '{name}' with tables {'; '.join(tables)}. Answers questions that count, sum, average, "
        "list, filter, rank or compare the records in these tables."
    )


def table_profile(tables: list[str]) -> list[str]:
    """Each table signature in words (`customers(id, name)` -> `customers: id, name`) for embedding."""
    return [t.replace("(", ": ").rstrip(")").replace("_", " ") for t in tables]


def cache_documents_profile(source: DocumentsSource, documents: list[Document], llm: Callable[[], LLM], cache: DescriptionCache) -> dict:
    """Sample the collection and describe it (the model is loaded only when no description is known yet)."""
    samples = sample_texts(documents)
    cached = cache.get(source.name) or {}
    description = source.description or (cached.get("samples") == samples and cached.get("description"))
    if not description:
        description = describe_documents(samples, llm())
    entry = {"description": description, "samples": samples}
    cache.put(source.name, entry)
    return entry
