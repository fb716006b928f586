"""A question that names a numbered thing (Pixel 6, Season 17, MU5735, 1500米, 8月) is about that one: a passage
that names the same kind of thing only with other numbers (Pixel 7, Season 16, 500米, 7月) does not answer it.

The year rule's (engines/documents/scope/years.py) sibling for the other numbers a question names. Counted on RGB's dev
passages with no model involved, after the year rule: of the passages that name the question's kind of thing
only with other numbers, 0 of 153 zh_refine positives and 75 of 285 negatives; en_fact 0 of 33 and 1 of 121;
zh_int 0 of 23 and 34 of 491. A number's kind is the Latin word right before it ("Pixel 6", "MU5735") or the
Chinese character right after it ("1500米", "31任"); a number with letters after it ("20th", "5G") names no
kind, nor does a function word before it ("between 2 and 3") or a particle after it ("MIX4的"). Chinese numerals
count too when they are an ordinal (第一棒, 第三艘) or more than one digit (神舟十三号, 十三届), read by cn2an: a bare 一
to 九 is mostly part of a word (一起, 三名). With them, on zh_refine dev: 1 positive and 108 negatives set aside,
against 0 and 75 with digits alone. Written by hand because it is a pattern over numbers and their neighbours,
not a model's or a library's job; only reading a Chinese numeral is cn2an's.
"""

from __future__ import annotations

import re

import cn2an

from engines.documents.scope.years import years

# A number with the word that names its kind: Latin letters right before it (a space or hyphen between) or a
# Chinese character right after it.
NUMBERED = re.compile(r"(?:([A-Za-z]+)[ -]?)?(?<![\d.])(\d+)(?![\d.A-Za-z])([\u4e00-\u9fff])?")
# Words before a number and characters after it that say nothing of its kind ("between 2 and 3", "MIX4的").
FUNCTION_WORDS = {
    "a",
    "about",
    "after",
    "and",
    "are",
    "around",
    "as",
    "at",
    "before",
    "by",
    "for",
    "from",
    "in",
    "into",
    "is",
    "of",
    "on",
    "or",
    "over",
    "per",
    "since",
    "than",
    "the",
    "to",
    "top",
    "under",
    "until",
    "up",
    "was",
    "were",
    "with",
}
PARTICLES = set("的是在和与及了为")
# A Chinese numeral with the character right after it, and 第 before it when it is an ordinal.
CHINESE_NUMBERED = re.compile(r"(第)?([零〇一二两三四五六七八九十百千]+)([\u4e00-\u9fff])")
MULTI_DIGIT = set("十百千")


def _chinese_numbered(text: str) -> set[tuple[str, str]]:
    found = set()
    for ordinal, numeral, kind in CHINESE_NUMBERED.findall(text):
        if kind in PARTICLES or not (ordinal or MULTI_DIGIT & set(numeral)):
            continue
        try:
            found.add((kind, str(cn2an.cn2an(numeral, "smart"))))
        except ValueError:  # not a well-formed numeral ("千百")
            continue
    return found


def numbered(text: str) -> set[tuple[str, str]]:
    """(kind, number) pairs: ("pixel", "6") for "Pixel 6", ("米", "1500") for "1500米"; years are the year rule's."""
    found, named_years = set(), years(text)
    for before, number, after in NUMBERED.findall(text):
        if number in named_years:
            continue
        if before and before.lower() not in FUNCTION_WORDS:
            found.add((before.lower(), number))
        if after and after not in PARTICLES:
            found.add((after, number))
    return found | _chinese_numbered(text)


def _label(kind: str, number: str) -> str:
    return f"{number}{kind}" if "\u4e00" <= kind <= "\u9fff" else f"{kind} {number}"


def other_numbers(question: str, passage: str) -> set[str]:
    """What the passage names instead of the question's numbered thing ({"pixel 7"} for a Pixel 6 question), when
    it names that kind only with other numbers; else empty."""
    asked = numbered(question)
    named = numbered(passage) if asked else set()
    others = set()
    for kind, number in asked:
        numbers = {n for k, n in named if k == kind}
        if numbers and number not in numbers:
            others |= {_label(kind, n) for n in numbers}
    return others
