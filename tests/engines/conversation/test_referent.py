"""Chinese follow-ups that point back at one thing: where the pointer is, and the referent put in its place. The
model's part is played by a scripted LLM double where the rule is the point (is a referent taken only when it is
copied from the previous question?); the local model's own referents are measured by `ragrouter eval chat`."""

import pytest

from engines.conversation.condense import Condenser
from engines.conversation.referent import find_referent, pointer_in, put_back
from engines.trace import RouteRecord, Trace
from tests.engines.conversation.test_condense import ScriptedRewriter


@pytest.mark.parametrize(
    ("question", "referent", "standalone"),
    [
        ("他的职业是什么？", "邹游", "邹游的职业是什么？"),
        ("她出生在哪里？", "伊芳·卡特菲", "伊芳·卡特菲出生在哪里？"),
        ("它分布在哪里？", "长鳍新平鲉", "长鳍新平鲉分布在哪里？"),
        ("这位运动员效力过哪些球队？", "莱昂德罗·内托", "莱昂德罗·内托效力过哪些球队？"),
        ("该铁路由哪家公司管理运营？", "广茂铁路", "广茂铁路由哪家公司管理运营？"),
        ("这条铁路全长多少公里？", "广茂铁路", "广茂铁路全长多少公里？"),
        ("此火山爆发对平流层产生了什么影响？", "皮纳图博火山", "皮纳图博火山爆发对平流层产生了什么影响？"),
        ("此人是什么理论的创始人？", "贝塔郎非", "贝塔郎非是什么理论的创始人？"),
        ("其化学式是什么？", "乙二醛", "乙二醛的化学式是什么？"),
        ("位于哪里？", "武藏浦和站", "武藏浦和站位于哪里？"),
    ],
)
def test_the_referent_takes_the_pointers_place(question: str, referent: str, standalone: str) -> None:
    pointer = pointer_in(question)
    assert pointer is not None and put_back(question, pointer, referent) == standalone


@pytest.mark.parametrize(
    "question", ["他们的平均年龄是多少？", "这些学生里谁最年轻？", "按城市统计呢？", "对于这些文档编号，分别统计段落数量。", "员工应该提前几天请假？"]
)
def test_plurals_edits_and_other_words_are_left_to_the_condense_prompt(question: str) -> None:
    assert pointer_in(question) is None


def test_a_referent_is_taken_only_when_it_is_copied_from_the_previous_question() -> None:
    previous = "广茂铁路全长多少公里？"
    assert find_referent(ScriptedRewriter(rewrite=" 广茂铁路\n", prompts=[]), "该铁路由哪家公司管理运营？", previous) == "广茂铁路"
    for reply in ("三茂铁路股份有限公司", "", previous, "广茂铁路全长多少公里？广茂铁路全长多少公里？"):
        assert find_referent(ScriptedRewriter(rewrite=reply, prompts=[]), "该铁路由哪家公司管理运营？", previous) is None


def test_a_chinese_pointer_costs_one_call_and_an_uncopied_referent_falls_back_to_the_condense_prompt() -> None:
    turn = Trace(question="广茂铁路全长多少公里？", route=RouteRecord(chosen="articles", candidates=[], reason="", selector="x"), answer="364.6公里")
    copier = ScriptedRewriter(rewrite="广茂铁路", prompts=[])
    found = Condenser(lambda: copier, 1024).condense("该铁路由哪家公司管理运营？", [turn])
    assert found.question == "广茂铁路由哪家公司管理运营？" and found.rewritten and len(copier.prompts) == 1
    writer = ScriptedRewriter(rewrite="Which company runs it?", prompts=[])
    english = Condenser(lambda: writer, 1024).condense("该铁路由哪家公司管理运营？", [turn])
    assert english.question == "该铁路由哪家公司管理运营？" and len(writer.prompts) == 2 and "another language" in english.note
