"""Streaming answers: tokens reach the listener as they are written, and the output guard cuts a leak off where
it starts matching. The stream's own rules are checked on fixed token lists; the engine's on a scripted LLM double
that writes its answer word by word (the point is what the engine does with a given stream); the real model's
streams are checked in test_end_to_end.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core import SummaryIndex
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.schema import TextNode

from engines.answers.output_guard import load_output_guard
from engines.answers.streaming import listening
from engines.documents.engine import build_answer_engine
from engines.settings import DATA_DIR
from engines.tracing.recorder import recording
from tests.conftest import Heard, make_settings

GUARD = load_output_guard(DATA_DIR / "output-guard.yaml")
LEAK = ["It failed:", " Traceback", " (most recent call last):", ' File "/srv/app.py",', " line 3"]


class WordByWord(CustomLLM):
    """Scripted LLM double: answers every prompt with `answer`, streamed one word at a time."""

    answer: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="word-by-word")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = ""
        for word in self.answer.split(" "):
            delta = word if not text else " " + word
            text += delta
            yield CompletionResponse(text=text, delta=delta)


def test_tokens_reach_the_listener_in_order_and_the_whole_text_is_returned() -> None:
    heard = Heard()
    with recording() as recorded, listening(heard, GUARD) as stream:
        text = stream.relay(["Employees get", " 28 days", " of leave [1]."])
    assert text == "Employees get 28 days of leave [1]." == "".join(heard.tokens)
    assert heard.begins == 1 and heard.withdrawn is None and "first_token" in recorded.marks


def test_a_leak_is_withdrawn_where_it_starts_matching_and_nothing_after_it_is_shown() -> None:
    heard = Heard()
    with listening(heard, GUARD) as stream:
        text = stream.relay(LEAK)
    assert text == "".join(LEAK)  # the whole answer still reaches the router, whose final check replaces it
    assert heard.tokens == LEAK[:2] and "withheld" in heard.withdrawn


def test_the_answer_engine_streams_while_listened_to_and_answers_the_same_without(tmp_path: Path, embed) -> None:
    settings = make_settings(tmp_path)
    index = SummaryIndex([TextNode(text="Employees receive 28 days of paid annual leave per year.")])
    llm = WordByWord(answer="Employees receive 28 days of paid annual leave [1].")
    engine = build_answer_engine(index, index.as_retriever(), settings, llm, embed, rerank=False)
    heard = Heard()
    with listening(heard, GUARD):
        streamed = engine.query("How many days of annual leave?")
    assert heard.tokens == llm.answer.split(" ")[:1] + [" " + w for w in llm.answer.split(" ")[1:]]

    # The answer handed back names the passage its citation points to (engines/answers/passages.py).
    def cited(response) -> str:
        return f"Employees receive 28 days of paid annual leave [1] ({response.source_nodes[0].node.node_id})."

    plain = engine.query("How many days of annual leave?")
    assert str(streamed.response) == cited(streamed) and str(plain.response) == cited(plain)
