"""A question restated in the other language, for the router's second look.

e5 is multilingual, but its cosines across languages run low: an English question whose answer is in a Chinese
collection scores that collection's nearest chunk at 0.774 (median, hand-made dev set), no higher than English
questions about anything else (0.776 for Spider questions), so no threshold tells them apart. Restated in
Chinese, the same question meets the collection in its own language. One short model call, made only when no
source matched the question as asked (the web won on its floor): that is where a question in the other language
ends up (docs/experiments/crosslingual.md).
"""

from __future__ import annotations

from llama_index.core.llms import LLM

from engines.language import has_chinese

PROMPTS = {
    "en": "Translate this question into English. Answer with the English question only.\nQuestion: {question}\nEnglish:",
    "zh": "把下面的问题翻译成中文，只回答翻译后的中文问题。\n问题：{question}\n中文：",
}


class Restater:
    """`restater(question)`: the question in the other language (English for Chinese, Chinese for English)."""

    def __init__(self, llm: LLM) -> None:
        self._llm = llm

    def __call__(self, question: str) -> str:
        target = "en" if has_chinese(question) else "zh"
        text = self._llm.complete(PROMPTS[target].format(question=question)).text
        return (text.strip().splitlines() or [""])[0].strip()
