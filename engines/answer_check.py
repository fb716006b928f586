"""After retrieval is graded: rewrite a weak question, and check the answer against its passages."""

from __future__ import annotations

import re

from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core import PromptTemplate
from llama_index.core.llms import LLM, ChatMessage
from llama_index.core.schema import QueryBundle

from engines.language import has_chinese

LABELS = ("GOOD", "HALLUCINATION", "NO_CONTEXT", "INSUFFICIENT")
VERIFY_SYSTEM = (
    "You check an answer against the passages it was written from. Reply with exactly one label:\n"
    "GOOD - what the answer says is in the passages (related and supported is GOOD; wording may differ)\n"
    "HALLUCINATION - the answer states facts the passages do not contain\n"
    "NO_CONTEXT - the passages lack the answer and the answer says so\n"
    "INSUFFICIENT - the passages are only loosely related and the answer guesses beyond them"
)
STEP_BACK = (
    "Rewrite the question as a more general question whose answer would contain the answer to it. "
    "Keep names, dates and places. Reply with the rewritten question only, in the question's language.\n"
    "Question: {question}\nGeneral question:"
)
PASSAGE_CHARS = 700
# LlamaIndex's HyDE prompt asks for a full passage: ~10 s of generation on the local model; two sentences do.
HYDE_PROMPT = PromptTemplate(
    "Write two sentences that answer the question as an encyclopedia or news passage would, in the question's "
    "language.\nQuestion: {context_str}\nPassage:"
)


def is_short(question: str) -> bool:
    """Too short to rewrite usefully: under 10 characters in Chinese, under 3 words otherwise."""
    text = question.strip()
    return len(text) < 10 if has_chinese(text) else len(text.split()) < 3


def hyde(question: str, llm: LLM) -> QueryBundle:
    """LlamaIndex's HyDE: retrieve with a hypothetical answer passage embedded beside the question."""
    return HyDEQueryTransform(llm=llm, hyde_prompt=HYDE_PROMPT, include_original=True).run(QueryBundle(question))


def step_back(question: str, llm: LLM) -> QueryBundle:
    rewritten = llm.complete(STEP_BACK.format(question=question), max_tokens=64, stop=["\n"]).text.strip()
    return QueryBundle(rewritten or question)


REWRITES = {"hyde": hyde, "step_back": step_back}


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
