"""After an answer is written: check it against the passages it was written from."""

from __future__ import annotations

import re

from llama_index.core.llms import LLM, ChatMessage

LABELS = ("GOOD", "HALLUCINATION", "NO_CONTEXT", "INSUFFICIENT")
LABEL_MEANINGS = (
    "GOOD - what the answer says is in the passages (related and supported is GOOD; wording may differ)\n"
    "HALLUCINATION - the answer states facts the passages do not contain\n"
    "NO_CONTEXT - the passages lack the answer and the answer says so\n"
    "INSUFFICIENT - the passages are only loosely related and the answer guesses beyond them"
)
VERIFY_SYSTEM = "You check an answer against the passages it was written from. Reply with exactly one label:\n" + LABEL_MEANINGS
# Asked as the next turn of the answer's own conversation, where the passages are the numbered sources above.
VERIFY_FOLLOW_UP = "Check the answer you just wrote against the numbered sources above. Reply with exactly one label:\n" + LABEL_MEANINGS
PASSAGE_CHARS = 700


def _label(reply: str) -> str:
    found = re.search("|".join(LABELS), reply.upper().replace(" ", "_"))
    if not found:
        raise ValueError(f"no label in the verifier's reply {reply[:80]!r}")
    return found.group(0)


def verify(question: str, answer: str, passages: list[str], llm: LLM) -> tuple[str, str]:
    """One of LABELS, and how it was asked: "follow-up" (the next turn after the model's answer, when the local
    model still holds that conversation: it then reads only the answer and this question, not the passages again)
    or "standalone" (the passages, question and answer in a new prompt). Raises on a failed call or a reply that
    names no label (the caller lets the answer through)."""
    follow_up = getattr(llm, "follow_up", None)
    reply = follow_up(answer, VERIFY_FOLLOW_UP, max_tokens=8) if follow_up else None
    if reply is not None:
        return _label(reply), "follow-up"
    sources = "\n".join(f"[{i + 1}] {' '.join(p.split())[:PASSAGE_CHARS]}" for i, p in enumerate(passages))
    messages = [
        ChatMessage(role="system", content=VERIFY_SYSTEM),
        ChatMessage(role="user", content=f"Passages:\n{sources}\n\nQuestion: {question}\nAnswer: {answer}\n\nLabel:"),
    ]
    return _label(llm.chat(messages, max_tokens=8).message.content or ""), "standalone"
