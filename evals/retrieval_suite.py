"""Retrieval suite: ranking quality of each documents-path stage, ours beside stock dense retrieval.

Stages over the same ingested collection: dense (LlamaIndex's `as_retriever()`, the baseline), BM25 (Milvus's
built-in function), hybrid (RRF of both; what ragrouter retrieves), + rerank (ColbertRerank over the first
`top_k`), and compression (SentenceEmbeddingOptimizer over the `answer_top_n` passages the model reads:
how many context tokens it removes and, where the answer span is known, whether the answer survives).
Chunks map to their document (`doc_id`) and a document counts at its best chunk.

With Corrective RAG on (`RAGROUTER_CRAG=true`), each of its rewrites (HyDE, multi-query, step-back) is also
measured against the question as asked, on the hybrid retrieval of `top_k` passages CRAG grades: the rewrites
are only worth their LLM call where they retrieve better, which the answers suite (a handful of given passages
per question) cannot show.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from engines.crag.rewrites import REWRITES
from engines.documents.compression import SafeSentenceOptimizer
from engines.documents.engine import uses_rerank
from engines.documents.fusion import fusing
from engines.documents.llm_rerank import SafeLLMRerank
from engines.documents.structured_rewrite import StructuredRewriteRetriever
from engines.routing.router import RagRouter
from engines.tracing.recorder import recording
from evals.datasets import EvalDataError
from evals.metrics import mrr_at, ndcg_at, recall_at
from evals.report import Report
from evals.runlog import RunLog
from tools.build import built, built_sources

DEPTH = 200  # chunks fetched per stage, enough for recall@100 over documents
STAGES = ("dense", "bm25", "hybrid", "hybrid+rerank")
LLM_RERANK = "hybrid+llm rerank"  # a stage of its own with `RAGROUTER_RERANK=llm`: one model call per question
# With `RAGROUTER_REWRITE=structured`: hybrid search with the model's rewrite, and with its fallback to the question.
REWRITTEN, REWRITTEN_WITH_FALLBACK = "hybrid, rewritten", "hybrid, rewritten with fallback"
ASKED = "asked"
REWRITES_SYSTEM = "CRAG rewrites"
METRICS = {
    "ndcg@10": lambda r, rel: ndcg_at(r, rel, 10),
    "recall@5": lambda r, rel: recall_at(r, rel, 5),
    "recall@10": lambda r, rel: recall_at(r, rel, 10),
    "recall@100": lambda r, rel: recall_at(r, rel, 100),
    "mrr@10": lambda r, rel: mrr_at(r, rel, 10),
}


def documents_of(nodes: list[NodeWithScore]) -> list[str]:
    seen: dict[str, None] = {}
    for n in nodes:
        seen.setdefault(str(n.node.metadata.get("doc_id") or n.node.ref_doc_id), None)
    return list(seen)[:100]


def _bm25(index: VectorStoreIndex, question: str) -> list[NodeWithScore]:
    """Milvus's BM25 function queried directly: LlamaIndex's `text_search` mode sends drop_ratio_search, which Milvus Lite rejects."""
    store = index.vector_store
    hits = store.client.search(
        store.collection_name,
        data=[question],
        anns_field=store.sparse_embedding_field,
        limit=DEPTH,
        output_fields=["doc_id"],
        search_params={"metric_type": "BM25"},
    )[0]
    return [NodeWithScore(node=TextNode(id_=str(h["id"]), metadata={"doc_id": h["entity"].get("doc_id")}), score=h["distance"]) for h in hits]


def _timed(fn: Callable[[], list[NodeWithScore]]) -> tuple[list[NodeWithScore], float]:
    start = time.perf_counter()
    nodes = fn()
    return nodes, round(1000 * (time.perf_counter() - start), 1)


def _timed_value(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, round(1000 * (time.perf_counter() - start), 1)


def _chars(nodes: list[NodeWithScore]) -> int:
    return sum(len(n.node.get_content()) for n in nodes)


class StageRunner:
    """Runs every stage for one question on one source's index."""

    def __init__(self, router: RagRouter) -> None:
        self.router = router
        self.settings = router.settings
        self.compressor = SafeSentenceOptimizer(router.embed, self.settings.compress_percentile_cutoff)
        self._reranker = None
        self.stages = (*STAGES, LLM_RERANK) if self.settings.rerank == "llm" else STAGES
        if self.settings.rewrite == "structured":
            self.stages = (*self.stages, REWRITTEN, REWRITTEN_WITH_FALLBACK)

    def reranker(self):
        if self._reranker is None:
            from engines.documents.rerank import build_reranker  # imports torch, so only when the stage runs

            self._reranker = build_reranker(self.settings.model_copy(update={"answer_top_n": self.settings.top_k}))
        return self._reranker

    def measure(self, item: dict) -> dict:
        tool = built(self.router, item["source"])
        index, question = tool.index, item["question"]
        dense, dense_ms = _timed(lambda: index.as_retriever(similarity_top_k=DEPTH).retrieve(question))
        bm25, bm25_ms = _timed(lambda: _bm25(index, question))
        hybrid, hybrid_ms = _timed(lambda: index.as_retriever(similarity_top_k=DEPTH, vector_store_query_mode="hybrid").retrieve(question))
        head = [NodeWithScore(node=n.node, score=n.score) for n in hybrid[: self.settings.top_k]]
        reranked, rerank_ms = _timed(lambda: self.reranker().postprocess_nodes(head, QueryBundle(question)))
        ours = reranked if uses_rerank(self.settings, tool.source.language) else hybrid
        record = {
            "ranked": {
                "dense": documents_of(dense),
                "bm25": documents_of(bm25),
                "hybrid": documents_of(hybrid),
                "hybrid+rerank": documents_of(reranked + hybrid[self.settings.top_k :]),
            },
            "ours_stage": "hybrid+rerank" if ours is reranked else "hybrid",
            "ms": {"dense": dense_ms, "bm25": bm25_ms, "hybrid": hybrid_ms, "rerank": rerank_ms},
        }
        if LLM_RERANK in self.stages:
            ours = self._llm_rerank(record, head, hybrid, question)
        if REWRITTEN in self.stages:
            self._structured_rewrite(record, index, hybrid, question)
        return {**record, **self._compression(ours[: self.settings.answer_top_n], question, item.get("answer"))}

    def _structured_rewrite(self, record: dict, index, hybrid: list[NodeWithScore], question: str) -> None:
        """The question rewritten (as searched), and with the fallback to the question as asked; which guard fired."""
        retriever = StructuredRewriteRetriever(
            index.as_retriever(similarity_top_k=DEPTH, vector_store_query_mode="hybrid"), self.router.llm, self.router.embed, DEPTH
        )
        with recording() as clock:
            (structured, ms) = _timed_value(lambda: retriever.rewrite(question))
        if structured is None:
            guard = "short" if any("is short" in n for n in clock.notes) else "unreadable"
            rewritten = chosen = hybrid
        else:
            rewritten = retriever.search(structured)
            guard = "kept" if retriever.useful(question, rewritten, hybrid) else "fell back"
            chosen = rewritten if guard == "kept" else hybrid
        record["ranked"][REWRITTEN], record["ranked"][REWRITTEN_WITH_FALLBACK] = documents_of(rewritten), documents_of(chosen)
        record["rewrite_guard"], record["ms"]["structured rewrite"] = guard, ms
        record["rewrite"] = structured.model_dump() if structured else None

    def _llm_rerank(self, record: dict, head: list[NodeWithScore], hybrid: list[NodeWithScore], question: str) -> list[NodeWithScore]:
        """The passages the model lists first, then those it left out in retrieval order (LLMRerank drops them;
        a ranking keeps them for recall); its time and model calls go into the record."""
        reranker = SafeLLMRerank(llm=self.router.llm, top_n=self.settings.top_k, choice_batch_size=self.settings.top_k)
        with recording() as clock:
            listed, ms = _timed(lambda: reranker.postprocess_nodes([NodeWithScore(node=n.node, score=n.score) for n in head], QueryBundle(question)))
        kept = {n.node.node_id for n in listed}
        ranked = listed + [n for n in head if n.node.node_id not in kept]
        record["ranked"][LLM_RERANK] = documents_of(ranked + hybrid[self.settings.top_k :])
        record["ours_stage"], record["ms"]["llm rerank"], record["llm_rerank_calls"] = LLM_RERANK, ms, clock.llm_calls
        record["llm_rerank_fell_back"] = any(n.endswith("the retrieval order stands") for n in clock.notes)
        return ranked

    def _compression(self, nodes: list[NodeWithScore], question: str, answer: str | None) -> dict:
        copies = [NodeWithScore(node=TextNode(text=n.node.get_content(), metadata=dict(n.node.metadata)), score=n.score) for n in nodes]
        before = _chars(copies)
        kept_before = bool(answer) and any(answer in n.node.get_content() for n in copies)
        compressed, ms = _timed(lambda: self.compressor.postprocess_nodes(copies, QueryBundle(question)))
        result = {"context_chars": before, "compressed_chars": _chars(compressed), "compress_ms": ms}
        if answer and kept_before:
            result["answer_kept"] = any(answer in n.node.get_content() for n in compressed)
        return result


