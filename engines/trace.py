"""The per-answer trace: what was asked, where it was routed and why, what was used, how long each stage took.

Its JSON form is the stable interface of `ragrouter ask --json`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Candidate(BaseModel):
    name: str
    score: float


class RouteRecord(BaseModel):
    chosen: str
    candidates: list[Candidate]
    reason: str
    selector: str
    fallback: bool = False
    kept_previous: bool = False  # a follow-up kept the previous turn's source (engines/routing/router.py)
    restated: str = ""  # the question in the other language, when the route was found by it (engines/routing/restate.py)


class Passage(BaseModel):
    source: str
    id: str
    title: str | None = None
    score: float | None = None
    text: str
    url: str | None = None
    retrieved_rank: int | None = None  # its place in the retrieval order, before rerank
    retrieved_chars: int | None = None  # its length before compression
    retrieved_text: str | None = None  # its text before compression, where compression cut it

    def sourced(self, source: str) -> Passage:
        """This passage, its source `source` when it has none (a path leaves the answering collection's blank)."""
        return self if self.source else self.model_copy(update={"source": source})


class SqlAttempt(BaseModel):
    """One query the model wrote: as written (after the fixes listed in `fixes`: a column moved to the table that
    has it, a forgotten join added, a join on a column compared with itself made on its key, a compared string put
    in its stored spelling), as run (after the guard), and why it failed, if it did. When several queries were written for it (`written`), this is the one whose rows
    won the vote: `votes` of them returned these rows, `chosen` is its place among them (0: the greedy one);
    `others` are the distinct queries that lost; `raw` holds every query as the model wrote it, before any fix, in
    the order written: what a replay of this attempt starts from (`ragrouter eval sql --replay`)."""

    sql: str
    fixes: list[str] = []
    ran: str | None = None
    error: str | None = None
    kind: str | None = None
    written: int = 1
    votes: int = 1
    chosen: int = 0
    others: list[str] = []
    raw: list[str] = []


class CragRecord(BaseModel):
    """The documents path's corrective steps: retrieval confidence (0-10) and band, the actions taken in order,
    the answer's verification label, and each step's details and time."""

    confidence: float
    band: str
    actions: list[str]
    verification: str | None = None
    steps: list[dict[str, Any]] = Field(default_factory=list)


class MetadataRecord(BaseModel):
    """A sort, superlative, count or filter question answered from the documents' metadata fields: the model's
    instruction (checked: dates made ranges), the Milvus filter expression it became, how many documents matched,
    and the ones listed with the field values that put them there."""

    instruction: dict[str, Any]
    expression: str
    matched: int
    unsorted: int = 0  # matched, but without a value for the sort field
    documents: list[dict[str, Any]] = Field(default_factory=list)


class ConversationRecord(BaseModel):
    """Where the question stands in its conversation and how it became the question routed."""

    id: str
    turn: int  # from 1
    follow_up: str | None = None  # what marked it as a follow-up (engines/conversation/standalone.py); None: it stands alone
    rewritten: bool = False
    dropped_turns: int = 0  # earlier turns the condense step left out because they would not fit
    cancelled: bool = False  # sent, then cancelled by the person before it was answered: kept, never condensed over


class AskedInConversation(BaseModel):
    """What the conversation hands the router with a follow-up made standalone: the question as asked, its place in
    the conversation, and the conversation's notes (the trace is built in the router only)."""

    question: str
    record: ConversationRecord
    notes: list[str] = Field(default_factory=list)


class ModelCall(BaseModel):
    """One call to the local model: how much of its prompt llama.cpp read and how much it reused from the
    evaluation left by the call before (the shared schema, system text), and how long each part took."""

    prompt_tokens: int
    prompt_tokens_evaluated: int
    prompt_tokens_reused: int
    generated_tokens: int
    prompt_ms: float
    generate_ms: float


class SpanRecord(BaseModel):
    """One span of the question (engines/tracing/recorder.py): a stage, a LlamaIndex component or a model call;
    times in ms from the question's start."""

    id: str
    name: str
    parent: str | None = None
    start_ms: float
    duration_ms: float = 0.0
    kind: str | None = None  # "llm": a call to the model (one per call, however it is wrapped)
    attributes: dict[str, Any] = Field(default_factory=dict)


class SqlResult(BaseModel):
    """What the SQL path hands back: the query that ran (or the last one tried), its rows, and every attempt."""

    sql: str
    rows: list[list[Any]] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    attempts: list[SqlAttempt] = Field(default_factory=list)

    def fill(self, trace: Trace, source: str) -> None:
        trace.sql, trace.rows, trace.columns, trace.sql_attempts = self.sql or None, self.rows, self.columns, self.attempts
        if self.attempts and self.attempts[-1].error:
            trace.notes.append(f"SQL did not run: {self.attempts[-1].error}")


class PassagesResult(BaseModel):
    """What the documents and web paths hand back: the passages the answer was written from, and what the path
    decided on the way (Corrective RAG's steps, a metadata lookup, a web search that failed)."""

    passages: list[Passage] = Field(default_factory=list)
    crag: CragRecord | None = None
    metadata_query: MetadataRecord | None = None
    web_error: str | None = None  # set: web search was unavailable, and why
    declined: bool | None = None  # None: read from the answer

    def fill(self, trace: Trace, source: str) -> None:
        # A passage without a source is the answering collection's; a page fetched from the web says "web".
        trace.passages = [p.sourced(source) for p in self.passages]
        trace.crag, trace.metadata_query = self.crag, self.metadata_query
        trace.web_unavailable, trace.web_error = self.web_error is not None, self.web_error
        if self.declined is not None:
            trace.declined = self.declined


PathResult = SqlResult | PassagesResult
RESULT = "path_result"  # the response metadata key every path hands its PathResult under


class Trace(BaseModel):
    trace_id: str = ""  # the OpenTelemetry trace id when export is on (RAGROUTER_OTEL), else a random one of the same form
    question: str
    standalone_question: str = ""  # the question routed: `question`, or the follow-up rewritten to stand alone
    conversation: ConversationRecord | None = None
    route: RouteRecord | None = None
    answer: str = ""
    sql: str | None = None
    rows: list[list[Any]] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    sql_attempts: list[SqlAttempt] = Field(default_factory=list)
    passages: list[Passage] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(
        default_factory=dict
    )  # total, condense (in a conversation), route, answer, first_token (when streamed), the stages
    llm_calls: int = 0  # every call to the model while answering, routing included
    model_calls: list[ModelCall] = Field(default_factory=list)  # the local model's calls, in order (none from an endpoint)
    web_unavailable: bool = False
    web_error: str | None = None  # why web search failed, for the trace and the log (the answer says so in one sentence)
    crag: CragRecord | None = None
    metadata_query: MetadataRecord | None = None
    declined: bool = False
    notes: list[str] = Field(default_factory=list)
    spans: list[SpanRecord] = Field(default_factory=list)  # every stage and model call, in the order they opened
