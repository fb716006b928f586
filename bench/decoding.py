"""Prompt-lookup speculative decoding (llama-cpp-python's `LlamaPromptLookupDecoding`) against plain decoding.

SQL copies table and column names from its prompt, an extractive answer copies the passage: a draft taken from
the prompt's own n-grams could let the model accept several tokens per step. Measured here on the product's SQL
and cited-answer prompts, each model read cold: the prompt's evaluation time (a draft model needs the logits of
every prompt token, `logits_all`, where plain decoding keeps the last one's), then the generation alone (the same
call again, its prompt already evaluated), and whether both wrote the same text.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from llama_index.core.schema import QueryBundle

from engines.answers.prompts import CITATION_QA
from engines.models.files import require_model
from engines.models.llm import STOP, chatml_completion, chatml_continued
from engines.settings import Settings
from engines.sql.engine import FILE_STOP
from engines.sql.prompts import SQL_PREFIX, write_prompt

MAX_TOKENS = 128
PROMPTS = 6  # of each kind, from the start of the path's questions (the demo's, English then Chinese)


def _sql_prompt(router: Any, source: str, question: str) -> tuple[str, list[str]]:
    engine = router.tool(source).tool.query_engine
    prompt = write_prompt(question, engine.knowledge.retrieve(question), engine.database.dialect, engine.schema_budget_chars)
    return chatml_continued(prompt) + SQL_PREFIX, [*FILE_STOP, *STOP]


def _answer_prompt(router: Any, source: str, question: str) -> tuple[str, list[str]]:
    engine = router.tool(source).tool.query_engine
    engine = getattr(engine, "retrieval", engine)  # the answer engine behind the metadata questions' engine
    nodes = engine.retrieve(QueryBundle(question))
    context = "\n\n".join(f"Source {i}:\n{n.node.get_content()}" for i, n in enumerate(nodes, 1))
    return chatml_completion(CITATION_QA.format(context_str=context, query_str=question)), STOP


def _run(model: Any, prompt: str, stop: list[str]) -> dict:
    model.reset()
    start = time.perf_counter()
    model(prompt, max_tokens=1, temperature=0.0, top_k=1)
    prompt_ms = 1000 * (time.perf_counter() - start)
    start = time.perf_counter()
    out = model(prompt, max_tokens=MAX_TOKENS, stop=stop, temperature=0.0, top_k=1)
    generate_s = time.perf_counter() - start
    return {"prompt_ms": prompt_ms, "generate_s": generate_s, "tokens": out["usage"]["completion_tokens"], "text": out["choices"][0]["text"]}


def _summary(runs: list[dict]) -> dict:
    return {
        "prompt_ms_median": round(float(np.median([r["prompt_ms"] for r in runs])), 1),
        "tokens_per_s": round(sum(r["tokens"] for r in runs) / sum(r["generate_s"] for r in runs), 2),
        "generate_ms_median": round(1000 * float(np.median([r["generate_s"] for r in runs])), 1),
    }


def decoding_speed(settings: Settings, sql: list[tuple[Any, str, str]], documents: list[tuple[Any, str, str]]) -> dict:
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    prompts = [_sql_prompt(*a) for a in sql[:PROMPTS]] + [_answer_prompt(*a) for a in documents[:PROMPTS]]
    common = {
        "model_path": str(require_model(settings.model_path)),
        "n_ctx": settings.context_window,
        "n_threads": settings.llm_threads,
        "verbose": False,
    }
    # logits_all given too: llama-cpp-python sizes its logits buffer by the argument, not by the draft model's need.
    lookup = Llama(**common, logits_all=True, draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10))
    models = {"plain": Llama(**common), "lookup": lookup}
    runs: dict[str, list[dict]] = {name: [] for name in models}
    for prompt, stop in prompts:
        for name, model in models.items():
            runs[name].append(_run(model, prompt, stop))
    same = sum(a["text"] == b["text"] for a, b in zip(runs["plain"], runs["lookup"]))
    return {"prompts": len(prompts), "same_text": same, **{name: _summary(r) for name, r in runs.items()}}
