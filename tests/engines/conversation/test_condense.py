"""The condense step. What it does with a given rewrite (take it, refuse it, leave out old turns) is tested with a
scripted LLM double, as the point is the rule, not the model; the local model's own rewrites are tested in
tests/tools/test_chat.py."""

from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM

from engines.conversation.condense import Condenser
from engines.trace import RouteRecord, Trace


class ScriptedRewriter(CustomLLM):
    """A scripted LLM double: answers every prompt with `rewrite` and keeps the prompts."""

    rewrite: str
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-rewriter")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.rewrite)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


def _turn(question: str, sql: str | None = None) -> Trace:
    route = RouteRecord(chosen="shop", candidates=[], reason="", selector="embedding")
    return Trace(question=question, standalone_question=question, route=route, sql=sql, answer="7")


def _condenser(rewrite: str, history_tokens: int = 1024) -> tuple[Condenser, ScriptedRewriter]:
    llm = ScriptedRewriter(rewrite=rewrite, prompts=[])
    return Condenser(lambda: llm, history_tokens), llm


def test_a_first_question_or_a_standalone_one_costs_no_model_call() -> None:
    condenser, llm = _condenser("never used")
    assert condenser.condense("What about Beijing?", []).question == "What about Beijing?"
    result = condenser.condense("Now tell me about the weather in Berlin.", [_turn("How many singers are there?")])
    assert result.question == "Now tell me about the weather in Berlin." and result.mark is None and not llm.prompts
    assert llm.prompts == []


def test_a_follow_up_is_rewritten_with_the_previous_sql_in_view() -> None:
    condenser, llm = _condenser(" How many customers in Beijing are older than 30?\n")
    turns = [_turn("How many customers are older than 30?", "SELECT count(*) FROM customers WHERE age > 30")]
    result = condenser.condense("What about Beijing?", turns)
    assert result.question == "How many customers in Beijing are older than 30?" and result.rewritten and len(llm.prompts) == 1
    assert "SELECT count(*) FROM customers WHERE age > 30" in llm.prompts[0] and "Last question: What about Beijing?" in llm.prompts[0]


def test_a_rewrite_that_repeats_an_earlier_question_is_not_taken() -> None:
    condenser, _ = _condenser("How many customers are older than 30?")
    result = condenser.condense("What about Beijing?", [_turn("How many customers are older than 30?")])
    assert result.question == "What about Beijing?" and not result.rewritten and "repeated an earlier question" in result.note


def test_an_empty_or_rambling_rewrite_is_not_taken() -> None:
    for rewrite in ("", "word " * 200):
        condenser, _ = _condenser(rewrite)
        assert condenser.condense("What about Beijing?", [_turn("How many customers are older than 30?")]).question == "What about Beijing?"


def test_a_history_longer_than_the_budget_keeps_the_newest_turns_and_counts_the_rest() -> None:
    condenser, llm = _condenser("How many customers in Tokyo are older than 30?", history_tokens=200)
    turns = [_turn(f"Question number {n} about customers and their orders and their cities " * 3) for n in range(12)]
    turns.append(_turn("How many customers are older than 30?"))
    result = condenser.condense("What about Tokyo?", turns)
    assert result.dropped_turns > 0 and result.question.endswith("Tokyo are older than 30?")
    assert "Question number 0 " not in llm.prompts[0] and "How many customers are older than 30?" in llm.prompts[0]


def test_a_follow_up_to_an_unanswered_web_search_shows_the_question_not_the_refusal() -> None:
    condenser, llm = _condenser("What is the weather in Munich today?")
    unanswered = Trace(
        question="What is the weather in Berlin today?",
        route=RouteRecord(chosen="web", candidates=[], reason="", selector="embedding"),
        answer="Web search (duckduckgo) is unavailable, so this question cannot be answered from the web right now.",
        web_unavailable=True,
    )
    result = condenser.condense("And for Munich?", [unanswered])
    assert result.question == "What is the weather in Munich today?" and result.rewritten
    assert "(from web, no answer)" in llm.prompts[0] and "unavailable" not in llm.prompts[0].split("Conversation:")[-1]


def test_a_follow_up_written_back_unchanged_says_so_in_a_note() -> None:
    condenser, _ = _condenser("What about Beijing?")
    result = condenser.condense("What about Beijing?", [_turn("How many customers are older than 30?")])
    assert not result.rewritten and "wrote it back unchanged" in result.note
