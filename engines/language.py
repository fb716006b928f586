"""Language helpers every path shares: whether a text is Chinese, and where its sentences end."""

import re

# Sentence ends in English and Chinese; the stock punkt tokenizer never splits at 。！？ and needs nltk data.
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])\s*|(?<=\.)\s+|\n+")


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
