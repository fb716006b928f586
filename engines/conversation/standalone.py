"""The cheap check run before any model call: does a question lean on what came before it?

A question with none of the marks of a follow-up (a pronoun or demonstrative that points back, an opening like
"and" or "what about", Chinese 呢/那/他们…, or too few words to stand alone) is routed exactly as asked, so a
first question or a new topic costs no model call. Written by hand: no library decides this without a model.
"""

from __future__ import annotations

import re

from engines.language import has_chinese

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
    re.compile(r"\b(a|an|the|new|this|that|which|each|every|good|best|other|\w+ing) ones?\b(?!\s+of\b)", re.I),  # "a smart one"
]
FOLLOW_UP_OPENINGS = re.compile(
    r"^(and|but|or|so|also|only|just|then|what about|how about|what if|same|of these|of those|among|tell me more|interesting|"
    r"oh|ok|okay|great|thanks|cool|wow|really|"
    r"sort|order|group|show only|list only|now only|now sort|now show|now list|how many of|which of|what else)\b",
    re.I,
)
CHINESE_MARKS = re.compile(
    r"呢[？?]?$|^(那|还有|再|只|另外|同样|其中|按)|他们|她们|它们|它|这些|那些|上述|以上|前面|刚才|其|该|这个|那个|分别|按.{0,8}(统计|排序|分组|排列)"
)
MIN_WORDS = 4  # fewer English words than this rarely make a question of their own ("In Asia?", "Beijing?")
MIN_CHINESE_CHARS = 6


def follow_up_mark(question: str) -> str | None:
    """What marks `question` as a follow-up (for the trace), or None when it stands alone."""
    text = question.strip()
    if has_chinese(text):
        if match := CHINESE_MARKS.search(text):
            return f"it says '{match.group(0)}'"
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
