"""Feedback on answers, kept in the conversations database: per trace and aspect one verdict (👍/👎), a
correction (the right source, the right SQL) and a comment, with where it came from and when.

Each row carries what its trace said (the question as routed, the source chosen, the SQL run), so it outlives
the conversation it came from and exports without the trace.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, Text, delete, select
from sqlalchemy.engine import Connection

from engines.conversation.store import ConversationStore
from engines.trace import Trace

Aspect = Literal["route", "sql", "answer", "citation"]
Origin = Literal["app", "cli", "api"]
ASPECTS: tuple[str, ...] = Aspect.__args__
UP, DOWN = 1, -1

metadata = MetaData()
feedback = Table(
    "feedback",
    metadata,
    Column("trace_id", String(32), primary_key=True),
    Column("aspect", String(16), primary_key=True),
    Column("rating", Integer),  # 1 up, -1 down, NULL: a correction alone
    Column("correction", Text),
    Column("comment", Text),
    Column("origin", String(8), nullable=False),
    Column("created", Float, nullable=False),
    Column("question", Text, nullable=False),
    Column("source", String(64), nullable=False),
    Column("sql", Text),
)


@dataclass
class Feedback:
    trace_id: str
    aspect: str
    rating: int | None
    correction: str | None
    comment: str | None
    origin: str
    created: float
    question: str
    source: str
    sql: str | None

    @property
    def confirmed(self) -> bool:
        """A 👍 or a correction: something a person vouched for, so a regression case."""
        return self.rating == UP or bool(self.correction)


class FeedbackStore:
    """The `feedback` table of the conversations database (created there on first use)."""

    def __init__(self, conversations: ConversationStore) -> None:
        self.conversations = conversations
        self._ready = False

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        with self.conversations.connection() as conn:
            if not self._ready:
                metadata.create_all(conn)
                self._ready = True
            yield conn

    def give(self, trace: Trace, aspect: str, rating: int | None, correction: str | None, comment: str | None, origin: str) -> Feedback | None:
        """Record a verdict on one aspect of `trace`, replacing an earlier one; nothing (no rating, correction or
        comment) revokes it. Returns what is stored now."""
        with self._connection() as conn:
            conn.execute(delete(feedback).where(feedback.c.trace_id == trace.trace_id, feedback.c.aspect == aspect))
            if rating is None and not correction and not comment:
                return None
            last = trace.sql_attempts[-1].sql if trace.sql_attempts else None
            row = Feedback(
                trace.trace_id,
                aspect,
                rating,
                correction or None,
                comment or None,
                origin,
                time.time(),
                trace.standalone_question or trace.question,
                trace.route.chosen if trace.route else "",
                last,
            )
            conn.execute(feedback.insert().values(**vars(row)))
        return row

    def of_trace(self, trace_id: str) -> list[Feedback]:
        with self._connection() as conn:
            return [Feedback(**row._mapping) for row in conn.execute(select(feedback).where(feedback.c.trace_id == trace_id))]

    def all(self) -> list[Feedback]:
        """Every verdict, the oldest first."""
        with self._connection() as conn:
            return [Feedback(**row._mapping) for row in conn.execute(select(feedback).order_by(feedback.c.created))]
