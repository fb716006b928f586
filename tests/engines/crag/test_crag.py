"""Corrective RAG on the documents path: the real model on the demo, and a scripted double where the point is
what the workflow does with a given model output (a failed verification, an unsupported answer, a leaked stack trace)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import SummaryIndex, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse, CompletionResponseGen, LLMMetadata, LogProb
from llama_index.core.llms import CustomLLM
from llama_index.core.schema import QueryBundle, TextNode

from engines.answers.output_guard import load_output_guard
from engines.crag.answer_check import Check, evidence, verify
from engines.crag.grader import Grade, RetrievalGrader, _yes_probability, calibrated, with_cosine
from engines.crag.rewrites import sub_questions
from engines.crag.workflow import CorrectiveRAG, band
from engines.documents.engine import build_answer_engine
from engines.documents.fusion import FusedRetriever
from engines.language import is_short
from engines.trace import RESULT
from tests.conftest import DEMO_SOURCES, make_settings
from tools.build import build_router

PASSAGES = ["Employees receive 28 days of paid annual leave per year.", "The office opens at 8:00."]
SUB_QUESTION_REPLY = "1. How many days of annual leave do employees get?\n2) When does the office open?\n- When does the office open?"


class ScriptedReplies(CustomLLM):
    """Scripted LLM double: grades every passage (and the answer's evidence sentence) "yes", answers with `answer`."""

    answer: str
    calls: int = 0  # the calls it answered (a double opens no LLM span for the recorder to count)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-replies")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text="yes" if "yes or no" in prompt else self.answer)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield self.complete(prompt)


class ScriptedBrokenCheck(ScriptedReplies):
    """Scripted LLM double: grades the first passage "yes", then every yes/no call (the answer's check) times out."""

    graded: int = 0

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if "yes or no" in prompt:
            self.graded += 1
            if self.graded > 1:
                raise TimeoutError("the model did not answer in time")
        return super().complete(prompt, formatted, **kwargs)


class ScriptedDoubtful(ScriptedReplies):
    """Scripted LLM double: grades every passage and every evidence sentence "no", answers with `answer`."""

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="no") if "yes or no" in prompt else super().complete(prompt, formatted, **kwargs)


class ScriptedUnsure(ScriptedReplies):
    """Scripted LLM double: grades every passage with P(yes) = 0.5 (an ambiguous retrieval), writes
    SUB_QUESTION_REPLY when asked for search questions, and otherwise replies as ScriptedReplies."""

    def chat(self, messages: list[ChatMessage], **kwargs: Any) -> ChatResponse:
        if "yes or no" not in str(messages[-1].content):
            return super().chat(messages, **kwargs)
        self.calls += 1
        even = [[LogProb(token="yes", logprob=math.log(0.5)), LogProb(token="no", logprob=math.log(0.5))]]
        return ChatResponse(message=ChatMessage(role="assistant", content="yes"), logprobs=even)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if "Search questions:" in prompt:
            self.calls += 1
            return CompletionResponse(text=SUB_QUESTION_REPLY)
        return super().complete(prompt, formatted, **kwargs)


def _run(tmp_path: Path, embed, llm: CustomLLM, **overrides: object):
    settings = make_settings(tmp_path, web_backend="searxng", searxng_url="http://127.0.0.1:9", **overrides)
    index = SummaryIndex([TextNode(text=p) for p in PASSAGES])
    engine = build_answer_engine(index, index.as_retriever(), settings, llm, embed, rerank=False)
    workflow = CorrectiveRAG(engine, llm, settings, load_output_guard(settings.output_guard_file))

    async def run():
        return await workflow.run(question="How many days of annual leave do employees get?")

    response = asyncio.run(run())
    # The crag record and the declined flag as the trace's JSON shows them.
    result = response.metadata[RESULT]
    response.metadata.update(crag=result.crag.model_dump(), declined=result.declined)
    return response