def measure_rewrites(router: RagRouter, item: dict) -> dict:
    """The documents of the top_k hybrid retrieval for the question as asked and for each rewrite of it."""
    k, question = router.settings.top_k, item["question"]
    retriever = built(router, item["source"]).index.as_retriever(similarity_top_k=k, vector_store_query_mode="hybrid")
    record: dict = {"ranked": {}, "ms": {}, "queries": {}}
    for kind, rewrite in {ASKED: None, **REWRITES}.items():
        start = time.perf_counter()
        queries = rewrite(question, router.llm) if rewrite else [QueryBundle(question)]
        record["ranked"][kind] = documents_of(fusing(retriever, queries, k, router.llm).retrieve(queries[0]))
        record["ms"][kind] = round(1000 * (time.perf_counter() - start), 1)
        record["queries"][kind] = [q.query_str for q in queries]
    return record


def _rewrites_section(report: Report, records: list[dict], items: list[dict], top_k: int) -> None:
    rows = [f"| source | query | nDCG@10 | recall@{top_k} | better than asked | worse | median ms |", "|---|---|---|---|---|---|---|"]
    summary: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for source in dict.fromkeys(q["source"] for q in items):
        pairs = [(r, q) for r, q in zip(records, items) if q["source"] == source]
        ndcg = {kind: [ndcg_at(r["ranked"][kind], q["relevant"], 10) for r, q in pairs] for kind in pairs[0][0]["ranked"]}
        for kind, scores in ndcg.items():
            recall = float(np.mean([recall_at(r["ranked"][kind], q["relevant"], top_k) for r, q in pairs]))
            better = sum(a > b for a, b in zip(scores, ndcg[ASKED]))
            worse = sum(a < b for a, b in zip(scores, ndcg[ASKED]))
            summary[source][kind] = {
                "ndcg@10": round(float(np.mean(scores)), 4),
                f"recall@{top_k}": round(recall, 4),
                "better": better,
                "worse": worse,
            }
            median = float(np.median([r["ms"][kind] for r, _ in pairs]))
            rows.append(f"| {source} | {kind} | {np.mean(scores):.3f} | {recall:.3f} | {better} | {worse} | {median:.0f} |")
    report.detail("rewrites", summary)
    report.section(f"## Corrective RAG's rewrites against the question as asked (hybrid, top {top_k})\n\n" + "\n".join(rows))


