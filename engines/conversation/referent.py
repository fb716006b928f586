"""Chinese follow-ups that point back at one thing (他, 它的, 这位运动员, 该铁路, 此人, 其) or leave their subject out
("位于哪里？"): the thing is found in the previous question and put in the pointer's place.

Rewriting the whole question was too much for the 1.5B default: on 28 dev follow-ups of CMRC2018 pairs its
rewrite named the subject 7 times (it answered instead, switched to English, or wrote the question back), while
copying a few words out of one question is within its reach and can be checked: a referent that is not in the
previous question is not used. Written by hand: LlamaIndex has no coreference step, and the Chinese
coreference models on PyPI need a download this project cannot make.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jieba import posseg
from llama_index.core import PromptTemplate
from llama_index.core.llms import LLM

from engines.conversation.standalone import CHINESE_MARKS, CLASSIFIERS, predicate_opening

PRONOUN = re.compile(r"(?<![其吉])[他她它](?![们人])")
ITS = re.compile(r"(?:^|(?<=[，,、：]))其(?![他它实次中余])")
THIS_PERSON = ("此人", "这个人", "这人")  # a pointer with its noun in it: replaced whole
# 这/那 with a classifier (not 这些 "these" or 这里 "here"); 该/此 with or without one (not 应该 "should").
THIS_ONE = re.compile("|".join(THIS_PERSON) + rf"|[这那][{CLASSIFIERS}](?=[\u4e00-\u9fff])|(?<!应)[该此][{CLASSIFIERS}]?(?=[\u4e00-\u9fff])")
REFERENT = PromptTemplate(
    "追问用一个词指代前一个问题里的事物，或者省略了它。请从前一个问题中原样抄出追问所指的事物，只写这个词语。\n\n"
    "前一个问题：鲁迅的原名是什么？\n追问：他出生在哪里？\n所指的事物：鲁迅\n\n"
    "前一个问题：长江全长多少公里？\n追问：该河流经哪些省份？\n所指的事物：长江\n\n"
    "前一个问题：《红楼梦》的作者是谁？\n追问：成书于哪个朝代？\n所指的事物：《红楼梦》\n\n"
    "前一个问题：{previous}\n追问：{question}\n所指的事物："
)
MAX_REFERENT_CHARS = 24


@dataclass
class Pointer:
    start: int
    end: int
    possessive: bool  # 其 stands for "X的"


def pointer_in(question: str) -> Pointer | None:
    """Where a Chinese question points back at one thing; an empty pointer at 0 for a left-out subject."""
    for pattern, possessive in ((PRONOUN, False), (ITS, True), (THIS_ONE, False)):
        if match := pattern.search(question):
            return Pointer(match.start(), match.end(), possessive)
    # A left-out subject only where nothing else points back ("对于这些编号…" leans on 这些, not on a subject).
    return Pointer(0, 0, False) if predicate_opening(question) and not CHINESE_MARKS.search(question) else None


def _noun_after(question: str, pointer: Pointer, referent: str) -> int:
    """Where the noun after a demonstrative ends ("该[铁路]由…", "这位[运动员]的…"): the longest start of what follows
    that ends the referent ("此火山爆发" after 皮纳图博火山), else the word jieba reads there when it is a noun."""
    rest = question[pointer.end :]
    for size in range(min(len(rest), len(referent)), 0, -1):
        if referent.endswith(rest[:size]):
            return pointer.end + size
    first = next(iter(posseg.cut(rest)), None)
    return pointer.end + len(first.word) if first is not None and first.flag.startswith("n") else pointer.end


def put_back(question: str, pointer: Pointer, referent: str) -> str:
    """`question` with `referent` in the place of its pointer."""
    end = pointer.end
    if pointer.end > pointer.start and question[pointer.start] in "这那该此" and question[pointer.start : pointer.end] not in THIS_PERSON:
        end = _noun_after(question, pointer, referent)
    words = referent + ("的" if pointer.possessive else "")
    return question[: pointer.start] + words + question[end:]


def find_referent(llm: LLM, question: str, previous: str) -> str | None:
    """The words of `previous` that `question` points back at, as the model copies them; None when what it wrote
    is not in `previous` (or is all of it)."""
    text = llm.complete(REFERENT.format(previous=previous, question=question), stop=["\n"]).text
    referent = text.strip().strip("“”\"'。，")
    if not referent or len(referent) > MAX_REFERENT_CHARS or referent not in previous or referent == previous.strip():
        return None
    return referent
