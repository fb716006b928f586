"""Per-question stage timings (retrieve, rerank, compress, generate), LLM calls and notes, from where they happen.

A context variable holds the clock of the question being answered, so components need no extra argument and a
question answered in another thread (another browser tab) keeps its own. LLM calls are counted from
LlamaIndex's instrumentation events, whatever the model; stages are timed where they run (`stage`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatStartEvent, LLMCompletionStartEvent

from engines.trace import ModelCall


@dataclass
class StageClock:
    ms: dict[str, float] = field(default_factory=dict)
    llm_calls: int = 0
    notes: list[str] = field(default_factory=list)  # what a component decided that the trace should show
    model_calls: list[ModelCall] = field(default_factory=list)


_current: ContextVar[StageClock | None] = ContextVar("stage_clock", default=None)


class _CallCounter(BaseEventHandler):
    """Counts the open question's LLM calls."""

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        clock = _current.get()
        if clock is not None and isinstance(event, (LLMCompletionStartEvent, LLMChatStartEvent)):
            clock.llm_calls += 1


get_dispatcher().add_event_handler(_CallCounter())


@contextmanager
def question_clock() -> Iterator[StageClock]:
    """The clock of one question: stages timed while it is open add to it."""
    clock = StageClock()
    token = _current.set(clock)
    try:
        yield clock
    finally:
        _current.reset(token)


def note(text: str) -> None:
    """Add a line to the current question's trace notes (nothing when no question is open)."""
    clock = _current.get()
    if clock is not None and text not in clock.notes:
        clock.notes.append(text)


def record_model_call(call: ModelCall) -> None:
    """Add a call of the local model to the current question (nothing when no question is open)."""
    clock = _current.get()
    if clock is not None:
        clock.model_calls.append(call)


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
