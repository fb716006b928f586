"""Per-question stage timings (retrieve, rerank, compress, generate) and LLM calls, from where they happen.

A context variable holds the clock of the question being answered, so components need no extra argument and a
question answered in another thread (another browser tab) keeps its own. LLM calls are counted from
LlamaIndex's instrumentation events, whatever the model, and generation is timed from its synthesize events;
node postprocessors send no events, so their time is taken here.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterator

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent, LLMCompletionStartEvent
from llama_index.core.instrumentation.events.synthesis import SynthesizeEndEvent, SynthesizeStartEvent
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle


@dataclass
class StageClock:
    ms: dict[str, float] = field(default_factory=dict)
    llm_calls: int = 0


_current: ContextVar[StageClock | None] = ContextVar("stage_clock", default=None)


class _EventClock(BaseEventHandler):
    """Counts LLM calls and times generation (LlamaIndex's synthesize events) for the open question."""

    started: dict[str, float] = {}

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        clock = _current.get()
        if clock is None:
            return
        if isinstance(event, (LLMCompletionStartEvent, LLMChatStartEvent)):
            clock.llm_calls += 1
        elif isinstance(event, SynthesizeStartEvent):
            self.started[event.span_id or ""] = time.perf_counter()
        elif isinstance(event, SynthesizeEndEvent) and (event.span_id or "") in self.started:
            elapsed = (time.perf_counter() - self.started.pop(event.span_id or "")) * 1000
            clock.ms["generate"] = round(clock.ms.get("generate", 0.0) + elapsed, 1)


get_dispatcher().add_event_handler(_EventClock())


@contextmanager
def question_clock() -> Iterator[StageClock]:
    """The clock of one question: stages timed while it is open add to it."""
    clock = StageClock()
    token = _current.set(clock)
    try:
        yield clock
    finally:
        _current.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Add the time spent inside to stage `name` of the current question (nothing when no question is open)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        clock = _current.get()
        if clock is not None:
            clock.ms[name] = round(clock.ms.get(name, 0.0) + (time.perf_counter() - start) * 1000, 1)


# The stage each of our node postprocessors is (by LlamaIndex's class_name(); anything else: bookkeeping).
POSTPROCESSOR_STAGES = {"ColbertRerank": "rerank", "SentenceEmbeddingOptimizer": "compress"}


class TimedCitationQueryEngine(CitationQueryEngine):
    """CitationQueryEngine whose retrieval, rerank and compression are timed as the question's stages (generation
    is timed from its events); `retrieve` is the stock one with a clock around each step."""

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        with stage("retrieve"):
            nodes = self._retriever.retrieve(query_bundle)
        for postprocessor in self._node_postprocessors:
            with stage(POSTPROCESSOR_STAGES.get(postprocessor.class_name(), "retrieve")):
                nodes = postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)
        return nodes
