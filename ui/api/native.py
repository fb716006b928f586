"""The native stream, `POST /v1/ask`: every step of a question as a server-sent event, in the order it happens.

Events (each with an `id:` sequence number): `queued` (while it waits its turn on the local model: how many
questions are ahead), `meta` (trace id, conversation id), `route` (the decision, every
candidate's score), `stage` (a stage starts or ends, with its ms), `passages` (what the answer will be written
from), `sql` and `rows` (the query that ran and its rows), `token` (a piece of the answer), `withdraw` (the output
guard took the answer back), `trace` (the finished trace, key for key what `ragrouter ask --json` prints), `error`,
and `done`. Passages and rows come before the first token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic import BaseModel, Field

from engines.trace import Trace
from ui.api.relay import Relay, Step


class AskRequest(BaseModel):
    question: str
    conversation_id: str | None = Field(default=None, description="A stored conversation to continue (made when unknown); none: a new one.")
    source: str | None = Field(default=None, description="Ask this source, without routing.")


def _event(n: int, kind: str, data: Any) -> str:
    return f"id: {n}\nevent: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _payloads(step: Step, chosen: str) -> list[tuple[str, Any]]:
    """The events one step of the answer becomes."""
    if step.kind == "route":
        return [("route", step.value.model_dump(mode="json"))]
    if step.kind == "stage":
        phase, record = step.value
        return [
            ("stage", {"name": record.name, "phase": phase, "start_ms": record.start_ms, **({"ms": record.duration_ms} if phase == "end" else {})})
        ]
    if step.kind == "passages":
        return [("passages", [p.sourced(chosen).model_dump(mode="json") for p in step.value])]
    if step.kind == "rows":
        sql, columns, rows = step.value
        return [("sql", {"statement": sql}), ("rows", {"columns": list(columns), "rows": [list(r) for r in rows]})]
    if step.kind == "token":
        return [("token", {"text": step.value})]
    if step.kind == "withdraw":
        return [("withdraw", {"message": step.value})]
    return []  # begin: a second answer starts (Corrective RAG after its check); its tokens follow


async def events(
    relay: Relay, first: Step, conversation_id: str | None, next_step: Callable[[Relay], Awaitable[Step]], describe: Callable[[Exception], str]
) -> AsyncIterator[str]:
    """The question's events, from its first step to `done`."""
    n, step, chosen = 0, first, ""
    while step.kind == "queued":  # its turn on the model has not come: how many questions are ahead
        n += 1
        yield _event(n, "queued", {"position": step.value})
        step = await next_step(relay)
    n += 1
    yield _event(n, "meta", {"trace_id": relay.trace_id, "conversation_id": conversation_id})
    while step.kind not in ("trace", "error"):
        if step.kind == "route":
            chosen = step.value.chosen
        for kind, data in _payloads(step, chosen):
            n += 1
            yield _event(n, kind, data)
        step = await next_step(relay)
    if step.kind == "trace":
        trace: Trace = step.value
        yield _event(n + 1, "trace", trace.model_dump(mode="json"))
    else:
        yield _event(n + 1, "error", {"message": describe(step.value)})
    yield _event(n + 2, "done", {})
