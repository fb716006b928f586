"""Tool descriptions: all the router reads about a source. Written by the user, or generated and cached."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from llama_index.core import Document
from llama_index.core.llms import LLM

from engines.matching.schema_terms import split_name
from engines.sources import DocumentsSource

WEB_DESCRIPTION = (
    "Web search for current events, news, recent facts, prices, weather, sports results and anything about the "
    "world outside the local sources / 网络搜索：新闻、最新消息、天气、比赛结果、公众人物等实时信息。"
)
# What only the live web can answer, as texts the selector embeds beside the web source's description: the
# web has no contents to sample, so these stand in for them. Generic on purpose; a sources file can override.
WEB_PROFILE = [
    "Latest news and current events this year: what happened recently, and when and where it happened",
    "Who won the championship, final, tournament, award or election in 2021, 2022 or 2023",
    "Recent sports results, match scores, medal winners, transfers and records",
    "New product launches, company announcements, CEO changes, stock prices and quarterly earnings",
    "Films, TV series, albums and celebrities in the news: release dates, box office and awards",
    "Today's weather, prices, exchange rates and other facts that change every day",
    "Who founded, acquired or runs a company or organisation; what its new product or service is called",
    "When a film, TV season, video game or phone was released or premiered, and who directed or starred in it",
    "Which city hosted an event, who holds an office or title, and other facts about named people and places",
    "最新新闻和时事：最近发生了什么，何时何地",
    "2022年、2023年的比赛冠军、颁奖典礼获奖者、选举结果是谁",
    "公司最新发布的产品、财报、股价、人事变动",
    "电影、电视剧、明星的最新消息：上映日期、票房、奖项",
    "今天的天气、价格、汇率等每天变化的信息",
    "某家公司、机构由谁创立、被谁收购、现任负责人是谁",
    "某个事件发生在哪里、造成多少伤亡、某人担任什么职务",
]
SAMPLE_COUNT = 8
SAMPLE_CHARS = 300

DESCRIBE_PROMPT = (
    "Here are excerpts from a document collection:\n\n{samples}\n\n"
    "In one sentence, name the general kind of documents and subject area of the whole collection "
    "(for example 'Biomedical research abstracts' or 'Chinese encyclopedia articles on history and geography'), "
    "not the individual excerpts. Start with 'A collection of'."
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


def table_words(tables: list[str]) -> list[str]:
    """Each table signature as plain lowercase words (`country(SurfaceArea)` -> `country: surface area`).

    Beside `table_profile`, not instead of it: together they routed 95.9 % of Spider dev questions right, the
    signatures alone 95.1 %, the words alone 95.3 % (docs/experiments/router.md).
    """
    signatures = (t.rstrip(")").split("(", 1) for t in tables)
    return [f"{split_name(name)}: {', '.join(split_name(c) for c in columns.split(', '))}" for name, columns in signatures]


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
