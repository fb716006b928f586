"""Selector behaviour. The LLM here is a scripted double (determinism is the point: malformed output)."""

from typing import Any

from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import QueryBundle
from llama_index.core.tools.types import ToolMetadata

from engines.routing.selectors import Floor, LLMWithFallbackSelector, ProfileEmbeddingSelector

CHOICES = [
    ToolMetadata(name="handbook", description="Company HR policies: leave, remote work, travel expenses."),
    ToolMetadata(name="shop", description="SQL database of customers, products and orders."),
]


class ScriptedLLM(CustomLLM):
    """Test double: always answers with the same scripted text."""

    reply: str = ""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        yield self.complete(prompt)


def _selector(embed) -> ProfileEmbeddingSelector:
    return ProfileEmbeddingSelector(embed, {"shop": ["customers: id, name, city, age"]})


def test_embedding_selector_scores_every_source(embed) -> None:
    result = _selector(embed).select(CHOICES, QueryBundle("How many vacation days do I get?"))
    assert result.ind == 0 and len(result.scores) == 2 and result.selector == "embedding"


def test_unparsable_llm_output_falls_back_to_the_embedding_choice(embed) -> None:
    selector = LLMWithFallbackSelector(ScriptedLLM(reply="I would pick the shop, probably."), _selector(embed))
    result = selector.select(CHOICES, QueryBundle("How many customers live in Berlin?"))
    assert result.fallback and result.ind == 1 and "unusable" in result.reason


def test_out_of_range_choice_falls_back(embed) -> None:
    selector = LLMWithFallbackSelector(ScriptedLLM(reply='[{"choice": 7, "reason": "x"}]'), _selector(embed))
    result = selector.select(CHOICES, QueryBundle("How many customers live in Berlin?"))
    assert result.fallback and "does not exist" in result.reason


def test_valid_llm_choice_is_used(embed) -> None:
    selector = LLMWithFallbackSelector(ScriptedLLM(reply='[{"choice": 1, "reason": "HR question"}]'), _selector(embed))
    result = selector.select(CHOICES, QueryBundle("How many customers live in Berlin?"))
    assert not result.fallback and result.ind == 0 and result.reason == "HR question"


def test_a_probe_lifts_a_source_that_holds_the_answer(embed) -> None:
    question = QueryBundle("How many vacation days do I get?")
    plain = ProfileEmbeddingSelector(embed, {}).select(CHOICES, question)
    probed = ProfileEmbeddingSelector(embed, {}, {"shop": lambda vector: 0.99}, probe_margin=0.01).select(CHOICES, question)
    assert plain.ind == 0 and probed.ind == 1 and abs(probed.scores[1] - 0.98) < 1e-9


WITH_WEB = [*CHOICES, ToolMetadata(name="web", description="Web search for news and current events.")]


def test_the_web_floor_takes_questions_no_local_source_is_close_to(embed) -> None:
    question = QueryBundle("Who won the 2022 football World Cup final?")
    plain = ProfileEmbeddingSelector(embed, {}).select(WITH_WEB, question)
    floor = max(plain.scores) + 0.01
    floored = ProfileEmbeddingSelector(embed, {}, floors={"web": Floor(floor, 0.0)}).select(WITH_WEB, question)
    assert floored.ind == 2 and floored.scores[2] == floor and "no source matched" in floored.reason
    # A floor below the local scores changes nothing.
    vacation = QueryBundle("How many vacation days do I get?")
    low = ProfileEmbeddingSelector(embed, {}, floors={"web": Floor(0.0, 0.0)}).select(WITH_WEB, vacation)
    assert low.ind == 0 and low.scores == ProfileEmbeddingSelector(embed, {}).select(WITH_WEB, vacation).scores


def test_chinese_questions_meet_their_own_floor(embed) -> None:
    selector = ProfileEmbeddingSelector(embed, {}, floors={"web": Floor(english=0.0, chinese=0.99)})
    assert selector.select(WITH_WEB, QueryBundle("2022年世界杯决赛谁赢了？")).scores[2] == 0.99
    english = selector.select(WITH_WEB, QueryBundle("Who won the 2022 World Cup final?"))
    assert english.scores[2] < 0.99


def test_a_route_correction_sends_the_question_to_the_right_source_and_leaves_others_alone(embed) -> None:
    wrong = QueryBundle("How much do our customers spend on travel?")
    other = QueryBundle("How many vacation days do I get?")
    selector = ProfileEmbeddingSelector(embed, {}, {"handbook": lambda vector: 0.95}, probe_margin=0.0)
    before = selector.select(CHOICES, wrong)
    assert before.ind == 0  # the handbook's probe takes it
    selector.learn({"shop": [wrong.query_str]}, {"handbook": [wrong.query_str]})
    after = selector.select(CHOICES, wrong)
    assert after.ind == 1 and after.scores[0] < before.scores[0]  # the negative took the probe's score away
    assert selector.select(CHOICES, other).ind == 0
    selector.learn({}, {})
    assert selector.select(CHOICES, wrong).scores == before.scores


WEB_CHOICES = [*CHOICES, ToolMetadata(name="web", description="Web search for news.")]


def _with_web(embed, restate, floor: Floor) -> ProfileEmbeddingSelector:
    profiles = {"handbook": ["员工手册：年假、远程办公、差旅报销"], "shop": ["客户：编号、姓名、城市、年龄"], "web": ["Latest news"]}
    return ProfileEmbeddingSelector(embed, profiles, floors={"web": floor}, restate=restate)


def test_a_question_no_source_matches_is_restated_and_routed_again(embed) -> None:
    # The restatement is a scripted double of the model's translation (the model's own is measured in the router suite).
    # The English floor is one no source reaches; the Chinese one the shop's Chinese table beats.
    selector = _with_web(embed, {"How many customers live in Berlin?": "有多少客户住在柏林？"}.get, Floor(0.95, 0.80))
    result = selector.select(WEB_CHOICES, QueryBundle("How many customers live in Berlin?"))
    assert WEB_CHOICES[result.ind].name == "shop" and result.restated == "有多少客户住在柏林？" and "restated as" in result.reason


def test_a_restatement_that_matches_nothing_leaves_the_question_to_the_web(embed) -> None:
    selector = _with_web(embed, lambda q: "谁赢得了昨天的比赛？", Floor(0.95, 0.95))
    result = selector.select(WEB_CHOICES, QueryBundle("Who won yesterday's match?"))
    assert WEB_CHOICES[result.ind].name == "web" and not result.restated
