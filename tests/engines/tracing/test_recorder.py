"""The recorder: spans, stage times, model calls and notes of the open question only, one question per thread."""

from __future__ import annotations

import threading
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from engines.trace import ModelCall
from engines.tracing.recorder import model_call, note, recording, span

dispatcher = get_dispatcher(__name__)


class SpannedEcho(CustomLLM):
    """A scripted LLM double that opens an LLM span per call, as the product's models do (engines/models/llm.py),
    and reports counters for it as the local model does."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="spanned-echo")

    @dispatcher.span
    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        from llama_index.core.instrumentation.span import active_span_id

        model_call(
            ModelCall(prompt_tokens=len(prompt), prompt_tokens_evaluated=1, prompt_tokens_reused=0, generated_tokens=1, prompt_ms=1, generate_ms=1),
            active_span_id.get(),
        )
        return CompletionResponse(text=prompt)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


def test_stages_are_spans_summed_outermost_and_model_calls_counted_once() -> None:
    llm = SpannedEcho()
    with recording() as recorded:
        with span("route"), span("route"):  # a follow-up's route holding the selector's: one stage
            pass
        for attempt in (1, 2):
            with span("sql", attempt=attempt) as opened:
                llm.complete("SELECT 1")
                opened.set(statement="SELECT 1", rows=1)
        note("a note")
        note("a note")  # said once
    names = [s.name for s in recorded.spans]
    assert names.count("route") == 2 and names.count("sql") == 2
    assert set(recorded.ms) == {"route", "sql"} and recorded.ms["route"] == recorded.spans[1].duration_ms
    assert recorded.llm_calls == 2 and [c.prompt_tokens for c in recorded.model_calls] == [8, 8]
    sql = [s for s in recorded.spans if s.name == "sql"]
    assert sql[0].attributes == {"statement": "SELECT 1", "rows": 1}
    calls = [s for s in recorded.spans if s.kind == "llm"]
    assert {c.parent for c in calls} == {s.id for s in sql}  # each model call inside its attempt
    assert recorded.notes == ["a note"] and len(recorded.trace_id) == 32


def test_nothing_is_kept_outside_a_question_and_a_failing_stage_says_why() -> None:
    with span("route"):
        note("nobody hears this")
    with recording() as recorded:
        try:
            with span("web"):
                raise TimeoutError("no answer in 5 s")
        except TimeoutError:
            pass
    assert [s.name for s in recorded.spans] == ["web"] and "TimeoutError" in recorded.spans[0].attributes["error"]


def test_two_questions_on_two_threads_keep_their_own_spans() -> None:
    llm, seen, start = SpannedEcho(), {}, threading.Barrier(2)

    def ask(name: str) -> None:
        with recording() as recorded:
            start.wait()  # both questions open at once
            for _ in range(20):
                with span(name):
                    llm.complete(name)
        seen[name] = recorded

    threads = [threading.Thread(target=ask, args=(n,)) for n in ("sql", "web")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, recorded in seen.items():
        assert {s.name for s in recorded.spans if s.kind != "llm"} == {name} and recorded.llm_calls == 20
        assert all(c.prompt_tokens == len(name) for c in recorded.model_calls)
    assert seen["sql"].trace_id != seen["web"].trace_id
