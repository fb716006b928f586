"""The router: a LlamaIndex RouterQueryEngine over the sources' tools, returning a Trace for every question."""

from __future__ import annotations

import logging
import re
import time
from contextlib import nullcontext

from llama_index.core.base.base_selector import BaseSelector
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.answers.cited_names import name_citations
from engines.answers.declines import declines
from engines.answers.output_guard import OutputGuard
from engines.answers.streaming import AnswerListener, listening
from engines.conversation.previous import PreviousTurn, following
from engines.matching.schema_terms import SchemaLinker
from engines.routing.selectors import Floor, LLMWithFallbackSelector, ProfileEmbeddingSelector, ScoredSelection
from engines.routing.source_tool import SourceTool
from engines.settings import Settings
from engines.sources import SourcesError
from engines.stage_clock import question_clock
from engines.trace import Candidate, CragRecord, MetadataRecord, Passage, RouteRecord, SqlAttempt, Trace

log = logging.getLogger(__name__)
CITATION_PREFIX = re.compile(r"^Source \d+:\n")


class QuestionError(ValueError):
    """The question cannot be asked as given; the message says why."""


def check_question(question: str, max_chars: int) -> str:
    text = (question or "").strip()
    if not text:
        raise QuestionError("the question is empty")
    if len(text) > max_chars:
        raise QuestionError(f"the question has {len(text):,} characters; the limit is {max_chars:,} (RAGROUTER_MAX_QUESTION_CHARS)")
    return text