def _stage_metrics(records: list[dict], items: list[dict], stage: Callable[[dict], str]) -> dict[str, float]:
    return {
        name: round(float(np.mean([fn(r["ranked"][stage(r)], q["relevant"]) for r, q in zip(records, items)])), 4) for name, fn in METRICS.items()
    }


def _compression_summary(records: list[dict]) -> dict:
    removed = [1 - r["compressed_chars"] / r["context_chars"] for r in records if r["context_chars"]]
    kept = [r["answer_kept"] for r in records if "answer_kept" in r]
    return {
        "context_removed": round(float(np.mean(removed)), 4) if removed else None,
        "answer_kept": round(float(np.mean(kept)), 4) if kept else None,
        "answer_kept_n": len(kept),
        "compress_median_ms": round(float(np.median([r["compress_ms"] for r in records])), 1),
    }


def _bars(report: Report, per_source: dict[str, dict[str, dict[str, float]]]) -> None:
    fig, axes = plt.subplots(1, len(per_source), figsize=(5 * len(per_source), 3.5), squeeze=False)
    for ax, (source, stages) in zip(axes[0], per_source.items()):
        names = list(stages)
        ax.bar(range(len(names)), [stages[s]["ndcg@10"] for s in names], color="tab:blue")
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(f"{source}: nDCG@10 per stage")
    report.figure("retrieval_stages.png", fig)


