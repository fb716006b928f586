"""How a cited passage got there: its score, where retrieval ranked it, and what compression kept of it."""

from __future__ import annotations

import re

from engines.language import split_sentences
from engines.trace import Passage

MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|$<>~:])")


def passage_facts(passage: Passage) -> str:
    """` · score 0.812 · retrieved #3 · compressed 1,200 → 640 chars`; only the parts the trace holds."""
    facts = [f"score {passage.score:.3f}"] if passage.score is not None else []
    if passage.retrieved_rank is not None:
        facts.append(f"retrieved #{passage.retrieved_rank}")
    if passage.retrieved_chars is not None and passage.retrieved_chars > len(passage.text):
        facts.append(f"compressed {passage.retrieved_chars:,} → {len(passage.text):,} chars")
    return "".join(f" · {fact}" for fact in facts)


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def kept_sentences(passage: Passage) -> list[tuple[str, bool]]:
    """The passage as retrieved, in the sentences compression weighs (its own splitter), each marked kept (True)
    or cut; empty when compression cut nothing."""
    if not passage.retrieved_text:
        return []
    kept = _squeezed(passage.text)
    return [(s, _squeezed(s) in kept) for s in split_sentences(passage.retrieved_text)]


def highlighted(sentences: list[tuple[str, bool]]) -> str:
    """Streamlit markdown: kept sentences on a green background, cut ones in grey."""
    escaped = [(MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(s.split())), keep) for s, keep in sentences]
    return " ".join(f":green-background[{s}]" if keep else f":gray[{s}]" for s, keep in escaped)