def test_a_failed_verification_lets_the_answer_through_and_says_so(tmp_path: Path, embed) -> None:
    # The answer rests on the passage the grading never reached, so the check must ask the model, and that call fails.
    response = _run(tmp_path, embed, ScriptedBrokenCheck(answer="The office opens at 8:00 [2]."))
    crag = response.metadata["crag"]
    assert str(response.response).startswith("The office opens") and crag["verification"] == "UNVERIFIED"
    assert crag["band"] == "high" and crag["actions"] == ["retrieve", "grade", "generate", "verify", "guard"]
    assert "TimeoutError" in crag["steps"][3]["error"] and response.metadata["declined"] is False


def test_the_check_grades_the_sentence_that_holds_the_answer(tmp_path: Path, embed) -> None:
    llm = ScriptedReplies(answer="The office opens at 8:00 [2].")
    crag = _run(tmp_path, embed, llm).metadata["crag"]
    assert crag["verification"] == "GOOD" and crag["steps"][3]["evidence"] == PASSAGES[1] and crag["steps"][3]["basis"] == "sentence"
    assert llm.calls == 3  # one grading call (the first passage sufficed), the answer, the check


def test_an_answer_resting_on_a_passage_graded_yes_is_checked_without_another_call(tmp_path: Path, embed) -> None:
    llm = ScriptedReplies(answer="28 days [1].")
    crag = _run(tmp_path, embed, llm).metadata["crag"]
    assert crag["verification"] == "GOOD" and crag["steps"][3]["evidence"] == PASSAGES[0] and crag["steps"][3]["basis"] == "passage"
    assert llm.calls == 2  # one grading call and the answer: plain RAG's one call plus one short one


def test_an_answer_no_passage_holds_is_retried_once_then_declined_with_the_draft_shown(tmp_path: Path, embed) -> None:
    response = _run(tmp_path, embed, ScriptedReplies(answer="Employees get a company car [1]."))
    crag = response.metadata["crag"]
    assert crag["actions"] == ["retrieve", "grade", "generate", "verify", "retrieve", "grade", "generate", "verify", "guard"]
    assert crag["verification"] == "HALLUCINATION" and response.metadata["declined"] is True
    assert "do not state the answer" in str(response.response) and "company car" in str(response.response)


def test_a_low_grade_without_the_web_answers_from_the_collection_and_the_check_decides(tmp_path: Path, embed) -> None:
    response = _run(tmp_path, embed, ScriptedDoubtful(answer="28 days [1]."))
    crag = response.metadata["crag"]
    assert crag["band"] == "low" and crag["actions"][:5] == ["retrieve", "grade", "web", "generate", "verify"]
    assert crag["steps"][2]["kept"] == 1 and "error" in crag["steps"][2]  # the closed port: the best passage kept
    assert crag["verification"] == "INSUFFICIENT" and response.metadata["declined"] is True and "28 days" in str(response.response)


def test_evidence_and_labels_without_a_model_call() -> None:
    question = "How many days of annual leave do employees get?"
    assert evidence(question, "28 days [1].", PASSAGES) == PASSAGES[0]
    assert (
        evidence("年假有几天？", "员工每年有15天年假。[2]", ["公司八点开门。员工每年享有15天带薪年假。", "食堂中午开放。"])
        == "员工每年享有15天带薪年假。"
    )
    assert evidence(question, "A company car.", PASSAGES) == ""
    unused = RetrievalGrader(ScriptedBrokenCheck(answer="", graded=1))  # any call would raise
    assert verify(question, "The sources do not contain the answer.", PASSAGES, unused, 0.4) == Check("NO_CONTEXT")
    assert verify(question, "A company car.", PASSAGES, unused, 0.4) == Check("HALLUCINATION")
    assert verify(question, "28 days [1].", PASSAGES, unused, 0.4, {PASSAGES[0]: 0.9}) == Check("GOOD", PASSAGES[0], 0.9, "passage")
    # Graded below the check's own bar, or graded on a part that does not hold the sentence: the model is asked.
    long = "x" * 700 + ". " + PASSAGES[0]
    for graded in ({PASSAGES[0]: 0.3}, {long: 0.9}):
        with pytest.raises(TimeoutError):
            verify(question, "28 days [1].", [long], unused, 0.4, graded)


