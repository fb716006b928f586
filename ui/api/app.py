"""The HTTP API's routes, behind bearer keys when set: OpenAI's `GET /v1/models` and `POST /v1/chat/completions`;
the native stream `POST /v1/ask`; stored traces and conversations; feedback on an answer.

`create_app` takes what answers (a `Chat`, built once per process by `ragrouter serve`) and the settings; the
routes only translate between HTTP and `Chat.ask`/`Chat.ask_after`. Every error is JSON with what to fix, never a
traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from engines.conversation.store import ConversationIdError, ConversationStoreError, check_conversation_id
from engines.feedback.store import Aspect, Feedback
from engines.routing.router import QuestionError, check_question
from engines.settings import Settings
from engines.sources import SourcesError
from engines.trace import Trace
from engines.tracing.recorder import watching
from tools.chat import Chat
from tools.feedback import FeedbackError, UnknownTraceError, Verdict
from ui.api.native import AskRequest, events
from ui.api.openai_chat import ROUTED, ChatRequest, annotations, chunk, completion, route_reasoning, sql_reasoning, stage_reasoning, usage
from ui.api.relay import ModelTurns, Relay, Step, answer_on_thread

log = logging.getLogger(__name__)
TRACE_HEADER = "X-Ragrouter-Trace-Id"
TRACE_ID = re.compile(r"[0-9a-f]{32}")
CLIENT_ERRORS = (QuestionError, ConversationIdError, SourcesError, ValueError)


def create_app(chat: Chat, settings: Settings) -> FastAPI:
    app = FastAPI(title="ragrouter", description="Route a question to documents, a database or the web, answer it there, and show why.")
    turns = ModelTurns(shared=settings.llm_backend != "local")
    if settings.api_cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.api_cors_origins, allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(BodyLimit, limit=settings.api_max_body_bytes)
    authorized = _bearer(settings.api_keys)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        details = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in err.errors())
        return _error(422, f"the request is not valid: {details}")

    @app.exception_handler(HTTPException)
    async def _http(request: Request, err: HTTPException) -> JSONResponse:
        return _error(err.status_code, str(err.detail))

    @app.exception_handler(ConversationStoreError)
    async def _store(request: Request, err: ConversationStoreError) -> JSONResponse:
        return _error(503, str(err))

    @app.get("/v1/models", dependencies=[Depends(authorized)])
    async def models() -> dict[str, Any]:
        names = [ROUTED, *(f"{ROUTED}:{t.source.name}" for t in chat.router.tools)]
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "ragrouter"} for name in names]}

    @app.post("/v1/chat/completions", dependencies=[Depends(authorized)])
    async def chat_completions(body: ChatRequest, chat_id: str | None = Header(default=None, alias="X-OpenWebUI-Chat-Id")):  # noqa: ANN202
        if len(body.messages) > settings.api_max_messages:
            return _error(
                422, f"the request has {len(body.messages)} messages; the limit is {settings.api_max_messages} (RAGROUTER_API_MAX_MESSAGES)"
            )
        try:
            question, source = body.question(), body.source()
            if source is not None:
                chat.router.tool(source)
            conversation = _conversation_id(body, chat_id)
        except CLIENT_ERRORS as err:
            return _error(422, str(err))
        if body.housekeeping():
            return await _housekeeping(chat, body, turns)
        history = body.history()

        def ask(relay: Relay) -> Trace:
            with watching(relay.stage):
                if conversation is not None:
                    return chat.ask(question, conversation, relay, source)
                return chat.ask_after(question, history, relay, source)

        relay = answer_on_thread(ask, turns)
        first = await _next(relay)
        while first.kind == "queued":  # an OpenAI client just waits
            first = await _next(relay)
        if first.kind == "error":
            return _failure(first.value)
        if not body.stream:
            last = first
            while last.kind not in ("trace", "error"):
                last = await _next(relay)
            if last.kind == "error":
                return _failure(last.value)
            return JSONResponse(completion(body, last.value), headers={TRACE_HEADER: last.value.trace_id})
        stream = _until_closed(relay, _chunks(body, relay, first))
        return StreamingResponse(stream, media_type="text/event-stream", headers={TRACE_HEADER: relay.trace_id or ""})

    @app.post("/v1/ask", dependencies=[Depends(authorized)])
    async def ask(body: AskRequest):  # noqa: ANN202
        try:
            question = check_question(body.question, settings.max_question_chars)
            conversation = check_conversation_id(body.conversation_id) if body.conversation_id else None
            if body.source:
                chat.router.tool(body.source)
        except CLIENT_ERRORS as err:
            return _error(422, str(err))

        def run(relay: Relay) -> Trace:
            with watching(relay.stage):
                return chat.ask(question, conversation, relay, body.source)

        relay = answer_on_thread(run, turns)
        first = await _next(relay)
        if first.kind == "error":
            return _failure(first.value)
        stream = _until_closed(relay, events(relay, first, conversation, _next, _message))
        return StreamingResponse(stream, media_type="text/event-stream", headers={TRACE_HEADER: relay.trace_id or ""})

    @app.get("/v1/traces/{trace_id}", dependencies=[Depends(authorized)])
    async def stored_trace(trace_id: str) -> JSONResponse:
        _check_trace_id(trace_id)
        trace = await asyncio.to_thread(chat.store.trace, trace_id)
        return JSONResponse(trace.model_dump(mode="json")) if trace else _error(404, f"no kept answer has the trace '{trace_id}'")

    @app.post("/v1/feedback", dependencies=[Depends(authorized)])
    async def feedback(body: FeedbackRequest) -> JSONResponse:
        _check_trace_id(body.trace_id)
        verdict = Verdict(body.aspect, body.rating, body.correction, body.comment)

        def give() -> Feedback | None:
            with turns.turn(lambda ahead: None):  # the router and SQL knowledge change between questions, not during one
                return chat.give_feedback(body.trace_id, [verdict], "api")[0]

        try:
            given = await asyncio.to_thread(give)
        except UnknownTraceError as err:
            return _error(404, str(err))
        except FeedbackError as err:
            return _error(422, str(err))
        return JSONResponse({"trace_id": body.trace_id, "aspect": body.aspect, "feedback": vars(given) if given else None})

    @app.get("/v1/conversations", dependencies=[Depends(authorized)])
    async def conversation_list() -> dict[str, Any]:
        return {"data": [vars(c) for c in await asyncio.to_thread(chat.store.recent)]}

    @app.get("/v1/conversations/{conversation_id}", dependencies=[Depends(authorized)])
    async def conversation(conversation_id: str) -> JSONResponse:
        await _known(chat, conversation_id)
        turns = await asyncio.to_thread(chat.store.turns, conversation_id)
        return JSONResponse({"id": conversation_id, "turns": [t.model_dump(mode="json") for t in turns]})

    @app.patch("/v1/conversations/{conversation_id}", dependencies=[Depends(authorized)])
    async def rename(conversation_id: str, body: Rename) -> JSONResponse:
        await _known(chat, conversation_id)
        try:
            await asyncio.to_thread(chat.store.rename, conversation_id, body.title)
        except ConversationIdError as err:
            return _error(422, str(err))
        return JSONResponse({"id": conversation_id, "title": body.title})

    @app.delete("/v1/conversations/{conversation_id}", dependencies=[Depends(authorized)])
    async def delete(conversation_id: str) -> JSONResponse:
        await _known(chat, conversation_id)
        await asyncio.to_thread(chat.store.delete, conversation_id)
        return JSONResponse({"id": conversation_id, "deleted": True})

    return app


class Rename(BaseModel):
    title: str


class FeedbackRequest(BaseModel):
    trace_id: str = Field(description="The answer's trace id (`X-Ragrouter-Trace-Id`, the native stream's `meta`).")
    aspect: Aspect = "answer"
    rating: Literal["up", "down"] | None = Field(default=None, description="null (with no correction or comment) takes feedback back.")
    correction: str | None = Field(default=None, max_length=20_000, description="route: the source that should have answered; sql: the right SQL.")
    comment: str | None = Field(default=None, max_length=2_000)


class BodyLimit:
    """Refuses a request whose Content-Length is over the limit before reading it. A plain ASGI middleware:
    Starlette's `BaseHTTPMiddleware` would stand between a stream and the client's disconnect."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if scope["type"] == "http" and length.isdigit() and int(length) > self.limit:
            response = _error(413, f"the request body is over {self.limit:,} bytes (RAGROUTER_API_MAX_BODY_BYTES)")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _check_trace_id(trace_id: str) -> None:
    if not TRACE_ID.fullmatch(trace_id):
        raise HTTPException(status_code=422, detail=f"'{trace_id}' is not a trace id: 32 hexadecimal digits")


