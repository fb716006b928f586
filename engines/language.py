"""Language helpers every path shares: whether a text is Chinese, the language an answer is written in, and where
sentences end."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# The question as the person asked it, while its answer is written: a follow-up condensed into another language
# ("他们的平均年龄是多少？" routed as "What is the average age of the students who…?") is still answered in the
# person's own. A context variable, as the previous turn is, so no path needs a new argument.
_asked: ContextVar[str | None] = ContextVar("asked", default=None)

# Sentence ends in English and Chinese; the stock punkt tokenizer never splits at 。！？ and needs nltk data.
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])\s*|(?<=\.)\s+|\n+")


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def is_short(question: str, min_words: int = 3) -> bool:
    """Too short to rewrite usefully: under 10 characters in Chinese, under `min_words` words otherwise."""
    text = question.strip()
    return len(text) < 10 if has_chinese(text) else len(text.split()) < min_words


@contextmanager
def asked_as(question: str) -> Iterator[None]:
    """While open, answers are written in the language of `question`, whatever the text the paths are given."""
    token = _asked.set(question)
    try:
        yield
    finally:
        _asked.reset(token)


def answer_in_chinese(text: str) -> bool:
    """Whether the answer to `text` is written in Chinese: the language the person asked in, else `text`'s own."""
    asked = _asked.get()
    return has_chinese(text if asked is None else asked)
