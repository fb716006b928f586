"""The cheap check: a question that stands alone is routed as asked, with no model call."""

import pytest

from engines.conversation.standalone import follow_up_mark


@pytest.mark.parametrize(
    "question",
    [
        "What about Beijing?",
        "And after five years?",
        "only those in Asia",
        "Sort them by population.",
        "What is the country corresponding it?",
        "Of these, which is Jetblue Airways?",
        "In Asia?",
        "按年份统计呢？",
        "那北京呢？",
        "他们的平均年龄是多少？",
        "它们来自哪个国家？",
    ],
)
def test_follow_ups_are_marked(question: str) -> None:
    assert follow_up_mark(question) is not None


@pytest.mark.parametrize(
    "question",
    [
        "How many customers are older than 30?",
        "Now tell me about the weather in Berlin.",
        "List the customers that joined in 2024.",
        "How many days of annual leave do new employees get?",
        "北京有哪些客户？",
        "2024年每个月的订单数是多少？",
    ],
)
def test_standalone_questions_are_left_as_asked(question: str) -> None:
    assert follow_up_mark(question) is None
