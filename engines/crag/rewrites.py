"""Rewrites of a question whose retrieval graded ambiguous (Corrective RAG): HyDE, multi-query and step-back."""

from __future__ import annotations

import re

from llama_index.core import PromptTemplate
from llama_index.core.indices.query.query_transform import HyDEQueryTransform
from llama_index.core.llms import LLM
from llama_index.core.schema import QueryBundle

from engines.language import has_chinese

# Each prompt in the question's language: asked in English about a Chinese question, the 1.5B model writes its
# rewrites in English, which the Chinese passages do not match (RGB zh dev: nDCG@10 of the sub-questions 0.55
# against 0.77 for the question as asked).
STEP_BACK = {
    "en": "Rewrite the question as a more general question whose answer would contain the answer to it. "
    "Keep names, dates and places. Reply with the rewritten question only.\nQuestion: {question}\nGeneral question:",
    "zh": "把问题改写成一个更一般的问题，它的答案会包含原问题的答案。保留人名、日期和地名。只回答改写后的问题，用中文。\n"
    "问题：{question}\n更一般的问题：",
}
SUB_QUESTIONS = {
    "en": "Split the question into at most {count} short search questions that together cover what it asks (for a "
    "question about one thing, ask it in other words). Keep names, dates and places. One per line, no numbers."
    "\nQuestion: {question}\nSearch questions:\n",
    "zh": "把问题拆成最多{count}个简短的搜索问题，合起来覆盖原问题所问的内容（只问一件事的问题，就换一种说法）。保留人名、"
    "日期和地名。每行一个，不要编号，用中文。\n问题：{question}\n搜索问题：\n",
}
LIST_MARK = re.compile(r"^\s*(?:\d+[.)、．]|[-*•])\s*")
# LlamaIndex's HyDE prompt asks for a full passage: ~10 s of generation on the local model; two sentences do.
HYDE_PROMPT = PromptTemplate(
    "Write two sentences that answer the question as an encyclopedia or news passage would, in the question's "
    "language.\nQuestion: {context_str}\nPassage:"
)


def _language(question: str) -> str:
    return "zh" if has_chinese(question) else "en"


# Each rewrite returns the queries to retrieve with: one, or the question and its sub-questions to be fused.
def hyde(question: str, llm: LLM) -> list[QueryBundle]:
    """LlamaIndex's HyDE: retrieve with a hypothetical answer passage embedded beside the question."""
    return [HyDEQueryTransform(llm=llm, hyde_prompt=HYDE_PROMPT, include_original=True).run(QueryBundle(question))]


def step_back(question: str, llm: LLM) -> list[QueryBundle]:
    rewritten = llm.complete(STEP_BACK[_language(question)].format(question=question), max_tokens=64, stop=["\n"]).text.strip()
    return [QueryBundle(rewritten or question)]


def sub_questions(question: str, llm: LLM, count: int = 2) -> list[str]:
    """Multi-query rewriting: up to `count` sub-questions, without list marks or repeats of the question."""
    reply = llm.complete(SUB_QUESTIONS[_language(question)].format(count=count, question=question), max_tokens=96).text
    lines = [LIST_MARK.sub("", line).strip() for line in reply.splitlines()]
    return [line for line in dict.fromkeys(lines) if line and line != question][:count]


def multi_query(question: str, llm: LLM) -> list[QueryBundle]:
    return [QueryBundle(question)] + [QueryBundle(q) for q in sub_questions(question, llm)]


def fixed_parts(variable: str) -> list[str]:
    """Each rewrite prompt with `variable` where its question begins: what comes before is the same for every
    question in that language."""
    prompts = [STEP_BACK[lang].format(question=variable) for lang in STEP_BACK]
    prompts += [SUB_QUESTIONS[lang].format(count=2, question=variable) for lang in SUB_QUESTIONS]
    return [*prompts, HYDE_PROMPT.format(context_str=variable)]


REWRITES = {"hyde": hyde, "multi_query": multi_query, "step_back": step_back}
