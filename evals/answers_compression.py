"""The answers suite with each compression of the plain path side by side (`ragrouter eval answers --compression`):
no compression, `SentenceEmbeddingOptimizer` (today's default), LLM extract and LLM filter, on the same questions
and passages. Per choice: answer accuracy, rejection, the share of answerable questions whose gold answer is
still in the passages the model reads, the characters it reads against those given, and latency."""

from __future__ import annotations

import time

import numpy as np
from llama_index.core import SummaryIndex
from llama_index.core.schema import TextNode

from engines.answers.declines import declines
from engines.answers.passages import CITATION_PREFIX
from engines.documents.engine import build_answer_engine
from engines.routing.router import RagRouter
from engines.tracing.recorder import recording
from evals.answers_suite import correct_answer, summarise
from evals.metrics import contains_answer, f1, share
from evals.report import Report
from evals.runlog import RunLog

COMPRESSIONS = ("off", "embedding", "llm_extract", "llm_filter")
DEFAULT = "embedding"


def _measure(router: RagRouter, compress: str, item: dict) -> dict:
    settings = router.settings.model_copy(update={"compress": compress})
    index = SummaryIndex([TextNode(text=p) for p in item["passages"]])
    engine = build_answer_engine(index, index.as_retriever(), settings, router.llm, router.embed, rerank=False)
    start = time.perf_counter()
    with recording() as clock:
        response = engine.query(item["question"])
    ms = round(1000 * (time.perf_counter() - start), 1)
    answer = str(response.response or "").strip()
    read = [CITATION_PREFIX.sub("", n.node.get_content()).strip() for n in response.source_nodes]
    record = {
        "answer": answer,
        "ms": ms,
        "compress_ms": clock.ms.get("compress", 0.0),
        "declined": declines(answer),
        "chars_given": sum(len(p) for p in item["passages"]),
        "chars_read": sum(len(t) for t in read),
        "notes": clock.notes,
    }
    if item["answerable"]:
        golds = [g for g in item["answers"] if isinstance(g, str)] or [a for g in item["answers"] for a in g]
        record["correct"] = correct_answer(answer, item)
        record["f1"] = round(f1(answer, golds), 4)
        record["span_kept"] = bool(contains_answer(" ".join(read), golds))
    return record


def _figures(records: list[dict], items: list[dict]) -> dict:
    summary = summarise(records, items)
    answerable = [r for r, q in zip(records, items) if q["answerable"]]
    return {
        "answer_accuracy": summary["answer_accuracy"],
        "rejection_rate": summary["rejection_rate"],
        "span_kept": share([r["span_kept"] for r in answerable]),
        "chars_kept": round(sum(r["chars_read"] for r in records) / max(1, sum(r["chars_given"] for r in records)), 4),
        "median_ms": summary["median_ms"],
        "compress_median_ms": round(float(np.median([r["compress_ms"] for r in records])), 1),
        "fell_back": sum(1 for r in records if any("could not be read" in n or "kept nothing" in n for n in r["notes"])),
    }


def run_compression_comparison(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    keyed = [(f"{i}:{q['set']}:{q['question']}", q) for i, q in enumerate(items)]
    figures = {c: _figures(log.run(f"compress={c}", keyed, lambda q, c=c: _measure(router, c, q)), items) for c in COMPRESSIONS}
    configured = router.settings.compress if router.settings.compress != DEFAULT else "llm_extract"
    headline = ("answer_accuracy", "rejection_rate", "span_kept", "chars_kept", "median_ms")
    report.headline(
        {k: figures[configured][k] for k in headline},
        {k: figures[DEFAULT][k] for k in headline},
        "SentenceEmbeddingOptimizer (today's default)",
        system=f"compress={configured}",
    )
    report.detail("compressions", figures)
    columns = ("answer_accuracy", "rejection_rate", "span_kept", "chars_kept", "median_ms", "compress_median_ms", "fell_back")
    rows = ["| compress | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    rows += [f"| {c} | " + " | ".join(str(figures[c][k]) for k in columns) + " |" for c in COMPRESSIONS]
    report.section(
        "## Every compression on the same passages\n\n" + "\n".join(rows) + "\n\n`span_kept`: answerable questions whose gold "
        "answer is still in what the model reads; `chars_kept`: characters read over characters given; `fell_back`: "
        "questions where an LLM compressor's reply could not be read or kept nothing, so the passages stood whole."
    )
