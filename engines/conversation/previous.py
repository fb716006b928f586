"""The previous turn of a conversation, for the path that answers a follow-up: a SQL follow-up's prompt builds on
the last query, and the router keeps the last source unless the words point elsewhere.

Held in a context variable while a question is answered (as the stage clock is), so the query engines, called by
LlamaIndex's router with the question text only, can read it without a new argument on every path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel


class PreviousTurn(BaseModel):
    question: str  # as routed (standalone)
    source: str
    sql: str | None = None


_previous: ContextVar[PreviousTurn | None] = ContextVar("previous_turn", default=None)


@contextmanager
def following(turn: PreviousTurn | None) -> Iterator[None]:
    """While open, `previous_turn()` is `turn`."""
    token = _previous.set(turn)
    try:
        yield
    finally:
        _previous.reset(token)


def previous_turn() -> PreviousTurn | None:
    return _previous.get()
