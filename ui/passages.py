"""How a cited passage got there, in one line: its score, where retrieval ranked it, what compression cut."""

from __future__ import annotations

from engines.trace import Passage


def passage_facts(passage: Passage) -> str:
    """` · score 0.812 · retrieved #3 · compressed 1,200 → 640 chars`; only the parts the trace holds."""
    facts = [f"score {passage.score:.3f}"] if passage.score is not None else []
    if passage.retrieved_rank is not None:
        facts.append(f"retrieved #{passage.retrieved_rank}")
    if passage.retrieved_chars is not None and passage.retrieved_chars > len(passage.text):
        facts.append(f"compressed {passage.retrieved_chars:,} → {len(passage.text):,} chars")
    return "".join(f" · {fact}" for fact in facts)
