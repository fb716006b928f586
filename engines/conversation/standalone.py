"""The cheap check run before any model call: does a question lean on what came before it?

A question with none of the marks of a follow-up (a pronoun or demonstrative that points back, an opening like
"and" or "what about", Chinese 呢/那/他们…, or too few words to stand alone) is routed exactly as asked, so a
first question or a new topic costs no model call. Written by hand: no library decides this without a model.
"""

from __future__ import annotations

import logging
import re

import jieba
from jieba import posseg

from engines.language import has_chinese

jieba.setLogLevel(logging.WARNING)  # it logs its dictionary loading at DEBUG to the root handler otherwise

# Words that point back to something named earlier. "that" counts only at the end ("Why is that?"): inside a
# question it opens a relative clause ("customers that are older") far more often; "this" not before a time ("this year").
POINTING_BACK = [
    re.compile(
        r"\b(it|its|they|them|their|theirs|those|these|he|she|him|his|her|hers|same|former|latter|"
        r"above|aforementioned|previous|instead|others?|another|the rest)\b",
        re.I,
    ),
    re.compile(r"\bthis\s+(?!(?:year|month|week|day|morning|evening|quarter|season|time)\b)\w+", re.I),  # "this binding style"
    re.compile(r"\b(this|that)\s*[?.!]?$", re.I),  # "Why is that?"
    # "Who scored in that final?": that/those after a preposition points back at a thing (a relative "that"
    # follows a noun: "the customers that live in Berlin").
    re.compile(r"\b(in|of|at|from|about|for|on|during|after|before|since|with|by)\s+(that|those)\s+\w+", re.I),
    re.compile(r"^how many (are|were|is|was) there\s*[?.!]?$", re.I),  # "How many are there?": of what came before
    re.compile(r"\b(a|an|the|new|this|that|which|each|every|good|best|other|\w+ing) ones?\b(?!\s+of\b)", re.I),  # "a smart one"
]
FOLLOW_UP_OPENINGS = re.compile(
    r"^(and|but|or|so|also|only|just|then|what about|how about|what if|same|of these|of those|among|tell me more|interesting|"
    r"oh|ok|okay|great|thanks|cool|wow|really|"
    r"sort|order|group|show only|list only|now only|now sort|now show|now list|how many of|which of|what else)\b",
    re.I,
)
# Chinese marks, each a way of leaning on the turn before: a closing 呢 or an opening 那/还有/其中/按; a pronoun,
# plural or singular (他 but not 其他 "other" or 吉他 "guitar"; 它 but not 其它); a demonstrative with a
# classifier or noun (这位, 这座, 该公司, 此人: not 应该 "should", 因此 "therefore", 此外 "besides"); 其 "its" where
# it opens a clause (not inside 土耳其 or 马其顿); 以上 "the above" (not "30岁以上", over 30); a bare count
# ("有多少个？").
CLASSIFIERS = "位个座家条所场部款种支项本首名只件段"  # 这位, 这座, 这条…: a demonstrative that points at one thing
CHINESE_MARKS = re.compile(
    r"呢[？?]?$|^(那|还有|再|只|另外|同样|其中|按)|按.{0,8}(统计|排序|分组|排列)"
    r"|(?<![其吉])他|她|(?<!其)它"
    rf"|[这那]([{CLASSIFIERS}]|些|样)"
    r"|(?<!应)该(?=[\u4e00-\u9fff])|(?<![因如彼从由])此(?![外])"
    r"|(?:^|[，,、：])其(?![他它实次])|其余"
    r"|上述|(?<![\d十百千万岁年个])以上|前面|刚才"
    r"|^(一共|总共)?有?多少[个只家种位条所次]?[？?。]?$"
)
# Ellipsis: a question that opens on its predicate, its subject left out ("分布在什么地区？", "是由哪两个公司开发的？").
# jieba (Milvus Lite's Chinese analyzer, installed with it) tags the first word; a verb, adverb or preposition
# opens such a question, except a command ("显示…", "列出…"), a superlative ("最年轻的…"), "有" ("有哪些…") or
# a clause that ends in 的 before the question word: it names its own subject ("到达APG机场的航班的航班号是什么？").
# A one-character "verb" is most often the first character of a name jieba does not know ("祭遵", "派西·卫斯理"),
# so only the one-character words that open predicates count.
ELLIPSIS_OPENING_TAGS = ("v", "vn", "vd", "d", "p")
ONE_CHARACTER_OPENINGS = frozenset("是由被又也还都曾共")
OWN_SUBJECT = re.compile(r"^[^什哪谁几怎如吗]*的")
NOT_ELLIPSIS = re.compile(r"^(显示|列出|给出|找出|返回|告诉|求|统计|计算|查询|查找|列举|给|请|帮|比较|最|有|你|我)")
MIN_WORDS = 4  # fewer English words than this rarely make a question of their own ("In Asia?", "Beijing?")
MIN_CHINESE_CHARS = 6


def follow_up_mark(question: str) -> str | None:
    """What marks `question` as a follow-up (for the trace), or None when it stands alone."""
    text = question.strip()
    if has_chinese(text):
        if match := CHINESE_MARKS.search(text):
            return f"it says '{match.group(0)}'"
        if opening := predicate_opening(text):
            return f"it opens on '{opening}' with no subject"
        if len(re.sub(r"\W", "", text)) < MIN_CHINESE_CHARS:
            return "it is too short to stand alone"
        return None
    if match := FOLLOW_UP_OPENINGS.search(text):
        return f"it opens with '{match.group(0)}'"
    for pattern in POINTING_BACK:
        if match := pattern.search(text):
            return f"'{match.group(0)}' points back"
    if len(re.findall(r"\w+", text)) < MIN_WORDS:
        return "it is too short to stand alone"
    return None


def predicate_opening(text: str) -> str | None:
    """The first word of a Chinese question when it is a verb, adverb or preposition (the subject left out)."""
    if NOT_ELLIPSIS.match(text) or OWN_SUBJECT.search(text):
        return None
    first = next(iter(posseg.cut(text)), None)
    if first is None or first.flag not in ELLIPSIS_OPENING_TAGS:
        return None
    return first.word if len(first.word) > 1 or first.word in ONE_CHARACTER_OPENINGS else None
