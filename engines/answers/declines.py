"""Does an answer say that the sources lack the answer? Used for the trace's `declined` flag and by the evals."""

from __future__ import annotations

import re

from engines.language import answer_in_chinese

# The phrases the citation prompt's "say that the sources do not contain it" comes out as, in English and Chinese,
# and those of LlamaIndex's stock prompts (which ask for no fixed phrase).
DECLINE = re.compile(
    r"(do(es)? not (contain|mention|provide|include|say|specify|state)|doesn't (contain|mention|provide)|not (mentioned|provided|specified|stated)|"
    r"no (information|mention|answer)|cannot (be )?(answer|determine|found)|can't (answer|determine)|unable to (answer|determine|find)|"
    r"don't know|do not know|insufficient|not enough information|没有(提到|提及|提供|相关|包含|给出|说明)|并未|未(提及|提到|提供|给出|说明)|"
    r"无法(回答|确定|从|得知|找到)|不包含|不知道|信息不足)",
    re.IGNORECASE,
)


def declines(answer: str) -> bool:
    return bool(DECLINE.search(answer))


def nothing_found(question: str) -> str:
    """The answer when no passage is left to answer from, in the question's language, without a model call."""
    return "资料中没有包含这个问题的答案。" if answer_in_chinese(question) else "The sources do not contain the answer to this question."
