"""Saved conversations: one SQLite file in the state folder, each turn stored with its whole trace.

SQLAlchemy rather than LlamaIndex's SQLite chat store: that store keeps a list of messages per key, and a
conversation here also has a title a user can change, times to sort by, and a trace per turn that redraws its
route panel; two tables say that directly.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Column, Float, ForeignKey, Integer, MetaData, String, Table, Text, create_engine, delete, func, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from engines.trace import Trace

CONVERSATION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TITLE_CHARS = 80
LOCK_WAIT_S = 2  # a store another process holds is an error after this long, never a hang

metadata = MetaData()
conversations = Table(
    "conversations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("title", Text, nullable=False),
    Column("created", Float, nullable=False),
    Column("updated", Float, nullable=False),
)
turns = Table(
    "turns",
    metadata,
    Column("conversation_id", String(64), ForeignKey("conversations.id"), primary_key=True),
    Column("n", Integer, primary_key=True),
    Column("question", Text, nullable=False),
    Column("trace", Text, nullable=False),
    Column("created", Float, nullable=False),
)
# A question answered outside any conversation (`ragrouter ask`, an API request carrying its own history): its
# trace is kept so that feedback and `GET /v1/traces/{id}` can find it.
answers = Table(
    "answers",
    metadata,
    Column("trace_id", String(32), primary_key=True),
    Column("trace", Text, nullable=False),
    Column("created", Float, nullable=False),
)


class ConversationStoreError(RuntimeError):
    """The history store cannot be read or written (corrupt, locked, unwritable); the message says which file."""


class ConversationIdError(ValueError):
    """A conversation id that cannot be one."""


@dataclass
class ConversationSummary:
    id: str
    title: str
    created: float
    updated: float
    turns: int


def check_conversation_id(conversation_id: str) -> str:
    if not CONVERSATION_ID.match(conversation_id or ""):
        raise ConversationIdError(f"'{conversation_id}' is not a conversation id: use 1 to 64 letters, digits, '-' or '_'")
    return conversation_id


def title_of(question: str) -> str:
    text = " ".join(question.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


class ConversationStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": LOCK_WAIT_S})
        self._ready = False

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """One transaction; any database failure becomes a ConversationStoreError naming the file (the feedback
        store shares the file and this)."""
        try:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                metadata.create_all(self.engine)
                self._ready = True
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as err:
            reason = str(err.orig) if getattr(err, "orig", None) else str(err)
            raise ConversationStoreError(f"the conversation history {self.path} cannot be used: {reason}") from err

    def create(self, title: str = "New chat", conversation_id: str | None = None) -> str:
        conversation_id = check_conversation_id(conversation_id) if conversation_id else uuid.uuid4().hex[:12]
        now = time.time()
        with self.connection() as conn:
            conn.execute(conversations.insert().values(id=conversation_id, title=title_of(title), created=now, updated=now))
        return conversation_id

    def exists(self, conversation_id: str) -> bool:
        with self.connection() as conn:
            return conn.execute(select(conversations.c.id).where(conversations.c.id == conversation_id)).first() is not None

    def recent(self) -> list[ConversationSummary]:
        """Every conversation, the most recently used first."""
        counted = select(turns.c.conversation_id, func.count().label("n")).group_by(turns.c.conversation_id).subquery()
        query = (
            select(conversations, func.coalesce(counted.c.n, 0))
            .outerjoin(counted, counted.c.conversation_id == conversations.c.id)
            .order_by(conversations.c.updated.desc())
        )
        with self.connection() as conn:
            return [ConversationSummary(*row) for row in conn.execute(query)]

    def turns(self, conversation_id: str) -> list[Trace]:
        with self.connection() as conn:
            rows = conn.execute(select(turns.c.trace).where(turns.c.conversation_id == conversation_id).order_by(turns.c.n))
            return [Trace.model_validate_json(trace) for (trace,) in rows]

    def trace(self, trace_id: str) -> Trace | None:
        """The stored turn or kept answer whose trace has this id (None when none has it)."""
        with self.connection() as conn:
            row = conn.execute(select(turns.c.trace).where(func.json_extract(turns.c.trace, "$.trace_id") == trace_id)).first()
            row = row or conn.execute(select(answers.c.trace).where(answers.c.trace_id == trace_id)).first()
        return Trace.model_validate_json(row[0]) if row else None

    def keep(self, trace: Trace) -> None:
        """Keep the trace of a question answered outside a conversation."""
        with self.connection() as conn:
            conn.execute(answers.insert().values(trace_id=trace.trace_id, trace=trace.model_dump_json(), created=time.time()))

    def add_turn(self, conversation_id: str, trace: Trace) -> int:
        """Append a turn; the first one titles an untitled conversation. Returns the turn's number (from 1)."""
        now = time.time()
        with self.connection() as conn:
            count = conn.execute(select(func.count()).where(turns.c.conversation_id == conversation_id)).scalar_one()
            n = count + 1
            conn.execute(
                turns.insert().values(conversation_id=conversation_id, n=n, question=trace.question, trace=trace.model_dump_json(), created=now)
            )
            changes = {"updated": now, **({"title": title_of(trace.question)} if count == 0 else {})}
            conn.execute(update(conversations).where(conversations.c.id == conversation_id).values(**changes))
        return n

    def rename(self, conversation_id: str, title: str) -> bool:
        if not title.strip():
            raise ConversationIdError("a conversation's title cannot be empty")
        with self.connection() as conn:
            return conn.execute(update(conversations).where(conversations.c.id == conversation_id).values(title=title_of(title))).rowcount > 0

    def delete(self, conversation_id: str) -> bool:
        """Delete the conversation and its turns, nothing else; False when there was no such conversation."""
        with self.connection() as conn:
            conn.execute(delete(turns).where(turns.c.conversation_id == conversation_id))
            return conn.execute(delete(conversations).where(conversations.c.id == conversation_id)).rowcount > 0