def run_retrieval_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    names = {t.source.name: t for t in built_sources(router)}
    wrong = sorted(s for s in {q["source"] for q in items} if s not in names or names[s].index is None)
    if wrong:
        raise EvalDataError(f"the questions name sources that are not document sources in the sources file: {', '.join(wrong)}")
    runner = StageRunner(router)
    keyed = [(f"{i}:{q['source']}:{q['question']}", q) for i, q in enumerate(items)]
    records = log.run("stages", keyed, runner.measure)
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(items):
        by_source[q["source"]].append(i)
    per_source = {
        source: {stage: _stage_metrics([records[i] for i in idx], [items[i] for i in idx], lambda r, s=stage: s) for stage in runner.stages}
        for source, idx in by_source.items()
    }
    ours = _stage_metrics(records, items, lambda r: r["ours_stage"])
    base = _stage_metrics(records, items, lambda r: "dense")
    compression = _compression_summary(records)
    report.headline(
        {"ndcg@10": ours["ndcg@10"], "recall@10": ours["recall@10"], "mrr@10": ours["mrr@10"]},
        {"ndcg@10": base["ndcg@10"], "recall@10": base["recall@10"], "mrr@10": base["mrr@10"]},
        "stock dense as_retriever()",
    )
    timings = {k: round(float(np.median([r["ms"][k] for r in records])), 1) for k in records[0]["ms"]}
    report.detail("per_source", per_source)
    report.detail("compression", compression)
    report.detail("stage_median_ms", timings)
    rows = ["| source | stage | " + " | ".join(METRICS) + " |", "|---" * (len(METRICS) + 2) + "|"]
    for source, stages in per_source.items():
        for stage, m in stages.items():
            rows.append(f"| {source} | {stage} | " + " | ".join(f"{m[k]:.3f}" for k in METRICS) + " |")
    report.section("## Every stage on the same questions\n\n" + "\n".join(rows))
    report.section(
        f"## Compression of the {router.settings.answer_top_n} passages the model reads\n\n"
        f"Context removed: {compression['context_removed']}; answer span still present (CMRC2018, where known): "
        f"{compression['answer_kept']} of {compression['answer_kept_n']}; median {compression['compress_median_ms']} ms.\n\n"
        f"Median ms per stage: {timings}."
    )
    if REWRITTEN in runner.stages:
        guards = {g: sum(1 for r in records if r["rewrite_guard"] == g) for g in ("kept", "fell back", "short", "unreadable")}
        report.detail("structured_rewrite", {"guards": guards, "median_ms": timings["structured rewrite"]})
        report.section(
            f"Structured rewrite: of {len(records)} questions, the rewrite was kept for {guards['kept']}, fell back to the question "
            f"as asked for {guards['fell back']} (nothing as close), was not written for {guards['short']} (short) and could not "
            f"be read for {guards['unreadable']}; {timings['structured rewrite']:,.0f} ms median for the model's rewrite."
        )
    if LLM_RERANK in runner.stages:
        calls = [r["llm_rerank_calls"] for r in records]
        fell_back = float(np.mean([r["llm_rerank_fell_back"] for r in records]))
        report.detail("llm_rerank", {"model_calls_median": float(np.median(calls)), "fell_back": round(fell_back, 4)})
        report.section(
            f"LLM rerank: {np.median(calls):.0f} model call(s) per question (median), {timings['llm rerank']:,.0f} ms median; "
            f"its reply ranked nothing, so the retrieval order stood, for {fell_back:.1%} of questions."
        )
    _bars(report, per_source)
    if router.settings.crag:
        _rewrites_section(report, log.run(REWRITES_SYSTEM, keyed, lambda q: measure_rewrites(router, q)), items, router.settings.top_k)
