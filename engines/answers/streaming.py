"""The answer as it is written: its tokens go to a listener (the app, `ragrouter ask`) while the model writes them.

A context variable holds the listener of the question being answered, as the recorder does for spans, so
the answering steps need no extra argument: synthesis on the documents and web paths and the SQL answer sentence
stream only while someone listens, and evals and tests that do not listen run as before. The output guard reads
the text at every token, so a leak is cut off where it starts matching a rule: the listener is told to withdraw
what it showed and hears nothing more of that answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from llama_index.core.llms import LLM

from engines.answers.output_guard import OutputGuard
from engines.trace import Passage, RouteRecord
from engines.tracing.recorder import mark


class AnswerListener(Protocol):
    def begin(self) -> None:
        """A new answer starts (corrective RAG may write a second one after verifying the first)."""

    def token(self, delta: str) -> None:
        """The next piece of the answer."""

    def withdraw(self, message: str) -> None:
        """What was shown broke an output-guard rule: show `message` instead."""

    def rows(self, sql: str, columns: list[str], rows: list[tuple]) -> None:
        """The SQL path's query ran: its rows, shown before the sentence written from them."""


class RouteListener(AnswerListener, Protocol):
    """A listener that also hears the steps before the answer (the HTTP API's streams; the app and CLI need not)."""

    def route(self, route: RouteRecord) -> None:
        """The source was chosen (before anything is answered): the decision, every candidate's score."""

    def passages(self, passages: list[Passage]) -> None:
        """The passages the answer is about to be written from, in their citation order."""


@dataclass
class AnswerStream:
    listener: AnswerListener
    guard: OutputGuard

    def relay(self, tokens: Iterable[str]) -> str:
        """Pass each token on while the text keeps to the guard's rules; return the whole text either way."""
        self.listener.begin()
        text, cut = "", False
        for delta in tokens:
            mark("first_token")
            text += delta
            if cut:
                continue
            if rule := self.guard.check(text):
                self.listener.withdraw(rule.message)
                cut = True
            else:
                self.listener.token(delta)
        return text


_current: ContextVar[AnswerStream | None] = ContextVar("answer_stream", default=None)


@contextmanager
def listening(listener: AnswerListener, guard: OutputGuard) -> Iterator[AnswerStream]:
    """Stream the answers written while this is open to `listener`."""
    stream = AnswerStream(listener, guard)
    token = _current.set(stream)
    try:
        yield stream
    finally:
        _current.reset(token)


def current() -> AnswerStream | None:
    """The open stream, if anyone listens."""
    return _current.get()


def show_rows(sql: str, columns: list[str], rows: list[tuple]) -> None:
    """Pass the rows a query returned to the listener, as soon as they exist."""
    stream = current()
    if stream is not None:
        mark("rows_shown")
        stream.listener.rows(sql, columns, rows)


def show_route(route: RouteRecord) -> None:
    """Tell a listener that hears routes where the question goes, as soon as that is decided."""
    stream = current()
    if stream is not None and hasattr(stream.listener, "route"):
        stream.listener.route(route)


def show_passages(passages: list[Passage]) -> None:
    """Tell a listener that hears passages what the answer will be written from, before its first token."""
    stream = current()
    if stream is not None and hasattr(stream.listener, "passages"):
        stream.listener.passages(passages)


def whole_answer(text: str) -> str:
    """An answer no model writes (a template), passed to the listener at once as one piece."""
    stream = current()
    return text if stream is None else stream.relay([text])


def complete_answer(llm: LLM, prompt: str) -> str:
    """The model's answer to `prompt`, streamed to the listener when there is one."""
    stream = current()
    if stream is None:
        return llm.complete(prompt).text
    return stream.relay(r.delta or "" for r in llm.stream_complete(prompt))
