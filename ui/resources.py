"""What every page of the app shares, made once per process: the model, the embeddings, and the routers."""

from __future__ import annotations

import threading
from contextlib import nullcontext

import streamlit as st
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

import engines  # noqa: F401  (offline, one-thread environment before any model loads)
from engines.models.embeddings import settings_embedding
from engines.models.llm import build_llm
from engines.routing.router import RagRouter
from engines.settings import Settings
from tools.build import build_router
from tools.chat import Chat, build_chat, condense_llm
from tools.question_queue import QuestionQueue


class Unqueued(nullcontext):
    """The lock of an endpoint backend: questions run side by side, and none is ever shown as waiting."""

    def locked(self) -> bool:
        return False


@st.cache_resource(show_spinner="Loading the model and embeddings…")
def load_models() -> tuple[LLM, BaseEmbedding, threading.Lock | Unqueued]:
    """One model per process, shared by every browser tab, page and setting. With the local model, the lock makes
    questions (and uploads, which embed) queue: llama.cpp's context answers one at a time. An endpoint serves many
    at once, so its questions do not queue here."""
    settings = Settings()
    lock = threading.Lock() if settings.llm_backend == "local" else Unqueued()
    return build_llm(settings), settings_embedding(settings), lock


def sources_stamp(settings: Settings) -> float:
    """Changes when the sources file or an ingested collection changes, so an upload gets a fresh router."""
    paths = [settings.sources_file, *(settings.state_dir / "docstores").glob("*.json")]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


@st.cache_resource(show_spinner="Building the sources' tools and the router…")
def load_router(overrides: tuple[tuple[str, object], ...] = (), stamp: float = 0.0) -> RagRouter:
    """A router per combination of sidebar settings (and state of the sources), all on the same model and
    embeddings. `stamp` is only part of the cache key."""
    llm, embed, _ = load_models()
    return build_router(Settings(**dict(overrides)), llm=llm, embed=embed)


@st.cache_resource(show_spinner=False)
def load_condense_llm() -> LLM:
    """The model context that condenses follow-ups (tools/chat.py), loaded at the first follow-up, shared by every router."""
    llm, _, _ = load_models()
    return condense_llm(Settings(), llm)


def load_chat(router: RagRouter) -> Chat:
    """The router with the conversation store and the condense step (cheap: the store opens per question)."""
    return build_chat(router, load_condense_llm)


@st.cache_resource(show_spinner=False)
def load_queue() -> QuestionQueue:
    """The questions sent from every tab, answered in order per conversation, one at a time on the local model."""
    _, _, lock = load_models()
    return QuestionQueue(lock)