async def _until_closed(relay: Relay, stream: AsyncIterator[str]) -> AsyncIterator[str]:
    """`stream`; when it ends early, because the client went away, the question stops at its next token."""
    try:
        async for piece in stream:
            yield piece
    finally:
        relay.cancel()


async def _known(chat: Chat, conversation_id: str) -> None:
    """Return when the conversation exists; else raise the error that says why not (a malformed id, an unknown one)."""
    try:
        check_conversation_id(conversation_id)
    except ConversationIdError as err:
        raise HTTPException(status_code=422, detail=str(err)) from err
    if not await asyncio.to_thread(chat.store.exists, conversation_id):
        raise HTTPException(status_code=404, detail=f"there is no conversation '{conversation_id}'")


def _bearer(keys: list[str]):  # noqa: ANN202 (a FastAPI dependency)
    scheme = HTTPBearer(auto_error=False)

    async def authorized(credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> None:
        if not keys:
            return
        given = credentials.credentials if credentials else ""
        # compare_digest: the time a wrong key takes says nothing of the right one; nothing of the key is logged.
        if not any(secrets.compare_digest(given.encode(), key.encode()) for key in keys):
            raise HTTPException(status_code=401, detail="a valid API key is needed: Authorization: Bearer <key> (RAGROUTER_API_KEYS)")

    return authorized


def _conversation_id(body: ChatRequest, header: str | None) -> str | None:
    named = (body.metadata or {}).get("conversation_id") or header or body.user
    return check_conversation_id(str(named)) if named else None


async def _next(relay: Relay) -> Step:
    return await asyncio.to_thread(relay.steps.get)


async def _housekeeping(chat: Chat, body: ChatRequest, turns: ModelTurns) -> JSONResponse:
    """A client's own task answered by the model alone: not routed, not a conversation turn."""
    prompt = "\n\n".join(m.text() for m in body.messages)

    def run() -> str:
        with turns.turn(lambda ahead: None):
            return chat.router.llm.complete(prompt).text.strip()

    text = await asyncio.to_thread(run)
    message = {"role": "assistant", "content": text}
    return JSONResponse(
        {
            "id": "chatcmpl-task",
            "object": "chat.completion",
            "model": body.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


async def _chunks(body: ChatRequest, relay: Relay, first: Step) -> AsyncIterator[str]:
    """The answer as OpenAI chunks: the role, the route, SQL and stage times as reasoning, each token, then the
    citations and usage."""
    completion_id = f"chatcmpl-{relay.trace_id}"
    yield _sse(chunk(completion_id, body.model, {"role": "assistant", "content": ""}))
    step, streamed = first, False
    while True:
        if step.kind == "route":
            yield _sse(chunk(completion_id, body.model, {"reasoning_content": route_reasoning(step.value)}))
        elif step.kind == "stage" and step.value[0] == "end" and step.value[1].name != "route" and step.value[1].duration_ms >= 1:
            yield _sse(chunk(completion_id, body.model, {"reasoning_content": stage_reasoning(step.value[1].name, step.value[1].duration_ms)}))
        elif step.kind == "rows":
            yield _sse(chunk(completion_id, body.model, {"reasoning_content": sql_reasoning(*step.value)}))
        elif step.kind == "token":
            streamed = True
            yield _sse(chunk(completion_id, body.model, {"content": step.value}))
        elif step.kind == "withdraw":  # what was shown broke an output-guard rule: the message follows it
            yield _sse(chunk(completion_id, body.model, {"content": f"\n\n{step.value}"}))
        elif step.kind == "trace":
            trace: Trace = step.value
            if not streamed:  # an answer no model wrote token by token (nothing found, a declined web search)
                yield _sse(chunk(completion_id, body.model, {"content": trace.answer}))
            yield _sse(chunk(completion_id, body.model, {"annotations": annotations(trace)}, "stop", usage=usage(trace)))
            break
        elif step.kind == "error":
            yield _sse({"error": {"message": _message(step.value), "type": "server_error"}})
            break
        step = await _next(relay)
    yield "data: [DONE]\n\n"


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _message(err: Exception) -> str:
    return str(err) if isinstance(err, CLIENT_ERRORS) else f"the question could not be answered: {type(err).__name__}"


def _failure(err: Exception) -> JSONResponse:
    if isinstance(err, CLIENT_ERRORS):
        return _error(422, str(err))
    log.exception("question failed", exc_info=err)
    return _error(500, _message(err))


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error"}}, status_code=status)
