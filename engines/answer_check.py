"""After an answer is written: check it against the passages it was written from."""

from __future__ import annotations

import re

from llama_index.core.llms import LLM, ChatMessage

LABELS = ("GOOD", "HALLUCINATION", "NO_CONTEXT", "INSUFFICIENT")
VERIFY_SYSTEM = (
    "You check an answer against the passages it was written from. Reply with exactly one label:\n"
    "GOOD - what the answer says is in the passages (related and supported is GOOD; wording may differ)\n"
    "HALLUCINATION - the answer states facts the passages do not contain\n"
    "NO_CONTEXT - the passages lack the answer and the answer says so\n"
    "INSUFFICIENT - the passages are only loosely related and the answer guesses beyond them"
)
PASSAGE_CHARS = 700


def verify(question: str, answer: str, passages: list[str], llm: LLM) -> str:
    """One of LABELS; raises on a failed call or a reply that names no label (the caller lets the answer through)."""
    sources = "\n".join(f"[{i + 1}] {' '.join(p.split())[:PASSAGE_CHARS]}" for i, p in enumerate(passages))
    messages = [
        ChatMessage(role="system", content=VERIFY_SYSTEM),
        ChatMessage(role="user", content=f"Passages:\n{sources}\n\nQuestion: {question}\nAnswer: {answer}\n\nLabel:"),
    ]
    reply = llm.chat(messages, max_tokens=8).message.content or ""
    found = re.search("|".join(LABELS), reply.upper().replace(" ", "_"))
    if not found:
        raise ValueError(f"no label in the verifier's reply {reply[:80]!r}")
    return found.group(0)
