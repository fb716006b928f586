"""Answer prompts shared by the documents and web paths, and the helper that words a prompt in its question's
language (the SQL path's answer from rows uses it too)."""

from collections.abc import Callable
from typing import Any

from llama_index.core import PromptTemplate

from engines.language import answer_in_chinese

# Shorter than the stock citation prompt (the 1.5B model reads ~150 tokens/s), told to prefer current documents
# over superseded ones and to say when the sources lack the answer. The words around the sources are in the
# question's language: told in English to "answer in the same language as the question", the 1.5B default
# answered 27 of 60 Chinese test questions in English (answers suite, 2026-11-30), so a Chinese question gets
# the whole instruction in Chinese.
WORDS = {
    "en": {
        "instructions": "Answer the question using only the numbered sources below. Cite the sources you use like [1] or [2]. "
        "If sources disagree, prefer the newer or current one and ignore documents marked outdated or superseded. "
        "If the sources do not contain the answer, say that the sources do not contain it. "
        "Answer in the same language as the question, in at most three sentences.",
        "refine": "Improve the existing answer to the question using these sources, citing them like [3]. "
        "If they do not help, repeat the existing answer.",
        "question": "Question: ",
        "answer": "Answer: ",
        "existing": "Existing answer: ",
        "more": "More sources:",
    },
    "zh": {
        # "用 [1]、[2] 这样的编号注明引用的资料" up front made it answer four of eleven dev questions with a bare "[5]".
        "instructions": "只根据下面编号的资料回答问题。资料之间不一致时，以较新或现行的资料为准，忽略标为过时或已废止的文件。"
        "如果资料中没有答案，就说资料中没有包含这个问题的答案。用中文回答，最多三句话，在句末用 [1] 这样的编号注明出处。",
        "refine": "用这些资料改进对问题的已有回答。如果这些资料没有帮助，就重复已有回答。用中文回答，在句末用 [3] 这样的编号注明出处。",
        "question": "问题：",
        "answer": "回答：",
        "existing": "已有回答：",
        "more": "更多资料：",
    },
}


def _filler(words: dict[str, dict[str, str]], key: str) -> Callable[..., str]:
    def fill(**variables: Any) -> str:  # LlamaIndex calls it with the prompt's other variables when formatting
        return words["zh" if answer_in_chinese(str(variables.get("query_str", ""))) else "en"][key]

    return fill


def in_question_language(template: str, words: dict[str, dict[str, str]]) -> PromptTemplate:
    """A prompt whose `words` (variables named in both `words["en"]` and `words["zh"]`) come in the language of
    its `query_str`, Chinese or English, chosen each time it is formatted."""
    return PromptTemplate(template, function_mappings={key: _filler(words, key) for key in words["en"]})


CITATION_QA = in_question_language("{instructions}\n\n{context_str}\n\n{question}{query_str}\n{answer}", WORDS)
CITATION_REFINE = in_question_language("{existing}{existing_answer}\n\n{more}\n{context_msg}\n\n{refine}\n{question}{query_str}\n{answer}", WORDS)


def fixed_parts(variable: str) -> list[str]:
    """The answer prompt in each language with `variable` where its sources begin: what comes before is the same
    for every question in that language (the model keeps it evaluated: engines/models/prompt_states.py)."""
    return [CITATION_QA.format(context_str=variable, query_str=question) for question in ("What?", "什么？")]
