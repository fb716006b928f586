"""The one handler that records a question: a LlamaIndex span handler and event handler, both installed on the
root dispatcher at import, that keep every span opened while a question is being answered, the model's calls
with llama.cpp's counters, and the notes components leave.

A context variable holds the recording of the open question, so components need no extra argument and a question
answered on another thread (another browser tab) keeps its own; work handed to a pool runs in a copy of the
context (engines/web.py), so its spans stay in the question. Stages are spans: LlamaIndex's own (retrievers,
synthesizers, LLM calls) and ours, opened with `span(name)` where LlamaIndex has none (the route decision, each
postprocessor, each SQL attempt and Corrective RAG step, condense, web). `timings_ms` is the sum of each stage's
outermost spans.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMCompletionEndEvent
from llama_index.core.instrumentation.span import BaseSpan, active_span_id
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from opentelemetry import trace as otel

from engines.trace import ModelCall, SpanRecord

# The stages `timings_ms` reports (the stable keys of `ask --json`, plus "scope" and "sql"); any other span is
# kept in the tree only.
STAGES = {
    "route",
    "condense",
    "retrieve",
    "scope",
    "rerank",
    "compress",
    "generate",
    "web",
    "sql",
    "metadata instruction",
    "metadata lookup",
}
_DISPATCHER = get_dispatcher("ragrouter")
_NO_ARGS = inspect.signature(lambda **kwargs: None)


@dataclass
class _Open:
    record: SpanRecord
    start: float
    llm: bool


@dataclass
class Recording:
    """What one question left: its spans (in the order they closed; each knows its start), model calls and notes."""

    trace_id: str
    start: float = field(default_factory=time.perf_counter)
    spans: list[SpanRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)  # moments (ms from the start): first_token, rows_shown
    open: dict[str, _Open] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)  # ids of its spans, open or closed
    lock: threading.Lock = field(default_factory=threading.Lock)

    def elapsed_ms(self) -> float:
        return round((time.perf_counter() - self.start) * 1000, 1)

    @property
    def ms(self) -> dict[str, float]:
        """Each stage's time: the sum of its spans that no span of the same stage encloses."""
        totals: dict[str, float] = {}
        for record in outermost(self.spans, STAGES.__contains__):
            totals[record.name] = round(totals.get(record.name, 0.0) + record.duration_ms, 1)
        return totals

    @property
    def llm_calls(self) -> int:
        """Calls to the model: LLM spans not inside another (a chat that completes is one call)."""
        return sum(1 for s in self.spans if s.kind == "llm")

    @property
    def model_calls(self) -> list[ModelCall]:
        return [ModelCall.model_validate(s.attributes["model_call"]) for s in self.spans if "model_call" in s.attributes]


def outermost(spans: list[SpanRecord], wanted: Callable[[str], bool]) -> list[SpanRecord]:
    """The spans with a `wanted` name that no span of the same name encloses (a fusion retriever's retrievers are
    inside its retrieval; a follow-up's route holds the selector's)."""
    by_id = {s.id: s for s in spans}

    def enclosed(record: SpanRecord) -> bool:
        parent = by_id.get(record.parent or "")
        while parent is not None and parent.name != record.name:
            parent = by_id.get(parent.parent or "")
        return parent is not None

    return [s for s in spans if wanted(s.name) and not enclosed(s)]


_current: ContextVar[Recording | None] = ContextVar("recording", default=None)
# Told when a stage span opens ("start") and closes ("end"): the HTTP API's native stream (`watching`).
_watcher: ContextVar[Callable[[str, SpanRecord], None] | None] = ContextVar("stage_watcher", default=None)
STEP_PREFIX = "CorrectiveRAG."  # Corrective RAG's workflow steps are spans named after the step


def is_stage(name: str) -> bool:
    """Whether a span is a stage a person follows: the STAGES and Corrective RAG's steps."""
    return name in STAGES or name.startswith(STEP_PREFIX)


@contextmanager
def watching(watcher: Callable[[str, SpanRecord], None]) -> Iterator[None]:
    """While open, `watcher(phase, span)` hears each stage start and end (phase "start" or "end")."""
    token = _watcher.set(watcher)
    try:
        yield
    finally:
        _watcher.reset(token)


def _tell(phase: str, record: SpanRecord) -> None:
    watcher = _watcher.get()
    if watcher is not None and is_stage(record.name):
        watcher(phase, record)


def _name(id_: str) -> str:
    # LlamaIndex's span ids are "<name>-<uuid>"; OpenInference names its spans the same way.
    return id_.partition("-")[0]


class _SpanRecorder(BaseSpanHandler[BaseSpan]):
    """Keeps the spans of the open question; spans outside any question are not kept."""

    def new_span(
        self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None, parent_span_id: str | None = None, **kwargs: Any
    ) -> BaseSpan | None:
        recording = _current.get()
        if recording is None:
            return None
        with recording.lock:
            parent = recording.open.get(parent_span_id or "")
            llm = isinstance(instance, BaseLLM) and not (parent and parent.llm)
            start = time.perf_counter()
            record = SpanRecord(
                id=id_,
                name=_name(id_),
                parent=parent_span_id if parent_span_id in recording.seen else None,  # else: opened before the question
                start_ms=round((start - recording.start) * 1000, 1),
                kind="llm" if llm else None,
            )
            recording.open[id_] = _Open(record, start, llm or bool(parent and parent.llm))
            recording.seen.add(id_)
        _tell("start", record)
        return BaseSpan(id_=id_, parent_id=parent_span_id)

    def prepare_to_exit_span(
        self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None, result: Any = None, **kwargs: Any
    ) -> BaseSpan | None:
        return self._close(id_)

    def prepare_to_drop_span(
        self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None, err: BaseException | None = None, **kwargs: Any
    ) -> BaseSpan | None:
        recording = _current.get()
        if recording is not None and err is not None:
            _update(recording, id_, error=f"{type(err).__name__}: {str(err)[:200]}")
        return self._close(id_)

    def _close(self, id_: str) -> BaseSpan | None:
        recording = _current.get()
        with self.lock:
            span = self.open_spans.get(id_)
        if recording is None or span is None:
            return span
        with recording.lock:
            opened = recording.open.pop(id_, None)
            if opened is not None:
                opened.record.duration_ms = round((time.perf_counter() - opened.start) * 1000, 1)
                recording.spans.append(opened.record)
        if opened is not None:
            _tell("end", opened.record)
        return span


