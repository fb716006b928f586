"""The OpenAI chat completions shapes: what a client sends, and the completion or chunks it gets back.

A request's last user message is the question. Its conversation is the stored one named by `metadata.conversation_id`,
the `X-OpenWebUI-Chat-Id` header or `user`; without one, the request's earlier messages are the history. The
answer's citations keep their numbers, and the passages come as `annotations` on the message (the final chunk when
streaming); the route, the SQL that ran and each stage's time go out as `reasoning_content`, which Open WebUI shows
folded.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engines.trace import RouteRecord, Trace
from engines.tracing.recorder import is_stage

ROUTED = "ragrouter"  # the model that routes; "ragrouter:<source>" asks that source
SHOWN_ROWS = 10


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The text of the message; of a list of parts (OpenAI's multi-part content), the text parts joined."""
        if isinstance(self.content, list):
            return "".join(str(part.get("text", "")) for part in self.content if part.get("type") == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    """OpenAI's request; fields ragrouter has no use for (temperature, max_tokens, tools...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = ROUTED
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    user: str | None = None
    metadata: dict[str, Any] | None = None

    def question(self) -> str:
        users = [m for m in self.messages if m.role == "user"]
        if not users or self.messages[-1].role != "user":
            raise ValueError("the last message must be the user's question")
        return users[-1].text()

    def source(self) -> str | None:
        """The source a `ragrouter:<source>` model names; None for routed."""
        name, _, source = self.model.partition(":")
        if name != ROUTED:
            raise ValueError(f"unknown model '{self.model}': use '{ROUTED}' or '{ROUTED}:<source>' (GET /v1/models)")
        return source or None

    def history(self) -> list[Trace]:
        """The earlier user and assistant messages as turns (no source known: condensed as any unrouted turn)."""
        turns: list[Trace] = []
        for message in self.messages[:-1]:
            if message.role == "user":
                turns.append(Trace(question=message.text(), standalone_question=message.text()))
            elif message.role == "assistant" and turns:
                turns[-1].answer = message.text()
        return turns

    def housekeeping(self) -> bool:
        """A client's own task (Open WebUI's title, tags, follow-up suggestions): its prompts start "### Task:"."""
        return self.messages[-1].text().lstrip().startswith("### Task:")


def route_reasoning(route: RouteRecord) -> str:
    """The route as a reader follows it: where, by which selector, every score, and why."""
    scores = ", ".join(f"{c.name} {c.score:.3f}" for c in route.candidates)
    return f"Routed to {route.chosen} by the {route.selector} selector" + (f" ({scores})" if scores else "") + f". {route.reason}\n"


def stage_reasoning(name: str, ms: float) -> str:
    return f"- {name}: {ms:,.0f} ms\n"


def sql_reasoning(sql: str, columns: list[str], rows: list) -> str:
    """The query and its first rows as a Markdown table (a client shows text only; the app shows the rows)."""
    shown = rows[:SHOWN_ROWS]
    table = ["| " + " | ".join(map(str, columns)) + " |", "|" + "---|" * len(columns)] if columns else []
    table += ["| " + " | ".join(map(str, row)) + " |" for row in shown]
    more = f"\n({len(rows) - len(shown)} more rows)" if len(rows) > len(shown) else ""
    return f"SQL ({len(rows)} row{'s' * (len(rows) != 1)}): `{sql}`\n\n" + "\n".join(table) + more + "\n\n"


def reasoning(trace: Trace) -> str:
    """What a stream tells as it happens, told at once: the route, the SQL that ran, each stage's time."""
    text = route_reasoning(trace.route) if trace.route else ""
    if trace.sql:
        text += sql_reasoning(trace.sql, trace.columns or [], trace.rows)
    stages = {k: v for k, v in trace.timings_ms.items() if is_stage(k) and v >= 1}  # a 0 ms condense: nothing before
    return text + "".join(stage_reasoning(name, ms) for name, ms in stages.items())


def annotations(trace: Trace) -> list[dict[str, Any]]:
    """The passages the answer's [n] marks point to, in their order."""
    return [
        {"type": "citation", "citation": {"number": n, "source": p.source, "id": p.id, "title": p.title, "url": p.url}}
        for n, p in enumerate(trace.passages, 1)
    ]


def usage(trace: Trace) -> dict[str, int]:
    """Tokens read and written by the model for this answer (the local model's counters; 0 from an endpoint)."""
    prompt = sum(c.prompt_tokens for c in trace.model_calls)
    completion = sum(c.generated_tokens for c in trace.model_calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(request: ChatRequest, trace: Trace) -> dict[str, Any]:
    message = {"role": "assistant", "content": trace.answer, "annotations": annotations(trace), "reasoning_content": reasoning(trace)}
    return {
        "id": f"chatcmpl-{trace.trace_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage(trace),
    }


def chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One streamed piece: only what is new (`delta`), never the text so far."""
    return {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