def test_a_leaked_stack_trace_is_replaced_and_the_rule_named(tmp_path: Path, embed) -> None:
    leak = 'Traceback (most recent call last):\n  File "/srv/app.py", line 3'
    response = _run(tmp_path, embed, ScriptedReplies(answer=leak))
    assert "Traceback" not in str(response.response)
    assert response.metadata["crag"]["steps"][-1]["rule"] == "stack-trace"


def test_an_ambiguous_retrieval_is_retried_with_sub_questions_fused(tmp_path: Path, embed) -> None:
    llm = ScriptedUnsure(answer="28 days [1].")
    response = _run(tmp_path, embed, llm, crag_rewrites=["multi_query"], crag_max_rewrites=1)
    crag = response.metadata["crag"]
    assert crag["band"] == "ambiguous" and crag["actions"][:5] == ["retrieve", "grade", "rewrite:multi_query", "retrieve", "grade"]
    assert crag["steps"][3]["sub_questions"] == ["When does the office open?"]  # the question itself is not repeated
    assert "web" in crag["actions"] and "28 days" in str(response.response)


def test_an_answer_to_an_ambiguous_retrieval_needs_its_sentence_at_the_ambiguous_bar(tmp_path: Path, embed) -> None:
    # Every passage and the evidence sentence are graded 0.5: ambiguous, and the check's 0.2 would pass it.
    response = _run(tmp_path, embed, ScriptedUnsure(answer="28 days [1]."), crag_max_rewrites=0)
    checks = [s for s in response.metadata["crag"]["steps"] if s["action"] == "verify"]
    assert [(c["band"], c["support"], c["label"]) for c in checks] == [("ambiguous", 0.6, "INSUFFICIENT")] * 2
    assert response.metadata["declined"] is True and "28 days" in str(response.response)
    # With the ambiguous band's bar at 0.5 the same sentence passes at once.
    response = _run(tmp_path, embed, ScriptedUnsure(answer="28 days [1]."), crag_max_rewrites=0, crag_ambiguous_support=0.5)
    checks = [s for s in response.metadata["crag"]["steps"] if s["action"] == "verify"]
    assert [(c["support"], c["label"]) for c in checks] == [(0.5, "GOOD")] and response.metadata["declined"] is False


def test_a_retry_that_reaches_the_same_passages_asks_the_model_nothing_again(tmp_path: Path, embed) -> None:
    # The summary index returns both passages for any retrieval, so the wider retry of an INSUFFICIENT check
    # reads what the first answer read: the answer and its check are taken from the first round.
    llm = ScriptedUnsure(answer="28 days [1].")
    crag = _run(tmp_path, embed, llm, crag_max_rewrites=0).metadata["crag"]
    assert [s["reused"] for s in crag["steps"] if s["action"] == "generate"] == [False, True]
    assert [s["label"] for s in crag["steps"] if s["action"] == "verify"] == ["INSUFFICIENT"] * 2
    assert llm.calls == 4  # two passages graded, one answer, one check; none in the retry


def test_a_rewrite_that_finds_no_new_passage_ends_the_rewrites(tmp_path: Path, embed) -> None:
    # The summary index returns both passages for any question: the first rewrite brings nothing new.
    response = _run(tmp_path, embed, ScriptedUnsure(answer="28 days [1]."), crag_rewrites=["hyde", "step_back"], crag_max_rewrites=2)
    crag = response.metadata["crag"]
    assert crag["actions"][:6] == ["retrieve", "grade", "rewrite:hyde", "retrieve", "grade", "web"]
    assert [s.get("nothing_new") for s in crag["steps"] if s["action"] == "grade"][:2] == [False, True]


def test_sub_questions_lose_list_marks_repeats_and_the_question_itself() -> None:
    llm = ScriptedUnsure(answer="")
    assert sub_questions("How many days of annual leave do employees get?", llm) == ["When does the office open?"]
    assert sub_questions("What are the office hours and the leave?", llm, count=1) == ["How many days of annual leave do employees get?"]


