"""Whether a question may be a sort, superlative, count or filter over a source's metadata fields, read from its
words: only such a question costs a model call to write an instruction; any other goes straight to retrieval.

"How many days of leave?" has a count word but names nothing the fields hold, so it is not one; "how many Final
PEPs?" names a value, "the newest policy" a superlative that a date field can answer."""

from __future__ import annotations

import re

from engines.documents.metadata.fields import Catalog

# Superlatives a field of one type answers on its own: "the newest policy" needs no field named.
BY_DATE = re.compile(r"\b(newest|latest|most recent|oldest|earliest)\b|最新|最早|最近|最晚|最旧", re.IGNORECASE)
BY_NUMBER = re.compile(r"\b(longest|shortest|largest|smallest|biggest|highest|lowest)\b|最长|最短|最大|最小|最多|最少", re.IGNORECASE)
# Words that sort, count or filter, once the question also names a field, one of its values or the source.
CUES = re.compile(
    r"\b(first|last|most|fewest|least|how many|number of|count|list|top \d+|sorted|order(ed)? by|before|after|since|"
    r"between|earlier|later|older|newer|longer|shorter|more than|fewer than|less than|written by|authored by|which|what|"
    r"(in|from) \d{4})\b|最|多少|几[个篇份条项]|哪些|哪一|哪个|哪篇|列出|排序|之前|之后|以前|以后|早于|晚于|\d{4}\s*年|前[一二三四五六七八九十\d]+",
    re.IGNORECASE,
)
YEAR = re.compile(r"(?<!\d)(19|20)\d{2}(?!\d)")
MIN_VALUE_CHARS = 3


def _mentions(question: str, words: list[str]) -> bool:
    lowered = question.casefold()
    return any(re.search(rf"(?<!\w){re.escape(w.casefold())}s?(?!\w)", lowered) for w in words if len(w) >= MIN_VALUE_CHARS)


def names_a_field(question: str, catalog: Catalog) -> bool:
    """The question names the source, a field (number, python version) or one of a field's listed values (Final)."""
    names = [catalog.source, *(f.name for f in catalog.fields), *(f.name.replace("_", " ") for f in catalog.fields)]
    # A value of a field that names each document apart (a title) is what the question is about, not a filter.
    values = [v for f in catalog.fields if f.type in ("text", "version") and len(f.values) < f.documents for v in f.values]
    has_dates = any(f.type == "date" for f in catalog.fields)
    return _mentions(question, names + values) or (has_dates and bool(YEAR.search(question)))


def may_ask_metadata(question: str, catalog: Catalog) -> bool:
    kinds = {f.type for f in catalog.fields}
    if "date" in kinds and BY_DATE.search(question):
        return True
    if kinds & {"int", "float"} and BY_NUMBER.search(question):
        return True
    return bool(CUES.search(question)) and names_a_field(question, catalog)
