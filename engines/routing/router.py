"""The router: a LlamaIndex RouterQueryEngine over the sources' tools, returning a Trace for every question."""

from __future__ import annotations

import logging
from contextlib import nullcontext

from llama_index.core.base.base_selector import BaseSelector
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import Response
from llama_index.core.llms import LLM
from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.schema import QueryBundle

from engines.answers.declines import declines
from engines.answers.output_guard import OutputGuard
from engines.answers.streaming import AnswerListener, listening, show_route
from engines.conversation.previous import PreviousTurn, following
from engines.matching.schema_terms import SchemaLinker
from engines.routing.restate import Restater
from engines.routing.selectors import Floor, LLMWithFallbackSelector, ProfileEmbeddingSelector, ScoredSelection, route_record
from engines.routing.source_tool import SourceTool
from engines.settings import Settings
from engines.sources import SourcesError
from engines.trace import RESULT, AskedInConversation, PathResult, RouteRecord, Trace
from engines.tracing.recorder import Recording, recording, span
from engines.tracing.recorder import question as question_recording

log = logging.getLogger(__name__)


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
            settings.feedback_match,
            Restater(self.llm) if settings.second_look else None,
            settings.restate_margin,
            {t.source.name: t.translated for t in self.tools if t.translated},
            settings.translated_margin,
            settings.named_margin,
        )
        self.selector = self.embedding_selector if settings.selector == "embedding" else LLMWithFallbackSelector(self.llm, self.embedding_selector)
        self.engine = RouterQueryEngine(selector=self.selector, query_engine_tools=[t.tool for t in self.tools], llm=self.llm)

    def tool(self, name: str) -> SourceTool:
        for tool in self.tools:
            if tool.source.name == name:
                return tool
        raise SourcesError(f"unknown source '{name}'; known sources: {', '.join(t.source.name for t in self.tools)}")

    def ask(
        self,
        question: str,
        source: str | None = None,
        listener: AnswerListener | None = None,
        previous: PreviousTurn | None = None,
        asked: AskedInConversation | None = None,
    ) -> Trace:
        """Route (or use the named source), answer, and return the question's finished trace. A `listener` hears
        the answer token by token while the model writes it. `previous`: the turn a follow-up follows; its source
        is kept unless another scores clearly higher, and the path that answers may build on it. `asked`: what the
        conversation made of the question before (as asked, its turn, its notes), inside the same recording."""
        text = check_question(question, self.settings.max_question_chars)
        with question_recording(text) as recording, listening(listener, self.guard) if listener else nullcontext(), following(previous):
            route = self._route(text, source, previous)
            response = self.engine.query(text) if not route.chosen else self.tool(route.chosen).tool.query_engine.query(text)
            return self._finish(recording, text, route, response, asked)

    def _route(self, text: str, source: str | None, previous: PreviousTurn | None) -> RouteRecord:
        """The route of a forced source or a follow-up; for any other question the RouterQueryEngine routes while it
        answers, and this is a placeholder its selection replaces."""
        if source:
            forced = self.tool(source)
            route = RouteRecord(chosen=forced.source.name, candidates=[], reason="source named by the user", selector="forced")
            with span("route", question=text, selector="forced") as opened:
                opened.set(chosen=forced.source.name, selector="forced")
            show_route(route)
            return route
        if previous is not None and previous.source in {t.source.name for t in self.tools}:
            return self.route_follow_up(text, previous.source)
        return RouteRecord(chosen="", candidates=[], reason="", selector="")

    def _finish(self, recording: Recording, text: str, route: RouteRecord, response: Response, asked: AskedInConversation | None) -> Trace:
        """The trace, built here only: the route, the path's own result, and what the recording kept."""
        metadata = response.metadata or {}
        if (selection := metadata.get("selector_result")) is not None:  # routed by the RouterQueryEngine
            route = self._record(selection)
        trace = Trace(trace_id=recording.trace_id, question=text, standalone_question=text, route=route)
        trace.answer = str(response.response or "").strip()
        if rule := self.guard.check(trace.answer):  # every path's answer, whether it streamed or not
            trace.answer = rule.message
            trace.notes.append(f"The output guard's rule '{rule.name}' withheld the answer.")
        trace.declined = declines(trace.answer)  # unless the path says (Corrective RAG decides before its guard)
        result: PathResult | None = metadata.get(RESULT)
        if result is not None:
            result.fill(trace, route.chosen)
        if trace.web_unavailable:
            log.warning("web search failed: %s", trace.web_error)
        if asked is not None:
            trace.question, trace.conversation = asked.question, asked.record
        trace.notes = (asked.notes if asked else []) + recording.notes + trace.notes
        trace.timings_ms = _timings(recording)
        trace.llm_calls, trace.model_calls, trace.spans = recording.llm_calls, recording.model_calls, list(recording.spans)
        return trace

    def route_follow_up(self, question: str, previous: str) -> RouteRecord:
        """The route of a follow-up (as routed: standalone) to a turn answered from `previous`."""
        with span("route", question=question, previous=previous) as opened:
            route = self.keep_previous(self._record(self._select(self.selector, question)), previous, question)
            opened.set(chosen=route.chosen, kept_previous=route.kept_previous, reason=route.reason)
        show_route(route)
        return route

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
            with recording() as timed:
                route = self._record(self._select(selector, question))
            routes[name] = (route, timed.ms.get("route", 0.0))
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
        return route_record([t.tool.metadata for t in self.tools], result)


def _timings(recording: Recording) -> dict[str, float]:
    """The stable `timings_ms`: total, route, answer (after routing, condense aside), first_token and rows_shown
    when streamed, condense in a conversation, and each stage (engines/tracing/recorder.py STAGES)."""
    stages = recording.ms
    total = recording.elapsed_ms()
    timings = {"total": total, **recording.marks, **stages}
    timings.setdefault("route", 0.0)
    timings["answer"] = round(total - timings["route"] - stages.get("condense", 0.0), 1)
    return timings
