"""A question that names a year is about that year: a passage that names only other years does not answer it.

Plain RAG answers "how many visitors in 2022?" from a passage about 2021 (the corrective-retrieval issue's own
example: a 2019 rule answering a 2023 question). Counted on RGB's dev passages (no model involved): of the
passages that name years but not the question's, 9 of 555 zh positives (1.6 %) and 366 of 1,463 zh negatives
(25 %); en 18 of 219 positives (8 %) and 45 of 290 negatives (16 %). A passage that names no year at all is
kept: "this year" and a headline's date say nothing here. The rule is written by hand because it is a check
of four digits, not a model or a library's job.
"""

from __future__ import annotations

import re

# 1900-2099 standing alone: not inside a longer number or a decimal, and not a count ("2000人", "1950 million").
YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?!\.?\d|\s*(?:万|亿|人|元|米|个|名|多|余|km|people|million|billion))")


def years(text: str) -> set[str]:
    return set(YEAR.findall(text))


def other_years(question: str, passage: str) -> set[str]:
    """The years `passage` names when the question names years and the passage names none of them; else empty."""
    asked = years(question)
    named = years(passage) if asked else set()
    return named if named and not named & asked else set()