class _EventRecorder(BaseEventHandler):
    """Stretches a streamed LLM span to the end of its stream (the span closes when the stream is handed back,
    before its first token; LlamaIndex's end event names the span when the stream ends)."""

    @classmethod
    def class_name(cls) -> str:
        return "RagrouterEventRecorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        recording = _current.get()
        if recording is None:
            return
        if isinstance(event, (LLMCompletionEndEvent, LLMChatEndEvent)):
            _stretch(recording, event.span_id)


def _update(recording: Recording, span_id: str | None, **attributes: Any) -> None:
    with recording.lock:
        if span_id in recording.open:
            recording.open[span_id].record.attributes.update(attributes)
            return
        for record in reversed(recording.spans):
            if record.id == span_id:
                record.attributes.update(attributes)
                return


def _stretch(recording: Recording, span_id: str | None) -> None:
    with recording.lock:
        for record in reversed(recording.spans):
            if record.id == span_id:
                record.duration_ms = max(record.duration_ms, round(recording.elapsed_ms() - record.start_ms, 1))
                return


_DISPATCHER.root.add_span_handler(_SpanRecorder())
_DISPATCHER.root.add_event_handler(_EventRecorder())


@contextmanager
def recording() -> Iterator[Recording]:
    """Record what is done inside (a question already being recorded goes on in its recording)."""
    if (open_recording := _current.get()) is not None:
        yield open_recording
        return
    started = Recording(trace_id=uuid.uuid4().hex)
    token = _current.set(started)
    try:
        yield started
    finally:
        _current.reset(token)


@contextmanager
def question(text: str) -> Iterator[Recording]:
    """One question, one trace: its recording and its root span "question" (the root of the exported trace, whose
    id becomes the recording's). Inside an open question (a follow-up, opened by the conversation), that one."""
    if (open_recording := _current.get()) is not None:
        yield open_recording
        return
    with recording() as started, span("question", question=text):
        started.trace_id = _exported_trace_id() or started.trace_id
        yield started


def current_trace_id() -> str | None:
    """The trace id of the question being answered here (None outside a question)."""
    recording = _current.get()
    return recording.trace_id if recording is not None else None


def _exported_trace_id() -> str | None:
    context = otel.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


class OpenSpan:
    """A span opened by `span`: what it hands back becomes its output."""

    def __init__(self, id_: str) -> None:
        self.id = id_
        self.output: Any = None

    def set(self, **attributes: Any) -> None:
        annotate(self.id, **attributes)


@contextmanager
def span(name: str, **inputs: Any) -> Iterator[OpenSpan]:
    """A stage of the question as a LlamaIndex span (so every span handler sees it, OpenInference's too): `inputs`
    are its input, `OpenSpan.output` its output, `OpenSpan.set` its attributes."""
    id_ = f"{name}-{uuid.uuid4()}"
    bound = _NO_ARGS.bind(**inputs)
    token: Token = active_span_id.set(id_)
    parent = None if token.old_value is Token.MISSING else token.old_value
    opened = OpenSpan(id_)
    _DISPATCHER.span_enter(id_=id_, bound_args=bound, parent_id=parent)
    try:
        yield opened
    except BaseException as err:
        _DISPATCHER.span_drop(id_=id_, bound_args=bound, err=err)
        raise
    else:
        _DISPATCHER.span_exit(id_=id_, bound_args=bound, result=opened.output)
    finally:
        active_span_id.reset(token)


def annotate(span_id: str, **attributes: Any) -> None:
    """Attributes of a span of the open question: in its record, and on the OpenTelemetry span when exported
    (prefixed `ragrouter.`; lists and mappings as JSON, as OpenTelemetry takes only plain values)."""
    recording = _current.get()
    if recording is not None:
        _update(recording, span_id, **attributes)
    exported = otel.get_current_span()
    if exported.is_recording():
        exported.set_attributes({f"ragrouter.{k}": _plain(v) for k, v in attributes.items() if v is not None})


def _plain(value: Any) -> Any:
    if isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def note(text: str) -> None:
    """Add a line to the open question's notes (nothing when no question is open)."""
    recording = _current.get()
    if recording is not None and text not in recording.notes:
        recording.notes.append(text)


def mark(moment: str) -> None:
    """Note when `moment` first happened in the open question (first_token, rows_shown), in ms from its start."""
    recording = _current.get()
    if recording is not None and moment not in recording.marks:
        recording.marks[moment] = recording.elapsed_ms()
        otel.get_current_span().add_event(moment)


def model_call(call: ModelCall, span_id: str | None) -> None:
    """Attach llama.cpp's counters for a call of the local model to its LLM span `span_id` (a stream's are read
    after its span closed, so not through the current span)."""
    recording = _current.get()
    if recording is not None:
        _update(recording, span_id, model_call=call.model_dump())