class RagRouter:
    """The router over the tools it is given (tools/build.py builds them from the sources file): it scores every
    source, answers on the chosen one, and turns the response into a Trace."""

    def __init__(self, settings: Settings, tools: list[SourceTool], llm: LLM, embed: BaseEmbedding, guard: OutputGuard) -> None:
        self.settings, self.tools, self.llm, self.embed, self.guard = settings, tools, llm, embed, guard
        self.schema_linker = SchemaLinker(
            {t.source.name: t.vocabulary for t in self.tools if t.vocabulary},
            settings.schema_term_weight,
            settings.schema_value_bonus,
        )
        self.embedding_selector = ProfileEmbeddingSelector(
            self.embed,
            {t.source.name: t.profile for t in self.tools},
            {t.source.name: t.probe for t in self.tools if t.probe},
            settings.probe_margin,
            {t.source.name: Floor(settings.web_floor, settings.web_floor_zh) for t in self.tools if t.source.kind == "web"},
            self.schema_linker,
        )
        self.selector = self.embedding_selector if settings.selector == "embedding" else LLMWithFallbackSelector(self.llm, self.embedding_selector)
        self.engine = RouterQueryEngine(selector=self.selector, query_engine_tools=[t.tool for t in self.tools], llm=self.llm)

    def tool(self, name: str) -> SourceTool:
        for tool in self.tools:
            if tool.source.name == name:
                return tool
        raise SourcesError(f"unknown source '{name}'; known sources: {', '.join(t.source.name for t in self.tools)}")

    def ask(self, question: str, source: str | None = None, listener: AnswerListener | None = None, previous: PreviousTurn | None = None) -> Trace:
        """Route (or use the named source), answer, and record why and how long each step took. A `listener`
        hears the answer token by token while the model writes it. `previous`: the turn a follow-up follows; its
        source is kept unless another scores clearly higher, and the path that answers may build on it."""
        text = check_question(question, self.settings.max_question_chars)
        trace = Trace(question=text, standalone_question=text)
        start = time.perf_counter()
        with question_clock() as clock, listening(listener, self.guard) if listener else nullcontext() as stream, following(previous):
            trace.route, route_ms, response = self._route_and_answer(text, source, previous)
        trace.timings_ms["total"] = round((time.perf_counter() - start) * 1000, 1)
        if stream is not None and stream.first_token_at is not None:
            trace.timings_ms["first_token"] = round((stream.first_token_at - start) * 1000, 1)
        if stream is not None and stream.rows_at is not None:
            trace.timings_ms["rows_shown"] = round((stream.rows_at - start) * 1000, 1)
        trace.timings_ms.update(clock.ms)
        trace.llm_calls = clock.llm_calls
        trace.model_calls = clock.model_calls
        trace.notes.extend(clock.notes)
        trace.timings_ms["route"] = route_ms
        trace.timings_ms["answer"] = round(trace.timings_ms["total"] - route_ms, 1)
        self._fill_answer(trace, response, self.tool(trace.route.chosen))
        return trace

    def _route_and_answer(self, text: str, source: str | None, previous: PreviousTurn | None) -> tuple[RouteRecord, float, Response]:
        """The route taken, the time it took (ms) and the chosen engine's response."""
        if source:
            forced = self.tool(source)
            route = RouteRecord(chosen=forced.source.name, candidates=[], reason="source named by the user", selector="forced")
            return route, 0.0, forced.tool.query_engine.query(text)
        if previous is None or previous.source not in {t.source.name for t in self.tools}:
            response = self.engine.query(text)
            result = response.metadata["selector_result"]
            return self._record(result), result.elapsed_ms, response
        route, ms = self.route_follow_up(text, previous.source)
        return route, ms, self.tool(route.chosen).tool.query_engine.query(text)

    def route_follow_up(self, question: str, previous: str) -> tuple[RouteRecord, float]:
        """The route of a follow-up (as routed: standalone) to a turn answered from `previous`, and its time in ms."""
        result = self._select(self.selector, question)
        return self.keep_previous(self._record(result), previous, question), result.elapsed_ms

    def route(self, question: str) -> RouteRecord:
        """Where `question` goes on its own (nothing is answered)."""
        return self._record(self._select(self.selector, question))

    def keep_previous(self, route: RouteRecord, previous: str, question: str) -> RouteRecord:
        """A follow-up stays on the previous turn's source. From a database it moves to another only when the
        question names a table, column or value that the other has and the previous one lacks (a near-equal score
        from a database with a table of the same name is no reason); otherwise it moves only when another source
        scores more than the margin above the previous one."""
        scores = {c.name: c.score for c in route.candidates}
        if route.chosen == previous or previous not in scores:
            return route
        margin = self.settings.follow_up_keep_margin
        if self.tool(previous).vocabulary and self.tool(route.chosen).vocabulary:
            if names := self.schema_linker.names_only_in(question, route.chosen, previous):
                return route.model_copy(
                    update={
                        "reason": f"{route.reason} The follow-up left {previous}: it names {', '.join(sorted(names))}, which only {route.chosen} has."
                    }
                )
            rule = f"a follow-up stays on the previous turn's database, {previous}, unless it names a table, column or value only another has; it names none that {route.chosen} has"
        elif scores[route.chosen] - scores[previous] > margin:
            return route
        else:
            rule = f"a follow-up stays on the previous turn's source, {previous} ({scores[previous]:.3f}), unless another scores more than {margin} above it"
        reason = f"{rule}; {route.chosen} scored {scores[route.chosen]:.3f}. The selector said: {route.reason}"
        return route.model_copy(update={"chosen": previous, "reason": reason, "kept_previous": True})

    def routes_by_selector(self, question: str) -> dict[str, tuple[RouteRecord, float]]:
        """The route (and its time in ms) each selector would take for `question`, without answering it."""
        selectors = {"embedding": self.embedding_selector, "llm": LLMWithFallbackSelector(self.llm, self.embedding_selector)}
        routes = {}
        for name, selector in selectors.items():
            result = self._select(selector, question)
            routes[name] = (self._record(result), result.elapsed_ms)
        return routes

    def routes_if_described(self, name: str, description: str, questions: list[str]) -> list[tuple[RouteRecord, RouteRecord]]:
        """For each question, its route now and its route were source `name` described by `description` (the
        embedding selector's: the one that reads every source's description on every question)."""
        changed = self.embedding_selector.with_profile(name, self.tool(name).profile_with(description))
        return [(self._record(self._select(self.embedding_selector, q)), self._record(self._select(changed, q))) for q in questions]

    def _select(self, selector: BaseSelector, question: str) -> ScoredSelection:
        """Route `question` with `selector` only (nothing is answered)."""
        choices = [t.tool.metadata for t in self.tools]
        return selector.select(choices, QueryBundle(check_question(question, self.settings.max_question_chars)))

    def _record(self, result: ScoredSelection) -> RouteRecord:
        candidates = sorted(
            (Candidate(name=t.source.name, score=round(s, 4)) for t, s in zip(self.tools, result.scores)),
            key=lambda c: -c.score,
        )
        chosen = self.tools[result.ind].source.name
        return RouteRecord(chosen=chosen, candidates=candidates, reason=result.reason, selector=result.selector, fallback=result.fallback)

    def _fill_answer(self, trace: Trace, response: Response, chosen: SourceTool) -> None:
        metadata = response.metadata or {}
        trace.answer = str(response.response or "").strip()
        if rule := self.guard.check(trace.answer):  # every path's answer, whether it streamed or not
            trace.answer = rule.message
            trace.notes.append(f"The output guard's rule '{rule.name}' withheld the answer.")
        if chosen.database is not None and metadata.get("sql_query"):
            trace.sql = metadata["sql_query"]
            trace.rows = [list(row) for row in metadata.get("result") or []]
            trace.columns = list(metadata.get("col_keys") or [])
            trace.sql_attempts = [SqlAttempt(**a) for a in metadata.get("attempts", [])]
            if trace.sql_attempts and trace.sql_attempts[-1].error:
                trace.notes.append(f"SQL did not run: {trace.sql_attempts[-1].error}")
        trace.web_unavailable = bool(metadata.get("web_unavailable"))
        if trace.web_unavailable:
            trace.web_error = metadata.get("web_error", "web search unavailable")
            log.warning("web search failed: %s", trace.web_error)
        if metadata.get("crag"):
            trace.crag = CragRecord(**metadata["crag"])
        if metadata.get("metadata_query"):
            trace.metadata_query = MetadataRecord(**metadata["metadata_query"])
        trace.declined = bool(metadata.get("declined", declines(trace.answer)))
        if chosen.database is None:  # on the SQL path the rows are what was used, not a passage
            trace.passages = [_passage(chosen.source.name, n) for n in response.source_nodes]
            trace.answer = name_citations(trace.answer, [p.title or p.id for p in trace.passages])


def _passage(source: str, node: NodeWithScore) -> Passage:
    meta = node.node.metadata
    ident = meta.get("file_name") or meta.get("doc_id") or meta.get("url") or node.node.ref_doc_id or node.node.node_id
    # CitationQueryEngine prefixes each chunk with "Source N:"; the passage's place in the list already says N.
    text = CITATION_PREFIX.sub("", node.node.get_content()).strip()
    # A page the documents path fetched from the web (Corrective RAG's fallback) is the web's, not the collection's.
    return Passage(
        source="web" if meta.get("url") else source,
        id=str(ident),
        title=meta.get("title"),
        score=node.score,
        text=text,
        url=meta.get("url"),
        retrieved_rank=meta.get("retrieved_rank"),
        retrieved_chars=meta.get("retrieved_chars"),
        retrieved_text=meta.get("retrieved_text") if meta.get("retrieved_chars", 0) > len(text) else None,
    )