def test_fusion_brings_what_only_a_sub_question_finds(embed) -> None:
    passages = PASSAGES + ["Parking permits are issued by reception.", "Visitors sign in at the front desk."]
    retriever = VectorStoreIndex([TextNode(text=p) for p in passages], embed_model=embed).as_retriever(similarity_top_k=1)
    question = QueryBundle("How many days of annual leave do employees get?")
    alone = [n.node.get_content() for n in retriever.retrieve(question)]
    fused = FusedRetriever(retriever, [QueryBundle("Who issues parking permits?")], 2, ScriptedUnsure(answer=""))
    assert alone == [PASSAGES[0]] and sorted(n.node.get_content() for n in fused.retrieve(question)) == sorted([PASSAGES[0], passages[2]])


def test_grades_and_bands() -> None:
    alternatives = [[LogProb(token="yes", logprob=math.log(0.6)), LogProb(token=" no", logprob=math.log(0.2))]]
    assert abs(_yes_probability("yes", alternatives) - 0.75) < 1e-9
    assert _yes_probability("No.", None) == 0.0 and _yes_probability("是", None) == 1.0
    assert calibrated(0.5) == 0.5 and calibrated(0.7) > 0.7 and calibrated(0.3) < 0.3
    assert Grade([0.2, None, 0.9]).relevant() == [1, 2] and Grade([0.2, 0.1]).relevant() == [0]
    assert [band(c, 3, 7) for c in (2.9, 3.0, 6.9, 7.0)] == ["low", "ambiguous", "ambiguous", "high"]
    assert is_short("年假多少天") and not is_short("年假有多少天可以休息呢？") and is_short("annual leave") and not is_short("annual leave days?")


def test_the_cosine_moves_the_graders_logit_about_its_center() -> None:
    assert with_cosine(0.7, 0.9, 40, 0.9) == 0.7 and with_cosine(0.7, 0.93, 40, 0.9) > 0.85 and with_cosine(0.7, 0.87, 40, 0.9) < 0.45
    assert with_cosine(0.7, 0.5, 0, 0.9) == 0.7


def test_the_grader_with_the_embedding_ranks_the_passage_near_a_chinese_question_higher(embed) -> None:
    # The double gives every passage P(yes) = 0.5, so any difference comes from the e5 cosine alone.
    question, passages = "员工每年有几天年假？", ["员工每年享有15天带薪年假。", "食堂中午十二点开放。"]
    alone = RetrievalGrader(ScriptedUnsure(answer=""), embed, cosine_weight=0).grade(question, passages)
    weighed = RetrievalGrader(ScriptedUnsure(answer=""), embed, cosine_weight=40, cosine_center=0.85).grade(question, passages)
    english = RetrievalGrader(ScriptedUnsure(answer=""), embed, cosine_weight=40, cosine_center=0.85).grade(
        "How many days of annual leave do employees get?", PASSAGES
    )
    assert alone.probabilities == [0.5, 0.5] and english.probabilities == [0.5, 0.5]
    assert weighed.probabilities[0] > weighed.probabilities[1] and weighed.probabilities[0] != 0.5


@pytest.fixture(scope="module")
def crag_router(router):
    """The demo router (its sources already ingested by `router`) with Corrective RAG switched on."""
    return build_router(router.settings.model_copy(update={"crag": True}), DEMO_SOURCES, llm=router.llm, embed=router.embed)


def test_the_real_model_answers_the_handbook_and_shows_its_path(crag_router) -> None:
    trace = crag_router.ask("How many days of annual leave do employees get?")
    crag = trace.crag
    assert trace.route.chosen == "handbook" and "28" in trace.answer and not trace.declined
    assert crag.actions[:2] == ["retrieve", "grade"] and crag.actions[-3:] == ["generate", "verify", "guard"]
    assert crag.band == band(crag.confidence, 3, 7) and sum(a.startswith("rewrite") for a in crag.actions) <= 2
    assert crag.verification in ("GOOD", "HALLUCINATION", "NO_CONTEXT", "INSUFFICIENT", "UNVERIFIED")
    # The check reads the one handbook sentence that holds the answer, not the passages again.
    assert "28" in [s for s in crag.steps if s["action"] == "verify"][0]["evidence"]


def test_the_real_model_declines_what_the_handbook_does_not_say(crag_router) -> None:
    trace = crag_router.ask("What is the company's policy on bringing pets to the office?", source="handbook")
    assert trace.declined and trace.crag.band != "high" and "grade" in trace.crag.actions
