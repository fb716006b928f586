"""The web path: search -> result pages as Documents with URLs -> answer with citations, or an honest "unavailable"."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import requests
from llama_index.core import Document, SummaryIndex
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine

from engines.answers.citations import AnswerEngine
from engines.answers.prompts import CITATION_QA, CITATION_REFINE
from engines.settings import Settings
from engines.trace import RESULT, PassagesResult
from engines.tracing.recorder import span

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="web-search")


class WebSearchUnavailable(RuntimeError):
    """Web search could not be reached or returned nothing; nothing is made up in its place."""


def _duckduckgo(query: str, settings: Settings) -> list[dict]:
    from llama_index.tools.duckduckgo import DuckDuckGoSearchToolSpec

    hits = DuckDuckGoSearchToolSpec().duckduckgo_full_search(query, max_results=settings.web_max_results)
    return [{"title": h.get("title", ""), "url": h.get("href", ""), "text": h.get("body", "")} for h in hits]


def _tavily(query: str, settings: Settings) -> list[dict]:
    from llama_index.tools.tavily_research import TavilyToolSpec

    if not settings.tavily_api_key:
        raise ValueError("RAGROUTER_TAVILY_API_KEY is not set")
    hits = TavilyToolSpec(api_key=settings.tavily_api_key).search(query, max_results=settings.web_max_results)
    return [{"title": "", "url": d.metadata.get("url", ""), "text": d.text} for d in hits]


def _searxng(query: str, settings: Settings) -> list[dict]:
    # SearXNG's JSON API is one GET; LlamaIndex has no tool spec for it.
    reply = requests.get(
        settings.searxng_url.rstrip("/") + "/search",
        params={"q": query, "format": "json"},
        timeout=settings.web_timeout_s,
    )
    reply.raise_for_status()
    hits = reply.json().get("results", [])[: settings.web_max_results]
    return [{"title": h.get("title", ""), "url": h.get("url", ""), "text": h.get("content", "")} for h in hits]


def search_web(query: str, settings: Settings) -> list[Document]:
    """Search with the configured backend within the time budget (the span "web"); any failure becomes WebSearchUnavailable."""
    with span("web", query=query, backend=settings.web_backend) as opened:
        documents = _search(query, settings)
        opened.set(results=len(documents))
    return documents


def _search(query: str, settings: Settings) -> list[Document]:
    backend = {"duckduckgo": _duckduckgo, "searxng": _searxng, "tavily": _tavily}[settings.web_backend]
    # In a copy of this context, so what the backend does (its HTTP calls, instrumented or not) stays in the question's trace.
    future = _POOL.submit(contextvars.copy_context().run, backend, query, settings)
    try:
        hits = future.result(timeout=settings.web_timeout_s)
    except FutureTimeout as err:
        raise WebSearchUnavailable(f"{settings.web_backend} did not answer within {settings.web_timeout_s:.0f} s") from err
    except Exception as err:  # DNS failure, refused connection, HTTP error, bad JSON: all mean "unavailable"
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise WebSearchUnavailable(f"{settings.web_backend} failed: {type(err).__name__}: {first_line[:200]}") from err
    documents = [Document(text=f"{h['title']}\n{h['text']}".strip(), metadata={"url": h["url"], "title": h["title"]}) for h in hits if h["text"]]
    if not documents:
        raise WebSearchUnavailable(f"{settings.web_backend} returned no results")
    return documents


class WebQueryEngine(CustomQueryEngine):
    """Answers from live search results; when search is unavailable it says so instead of answering."""

    settings: Settings
    llm: LLM

    def custom_query(self, query_str: str) -> Response:
        try:
            documents = search_web(query_str, self.settings)
        except WebSearchUnavailable as err:
            return Response(
                # The cause goes to the trace's notes: in the answer, exception text would trip the output guard.
                response=f"Web search ({self.settings.web_backend}) is unavailable, so this question cannot be answered from the web right now.",
                metadata={RESULT: PassagesResult(web_error=str(err))},
            )
        engine = AnswerEngine.from_args(
            SummaryIndex.from_documents(documents),
            llm=self.llm,
            citation_qa_template=CITATION_QA,
            citation_refine_template=CITATION_REFINE,
        )
        return engine.query(query_str)
