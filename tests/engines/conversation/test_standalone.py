"""The cheap check: a question that stands alone is routed as asked, with no model call."""

import pytest

from engines.conversation.standalone import follow_up_mark


@pytest.mark.parametrize(
    "question",
    [
        "What about Beijing?",
        "And after five years?",
        "Who scored in that final?",
        "only those in Asia",
        "Sort them by population.",
        "What is the country corresponding it?",
        "Of these, which is Jetblue Airways?",
        "In Asia?",
        "How many are there?",
        "按年份统计呢？",
        "那北京呢？",
        "他们的平均年龄是多少？",
        "它们来自哪个国家？",
        "他的职业是什么？",
        "她出生在哪里？",
        "它的母星是什么类型的恒星？",
        "这位运动员效力过哪些球队？",
        "这条铁路全长多少公里？",
        "该大学的象征物是什么？",
        "此人是什么理论的创始人？",
        "其化学式是什么？",
        "列出其余的编号。",
        "分布在哪一大洋区？",
        "是由哪两个公司合作开发的？",
        "有多少个？",
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
        "Which players that scored in the final were injured?",
        "How many days of annual leave do new employees get?",
        "北京有哪些客户？",
        "2024年每个月的订单数是多少？",
        "其他国家的客户有多少？",
        "土耳其的首都是哪里？",
        "员工应该提前几天请假？",
        "年龄在30岁以上的客户有哪些？",
        "因此产生的费用由谁承担？",
        "最年轻的老师来自哪里？",
        "显示所有段落的文档编号。",
        "到达APG机场的航班的航班号是什么？",
        "祭遵的家庭经济状况怎么样？",
    ],
)
def test_standalone_questions_are_left_as_asked(question: str) -> None:
    assert follow_up_mark(question) is None
