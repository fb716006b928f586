"""A question answered on a worker thread while an HTTP response streams what it does.

The router answers synchronously and tells a listener each step (engines/answers/streaming.py); an HTTP stream is
an async generator. `Relay` is the listener: it queues every step, and the response reads the queue.
`ModelTurns` makes questions on the local model take turns (llama.cpp's context answers one at a time); an
endpoint backend's questions run side by side.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from engines.trace import Passage, RouteRecord, SpanRecord, Trace
from engines.tracing.recorder import current_trace_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    kind: str  # queued, route, stage, passages, begin, token, withdraw, rows, trace (the last one), error (the last one)
    value: Any = None


class Cancelled(Exception):
    """The client went away: the answer stops at its next token, or before it starts when it was waiting."""


class Relay:
    """What the answer does, in order, for a stream on another thread."""

    def __init__(self) -> None:
        self.steps: queue.Queue[Step] = queue.Queue()
        self.trace_id: str | None = None  # known from the route on: the stream's id and header
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def route(self, route: RouteRecord) -> None:
        self.trace_id = current_trace_id()
        self.steps.put(Step("route", route))

    def stage(self, phase: str, record: SpanRecord) -> None:
        self.trace_id = self.trace_id or current_trace_id()
        self.steps.put(Step("stage", (phase, record)))

    def passages(self, passages: list[Passage]) -> None:
        self.steps.put(Step("passages", passages))

    def begin(self) -> None:
        self.steps.put(Step("begin"))

    def token(self, delta: str) -> None:
        if self.cancelled.is_set():  # raised inside the model's token loop, which closes llama.cpp's generator
            raise Cancelled("the client went away")
        self.steps.put(Step("token", delta))

    def withdraw(self, message: str) -> None:
        self.steps.put(Step("withdraw", message))

    def rows(self, sql: str, columns: list[str], rows: list[tuple]) -> None:
        self.steps.put(Step("rows", (sql, columns, rows)))


class ModelTurns:
    """Whose turn it is on the model: on the local one, one question at a time, each told how many are ahead of it
    when it has to wait; an endpoint backend takes them side by side (`shared`)."""

    def __init__(self, shared: bool) -> None:
        self._lock = None if shared else threading.Lock()
        self._count = threading.Lock()
        self._in = 0  # questions answering or waiting

    @contextmanager
    def turn(self, waiting: Callable[[int], None]) -> Iterator[None]:
        if self._lock is None:
            yield
            return
        with self._count:
            ahead, self._in = self._in, self._in + 1
        if ahead:
            waiting(ahead)
        try:
            with self._lock:
                yield
        finally:
            with self._count:
                self._in -= 1


def answer_on_thread(ask: Callable[[Relay], Trace], turns: ModelTurns) -> Relay:
    """Start answering with `ask` on a thread of its own, in its turn on the model (a `queued` step says how many
    are ahead when it must wait); the relay ends with a `trace` step, or an `error` step holding the exception.
    A cancelled relay stops at its next token and gives its turn to the next question."""
    relay = Relay()

    def run() -> None:
        try:
            with turns.turn(lambda ahead: relay.steps.put(Step("queued", ahead))):
                if relay.cancelled.is_set():
                    raise Cancelled("the client went away while waiting")
                relay.steps.put(Step("trace", ask(relay)))
        except Cancelled:
            log.info("a client went away: its question stopped")
        except Exception as err:  # the stream says so; the server goes on
            relay.steps.put(Step("error", err))

    threading.Thread(target=run, name="api-question", daemon=True).start()
    return relay
