"""A question that names a year or a numbered thing is not answered from passages about other years or other numbered
things of its kind, on the plain path and in CRAG."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from llama_index.core import SummaryIndex
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from engines.answers.output_guard import load_output_guard
from engines.crag.workflow import CorrectiveRAG
from engines.documents.engine import build_answer_engine
from engines.documents.scope.filter import ScopeFilter
from engines.documents.scope.numbers import numbered, other_numbers
from engines.documents.scope.years import other_years, years
from engines.trace import RESULT
from engines.tracing.recorder import recording
from tests.conftest import make_settings

RULES = [
    "The 2019 attendance rule: everyone works from the office five days a week.",
    "From 2021 on, staff may work remotely two days a week.",
]


class ScriptedNoCalls(CustomLLM):
    """Scripted LLM double that fails the test if the model is asked anything: no passage should reach it."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-no-calls")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise AssertionError(f"the model was asked: {prompt[:200]}")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise AssertionError("the model was asked")


def test_years_are_four_digits_standing_alone_and_not_counts() -> None:
    assert years("2022年北京冬奥会, held in February 2022.") == {"2022"}
    assert years("死亡人数2000人, 1950 million people, 12.2019 and 120221") == set()


def test_a_passage_naming_only_other_years_is_out_of_scope() -> None:
    assert other_years("2022年冬奥会在哪里举办？", "2018年冬奥会在平昌举办。") == {"2018"}
    assert other_years("Who won the 2018 Nobel Prize in Literature?", "Oct 10, 2019: the 2018 prize went to Olga Tokarczuk.") == set()
    assert other_years("Who won the 2018 Nobel Prize in Literature?", "Olga Tokarczuk won the prize.") == set()  # names no year
    assert other_years("Who won the Nobel Prize in Literature?", "In 2019 the prize went to Peter Handke.") == set()  # asks none


def test_the_filter_keeps_the_asked_year_and_notes_what_it_set_aside() -> None:
    nodes = [NodeWithScore(node=TextNode(text=t)) for t in [*RULES, "The 2023 rule: remote work three days a week."]]
    with recording() as clock:
        kept = ScopeFilter().postprocess_nodes(nodes, QueryBundle("What is the 2023 remote-work rule?"))
    assert [n.node.get_content() for n in kept] == ["The 2023 rule: remote work three days a week."]
    assert clock.notes == ["2 of 3 passages set aside: they name 2019, 2021, not what the question asks about."]


def test_a_numbered_thing_is_named_by_the_word_before_it_or_the_character_after_it() -> None:
    assert numbered("When was Pixel 6 announced? MU5735航班, 男子1500米, 2022年8月") == {
        ("pixel", "6"),
        ("mu", "5735"),
        ("航", "5735"),
        ("米", "1500"),
        ("月", "8"),
    }
    assert numbered("the 20th Century, 5G, 小米MIX4的处理器, 2021 and 3 games") == {("mix", "4")}  # ordinals, particles, years, "and"


def test_a_passage_naming_its_kind_only_with_other_numbers_is_out_of_scope() -> None:
    assert other_numbers("When was Pixel 6 announced?", "Google announced the Pixel 7 on October 6.") == {"pixel 7"}
    assert other_numbers("北京冬奥会男子1500米速度滑冰金牌", "高亭宇获得男子500米金牌。") == {"500米"}
    assert other_numbers("When was Pixel 6 announced?", "Pixel 6 and Pixel 7 compared.") == set()  # names the asked one
    assert other_numbers("When was Pixel 6 announced?", "Google announced the phone on October 19.") == set()  # names no Pixel
    assert other_numbers("What is the premiere date of Season 17?", "The fourth season premiered in 2020.") == set()


def test_chinese_numerals_name_a_numbered_thing_when_ordinal_or_more_than_one_digit() -> None:
    assert numbered("神舟十三号的第一棒，十三届五次会议") == {("号", "13"), ("棒", "1"), ("届", "13")}  # 五次: a bare digit
    assert numbered("大家一起来，三名选手，千百年来") == set()  # word parts, counts, and no well-formed numeral
    assert other_numbers("谁是北京冬奥会第一棒火炬手", "在鸟巢传递火炬第三棒的是杨扬。") == {"3棒"}
    assert other_numbers("谁是北京冬奥会第一棒火炬手", "第1棒是赵伟昌，第三棒是杨扬。") == set()  # 第1棒 is 第一棒
    assert other_numbers("神舟十三号飞船的成员有哪些", "神舟12号的航天员是聂海胜、刘伯明和汤洪波。") == {"12号"}


def test_the_filter_sets_aside_other_numbered_things_and_the_setting_turns_it_off() -> None:
    nodes = [NodeWithScore(node=TextNode(text=t)) for t in ["Pixel 7 was announced in October 2022.", "Pixel 6 was announced on October 19, 2021."]]
    question = QueryBundle("When was Pixel 6 announced?")
    with recording() as clock:
        kept = ScopeFilter().postprocess_nodes(nodes, question)
    assert [n.node.get_content() for n in kept] == ["Pixel 6 was announced on October 19, 2021."]
    assert clock.notes == ["1 of 2 passages set aside: they name pixel 7, not what the question asks about."]
    assert len(ScopeFilter(numbers=False).postprocess_nodes(nodes, question)) == 2


def _plain(tmp_path: Path, embed, **overrides: object):
    settings = make_settings(tmp_path, web_backend="searxng", searxng_url="http://127.0.0.1:9", **overrides)
    index = SummaryIndex([TextNode(text=t) for t in RULES])
    return settings, build_answer_engine(index, index.as_retriever(), settings, ScriptedNoCalls(), embed, rerank=False)


def test_the_plain_path_declines_a_year_no_passage_is_about_without_asking_the_model(tmp_path: Path, embed) -> None:
    _, engine = _plain(tmp_path, embed)
    response = engine.query("What is the 2023 remote-work rule?")
    assert str(response) == "The sources do not contain the answer to this question." and not response.source_nodes
    assert str(engine.query("2023年的远程办公规定是什么？")) == "资料中没有包含这个问题的答案。"


def test_crag_declines_a_year_no_passage_is_about_without_asking_the_model(tmp_path: Path, embed) -> None:
    settings, engine = _plain(tmp_path, embed, crag=True)
    workflow = CorrectiveRAG(engine, ScriptedNoCalls(), settings, load_output_guard(settings.output_guard_file))

    async def run():
        return await workflow.run(question="What is the 2023 remote-work rule?")

    response = asyncio.run(run())
    assert response.metadata[RESULT].declined  # and ScriptedNoCalls was never called


def test_the_setting_turns_the_filter_off(tmp_path: Path, embed) -> None:
    _, engine = _plain(tmp_path, embed, year_scope=False)
    assert len(engine.retrieve(QueryBundle("What is the 2023 remote-work rule?"))) == 2
