"""Language helpers every path shares: whether a text is Chinese, and where its sentences end."""

import re

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
