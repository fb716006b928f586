"""The whole path with the real default model, Milvus Lite, SQLite and embeddings on the demo sources."""

import re

import pytest
from llama_index.core.schema import QueryBundle

from engines.routing.router import QuestionError
from engines.sources import SourcesError
from tests.conftest import Heard


def _in_chinese(answer: str) -> bool:
    """More Chinese characters than Latin words: answered in the question's language."""
    return sum("\u4e00" <= ch <= "\u9fff" for ch in answer) > len(re.findall(r"[A-Za-z]+", answer))


def test_documents_question_routes_to_the_handbook_and_cites_it(router) -> None:
    heard = Heard()
    trace = router.ask("How many days per week can I work remotely?", listener=heard)
    assert len(heard.tokens) > 3 and "".join(heard.tokens).strip() == trace.answer  # streamed as it was written
    assert 0 < trace.timings_ms["first_token"] < trace.timings_ms["total"]
    assert trace.route.chosen == "handbook"
    assert re.search(r"\b(three|3)\b", trace.answer, re.I)
    assert any(p.id == "remote-work-policy-2023.md" for p in trace.passages)
    assert all(p.retrieved_rank >= 1 and p.retrieved_chars > 0 for p in trace.passages)  # before rerank and compression
    cut = [p for p in trace.passages if p.retrieved_chars > len(p.text)]  # the demo's remote-work passage is compressed
    assert cut and all(p.retrieved_text and len(p.retrieved_text) == p.retrieved_chars for p in cut)
    assert {c.name for c in trace.route.candidates} == {"handbook", "shop", "web"}
    assert {"retrieve", "compress", "generate"} <= set(trace.timings_ms) and trace.llm_calls >= 1


def test_chinese_documents_question(router) -> None:
    trace = router.ask("国内出差每天的餐补是多少？")
    assert trace.route.chosen == "handbook"
    assert "300" in trace.answer
    assert _in_chinese(trace.answer), trace.answer


def test_the_newer_leave_policy_wins_asked_as_a_person_would(router) -> None:
    # The 2022 and 2024 policy passages tie in hybrid fusion; each source is labelled with its title and date.
    trace = router.ask("How many days of paid annual leave do full-time employees get?")
    assert re.search(r"\b28\b", trace.answer) and not re.search(r"\b25\b", trace.answer), trace.answer


def test_sql_question_runs_guarded_sql_and_returns_rows(router) -> None:
    heard = Heard()
    trace = router.ask("How many customers are older than 30?", listener=heard)
    assert "".join(heard.tokens).strip() == trace.answer  # the answer sentence streams; the SQL does not
    assert heard.shown_rows == [(7,)] and trace.timings_ms["rows_shown"] <= trace.timings_ms["first_token"]  # the rows come first
    assert trace.route.chosen == "shop"
    assert trace.sql and trace.sql.upper().startswith("SELECT") and "LIMIT" in trace.sql.upper()
    assert trace.rows == [[7]]
    assert "7" in trace.answer
    first = trace.sql_attempts[0]
    assert first.written == 2 and first.votes == 2  # the two readings agree on the rows: no third ballot
    file, answer = trace.model_calls  # one value is the answer: no sentence to write
    assert answer.prompt_tokens == answer.prompt_tokens_evaluated + answer.prompt_tokens_reused and answer.generated_tokens > 0
    assert answer.prompt_tokens_reused >= file.prompt_tokens - 1  # the second reading reads only its own last tokens


def test_chinese_sql_question(router) -> None:
    trace = router.ask("年龄大于30的客户有多少？")
    assert trace.route.chosen == "shop" and trace.rows == [[7]]
    assert "7" in trace.answer and _in_chinese(trace.answer), trace.answer


def test_web_question_answers_from_search_results_with_urls(router) -> None:
    trace = router.ask("Who won the 2026 Harbor City marathon, according to the latest news?")
    assert trace.route.chosen == "web"
    assert "Varga" in trace.answer
    assert any(p.url and p.url.startswith("http://127.0.0.1/") for p in trace.passages)


def test_unreachable_web_search_is_reported_not_invented(router, monkeypatch) -> None:
    monkeypatch.setattr(router.settings, "searxng_url", "http://127.0.0.1:9")  # nothing listens on the discard port
    trace = router.ask("Who won the 2026 Harbor City marathon?", source="web")
    assert trace.web_unavailable and "unavailable" in trace.answer and not trace.passages
    assert "Varga" not in trace.answer


@pytest.mark.parametrize("question", ["", "   \n", "x" * 50_000])
def test_bad_questions_are_refused(router, question: str) -> None:
    with pytest.raises(QuestionError):
        router.ask(question)


def test_unknown_source_name_is_refused(router) -> None:
    with pytest.raises(SourcesError, match="unknown source 'nope'.*handbook"):
        router.ask("anything", source="nope")


def test_tavily_without_a_key_is_unavailable_not_a_crash(demo_settings) -> None:
    from engines.web import WebSearchUnavailable, search_web

    with pytest.raises(WebSearchUnavailable, match="TAVILY_API_KEY"):
        search_web("anything", demo_settings.model_copy(update={"web_backend": "tavily", "tavily_api_key": ""}))


DEMO_ROUTES = {
    "上海的客户有几个？": "shop",
    "价格最高的商品是什么？": "shop",
    "北京有哪些客户？": "shop",  # an example in the shop's knowledge file: its probe carries it past the web
    "哪个城市的客户最多？": "shop",
    "How many customers live in Beijing?": "shop",
    "上个月卖得最好的商品是什么？": "shop",
    "远程办公需要申请吗？": "handbook",
    "报销需要哪些材料？": "handbook",
    "年假有多少天？": "handbook",
    "How many days of annual leave do employees get?": "handbook",
    "今天北京天气怎么样？": "web",
    "What is the price of Bitcoin today?": "web",
    "Who won the 2022 FIFA World Cup?": "web",
    "2023年诺贝尔文学奖得主是谁？": "web",
}


def test_demo_questions_in_both_languages_route_to_their_source(router) -> None:
    choices = [t.tool.metadata for t in router.tools]
    chosen = {q: choices[router.selector.select(choices, QueryBundle(q)).ind].name for q in DEMO_ROUTES}
    assert chosen == DEMO_ROUTES
