"""The answer prompts speak the question's language: the 1.5B default follows the prompt's language more than
an instruction to switch."""

from engines.answers.declines import nothing_found
from engines.answers.prompts import CITATION_QA, CITATION_REFINE
from engines.language import asked_as
from engines.sql.prompts import ANSWER_FROM_ROWS


def test_a_chinese_question_gets_the_instructions_in_chinese() -> None:
    prompt = CITATION_QA.partial_format(query_str="国内出差每天的餐补是多少？").format(context_str="Source 1:\n餐补每天300元。")
    assert "用中文回答" in prompt and prompt.endswith("问题：国内出差每天的餐补是多少？\n回答：")
    assert "Answer the question" not in prompt


def test_an_english_question_keeps_the_english_prompt() -> None:
    prompt = CITATION_QA.format(context_str="Source 1:\nMeals: 300 a day.", query_str="What is the meal allowance?")
    assert prompt.startswith("Answer the question using only the numbered sources below.")
    assert prompt.endswith("Question: What is the meal allowance?\nAnswer: ") and "中文" not in prompt


def test_the_refine_prompt_follows_the_question_too() -> None:
    assert "已有回答：" in CITATION_REFINE.format(existing_answer="300元", context_msg="Source 2:\n…", query_str="餐补是多少？")
    assert "Existing answer: " in CITATION_REFINE.format(existing_answer="300", context_msg="Source 2:\n…", query_str="Meals?")


def test_the_answer_from_sql_rows_is_asked_in_the_question_language() -> None:
    chinese = ANSWER_FROM_ROWS.format(query_str="年龄大于30的客户有多少？", sql_query="SELECT COUNT(*) FROM customers", context_str="[(7,)]")
    assert chinese.startswith("根据SQL查询结果") and chinese.endswith("回答：")
    english = ANSWER_FROM_ROWS.format(query_str="How many customers?", sql_query="SELECT COUNT(*) FROM customers", context_str="[(7,)]")
    assert english.startswith("Given an input question") and english.endswith("Answer: ")


def test_a_follow_up_condensed_into_english_is_answered_in_the_language_it_was_asked_in() -> None:
    routed = "What is the average age of the students who do not have any pets?"
    with asked_as("他们的平均年龄是多少？"):
        prompt = ANSWER_FROM_ROWS.format(query_str=routed, sql_query="SELECT avg(age) FROM student", context_str="[(19.6,)]")
        assert prompt.startswith("根据SQL查询结果") and nothing_found(routed) == "资料中没有包含这个问题的答案。"
    assert ANSWER_FROM_ROWS.format(query_str=routed, sql_query="SELECT 1", context_str="[]").startswith("Given an input question")
