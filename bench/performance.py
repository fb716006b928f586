"""`make bench`: speed on this machine, as medians and p95 over repeated runs, beside LlamaIndex's stock pieces.

    python -m bench.performance [--repeats 3] [--ingest-docs 300]

Measured in one run: peak memory of `ragrouter ask`; route decision time (ours vs the stock embedding and LLM
selectors, same tools); end-to-end time and time to the answer's first token per question kind on the demo
sources (ours, streaming to a listener, vs `RouterQueryEngine.from_defaults` over stock streaming query engines on
the same stores); retrieval stage times; ingest throughput on the first N SciFact abstracts (ours: chunk + e5 + BM25 into Milvus Lite; stock:
`VectorStoreIndex.from_documents` into a dense-only Milvus Lite collection); the SQL path's stages (knowledge
retrieval, generation and guarded run, repairs, answer). Writes bench/results.json.
Needs `make ingest` and `make eval-ingest` first (the Makefile's `bench` target does both).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import engines  # noqa: F401  (offline, one thread)
from engines.routing.router import RagRouter
from engines.settings import DATA_DIR, Settings
from evals.datasets import EVAL_DIR, load_questions, retrieval_questions, stratified
from evals.metrics import latency
from tools.build import build_router

RESULTS = Path(__file__).resolve().parent / "results.json"
# Three different questions per kind: repeating one question would time llama.cpp's prompt cache, not the path.
DEMO_QUESTIONS = {
    "documents (en)": [
        "How many days per week can I work remotely?",
        "How many days of annual leave do new employees get?",
        "What is the overtime rule now?",
    ],
    "documents (zh)": ["国内出差每天的餐补是多少？", "新员工有多少天年假？", "每周可以远程办公几天？"],
    "sql (en)": ["How many customers are older than 30?", "What is the most expensive product?", "How many orders were placed in total?"],
    "sql (zh)": ["年龄大于30的客户有多少？", "最贵的商品是什么？", "一共有多少个订单？"],
}


def stats(values: list[float]) -> dict[str, float]:
    return {**latency(values), "n": len(values)}


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - start)


def peak_memory_of_ask() -> dict:
    """Max resident set of one `ragrouter ask` process (model, embeddings, Milvus client, answer), in MiB."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ui.cli", "ask", DEMO_QUESTIONS["sql (en)"][0], "--json"], check=True, capture_output=True)
    wall = time.perf_counter() - start
    return {"peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1), "wall_s": round(wall, 1)}


def route_times(router: RagRouter, repeats: int) -> dict:
    from llama_index.core.selectors import EmbeddingSingleSelector, LLMSingleSelector

    from evals.router_suite import decide

    questions = [q["question"] for q in stratified(load_questions("router", "dev", None)[0], 50, "group")]
    choices = [t.tool.metadata for t in router.tools]
    selectors = {
        "ragrouter": (router.selector, questions * repeats),
        "stock EmbeddingSingleSelector": (EmbeddingSingleSelector.from_defaults(embed_model=router.embed), questions[:20]),
        "stock LLMSingleSelector": (LLMSingleSelector.from_defaults(llm=router.llm), questions[:10]),
    }
    # A stock selector's unparsable output still took its time: decide times every decision, failed or not.
    return {name: stats([decide(sel, choices, q)["ms"] for q in qs]) for name, (sel, qs) in selectors.items()}


def _stock_router(router: RagRouter):
    """The stock pieces over the same stores, streaming their answers as ours does."""
    from llama_index.core import SQLDatabase
    from llama_index.core.query_engine import NLSQLTableQueryEngine, RouterQueryEngine
    from llama_index.core.tools import QueryEngineTool

    tools = []
    for t in router.tools:
        if t.index is not None:
            engine = t.index.as_query_engine(llm=router.llm, streaming=True)
        elif t.database is not None:
            engine = NLSQLTableQueryEngine(sql_database=SQLDatabase(t.database.engine), llm=router.llm, streaming=True)
        else:
            continue  # no network here: the web path is left out of both
        tools.append(QueryEngineTool.from_defaults(engine, name=t.source.name, description=t.tool.metadata.description))
    return RouterQueryEngine.from_defaults(query_engine_tools=tools, llm=router.llm)


class _Unseen:
    """A listener with no page to write on: only the first token's time matters here."""

    def begin(self) -> None: ...

    def token(self, delta: str) -> None: ...

    def withdraw(self, message: str) -> None: ...


def _ours(router: RagRouter, question: str) -> tuple[float, float]:
    """ms to the first token and to the whole answer (an answer no model wrote arrives whole)."""
    times = router.ask(question, listener=_Unseen()).timings_ms
    return times.get("first_token", times["total"]), times["total"]


def _stock(stock, question: str) -> tuple[float, float, bool]:
    """ms to the first token and to the whole answer, and whether the stock router crashed (its selector's
    malformed output; the time still counts)."""
    start, first = time.perf_counter(), None
    try:
        for _ in stock.query(question).response_gen:
            first = first or 1000 * (time.perf_counter() - start)
    except Exception:
        return 1000 * (time.perf_counter() - start), 1000 * (time.perf_counter() - start), True
    total = 1000 * (time.perf_counter() - start)
    return first or total, total, False


def answer_times(router: RagRouter) -> dict:
    stock = _stock_router(router)
    results = {}
    for kind, questions in DEMO_QUESTIONS.items():
        ours = [_ours(router, q) for q in questions]
        base = [_stock(stock, q) for q in questions]
        results[kind] = {
            "ragrouter": stats([t for _, t in ours]),
            "stock RouterQueryEngine": {**stats([t for _, t, _ in base]), "failed": sum(f for *_, f in base)},
            "first token": {"ragrouter": stats([f for f, _ in ours]), "stock RouterQueryEngine": stats([f for f, *_ in base])},
        }
    return results


def sql_stage_times(demo: RagRouter, reference: RagRouter) -> dict:
    """Per SQL question: knowledge retrieval, first SQL (generation + guarded run), repairs, answer sentence, total.

    Over the demo shop's six questions and 20 Spider dev questions (round-robin over their databases).
    """
    spider = [q for q in load_questions("sql", "dev", None)[0] if q["set"] == "spider"]
    asked = [(demo.tool("shop"), q) for qs in (DEMO_QUESTIONS["sql (en)"], DEMO_QUESTIONS["sql (zh)"]) for q in qs]
    asked += [(reference.tool(q["db"]), q["question"]) for q in stratified(spider, 20, "db")]
    records = []
    for tool, question in asked:
        start = time.perf_counter()
        metadata = tool.tool.query_engine.query(question).metadata
        records.append({**metadata["timings_ms"], "total": 1000 * (time.perf_counter() - start), "attempts": len(metadata["attempts"])})
    stages = {stage: stats([r[stage] for r in records]) for stage in ("knowledge", "first_attempt", "repairs", "answer", "total")}
    return {**stages, "questions_repaired": sum(r["attempts"] > 1 for r in records)}


def stage_times(router: RagRouter) -> dict:
    from evals.retrieval_suite import StageRunner

    runner = StageRunner(router)
    indexed = {t.source.name for t in router.tools if t.index is not None}
    questions = [q for q in retrieval_questions(EVAL_DIR, "dev") if q["source"] in indexed]
    records = [runner.measure(q) for q in stratified(questions, 30, "source")]
    stages = {stage: stats([r["ms"][stage] for r in records]) for stage in records[0]["ms"]}
    stages["compress"] = stats([r["compress_ms"] for r in records])
    return stages


def ingest_throughput(router: RagRouter, docs: int) -> dict:
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.vector_stores.milvus import MilvusVectorStore

    from engines.documents.store import IngestReport, ingest_documents, load_documents
    from engines.milvus import LITE_GRPC_OPTIONS
    from engines.models.embeddings import embedding_dim
    from engines.sources import load_sources

    scifact = next(s for s in load_sources(DATA_DIR / "eval-sources.yaml") if s.name == "scifact")
    documents = load_documents(scifact, IngestReport(scifact.name))[:docs]
    with tempfile.TemporaryDirectory() as tmp:
        settings = router.settings.model_copy(update={"state_dir": Path(tmp), "milvus_uri": str(Path(tmp) / "ours.db")})
        ours = timed(lambda: ingest_documents(scifact, settings, router.embed, documents)) / 1000
        # Milvus Lite answers idle keepalive pings with GOAWAY; a full SciFact run leaves the store idle for minutes.
        store = MilvusVectorStore(
            uri=str(Path(tmp) / "stock.db"), collection_name="stock", dim=embedding_dim(router.embed), overwrite=True, grpc_options=LITE_GRPC_OPTIONS
        )
        storage = StorageContext.from_defaults(vector_store=store)
        stock = timed(lambda: VectorStoreIndex.from_documents(documents, storage_context=storage, embed_model=router.embed)) / 1000
    return {
        "documents": docs,
        "ragrouter": {"total_s": round(ours, 1), "docs_per_s": round(docs / ours, 2)},
        "stock VectorStoreIndex.from_documents": {"total_s": round(stock, 1), "docs_per_s": round(docs / stock, 2)},
    }


def _row(what: str, ours: dict, base: dict | None) -> str:
    ratio = f"{ours['median_ms'] / base['median_ms']:.3f}" if base else "–"
    stock = f"{base['median_ms']:,.1f} / {base['p95_ms']:,.1f}" if base else "–"
    return f"| {what} | {ours['median_ms']:,.1f} / {ours['p95_ms']:,.1f} | {stock} | {ratio} |"


def markdown(results: dict) -> str:
    """The performance table (docs/experiments/performance.md): ms as median / p95, ours beside the stock piece, ours / stock."""
    route = results["route"]
    rows = ["| measurement | ragrouter (median / p95 ms) | stock (median / p95 ms) | ours / stock |", "|---|---|---|---|"]
    rows.append(_row("route decision vs EmbeddingSingleSelector", route["ragrouter"], route["stock EmbeddingSingleSelector"]))
    rows.append(_row("route decision vs LLMSingleSelector", route["ragrouter"], route["stock LLMSingleSelector"]))
    for kind, pair in results["answer"].items():
        rows.append(_row(f"answer, {kind}", pair["ragrouter"], pair["stock RouterQueryEngine"]))
        first = pair["first token"]
        rows.append(_row(f"first token of the answer, {kind}", first["ragrouter"], first["stock RouterQueryEngine"]))
    for stage, s in results["retrieval_stages"].items():
        rows.append(_row(f"retrieval stage: {stage}", s, results["retrieval_stages"]["dense"] if stage == "hybrid" else None))
    for stage, s in results.get("sql_stages", {}).items():
        if isinstance(s, dict):
            rows.append(_row(f"SQL question stage: {stage}", s, None))
    ingest = results["ingest"]
    ours, stock = ingest["ragrouter"], ingest["stock VectorStoreIndex.from_documents"]
    rows.append(
        f"| ingest {ingest['documents']} SciFact abstracts | {ours['total_s']} s ({ours['docs_per_s']} docs/s) | "
        f"{stock['total_s']} s ({stock['docs_per_s']} docs/s) | {ours['total_s'] / stock['total_s']:.2f} |"
    )
    memory = results["ask_peak_memory"]
    rows.append(f"| `ragrouter ask` peak memory | {memory['peak_rss_mib']:,.0f} MiB ({memory['wall_s']} s wall) | – | – |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ingest-docs", type=int, default=300)
    parser.add_argument("--steps", nargs="*", help="rerun only these sections into the existing results.json")
    args = parser.parse_args()
    results: dict = json.loads(RESULTS.read_text()) if args.steps else {}
    results.update({"machine": f"{sys.platform}, {len(os.sched_getaffinity(0))} cores", "repeats": args.repeats})
    if not args.steps or "ask_peak_memory" in args.steps:
        results["ask_peak_memory"] = peak_memory_of_ask()  # first: a second process cannot open Milvus Lite while we hold it
    demo = build_router(Settings(), DATA_DIR / "sources.yaml")
    reference = build_router(Settings(), DATA_DIR / "eval-sources.yaml", llm=demo.llm, embed=demo.embed)
    steps = {
        "route": lambda: route_times(reference, args.repeats),
        "answer": lambda: answer_times(demo),
        "retrieval_stages": lambda: stage_times(reference),
        "sql_stages": lambda: sql_stage_times(demo, reference),
        "ingest": lambda: ingest_throughput(reference, args.ingest_docs),
    }
    for name, step in steps.items():
        if args.steps and name not in args.steps:
            continue
        results[name] = step()
        RESULTS.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")  # kept if a later step fails
    print(markdown(results))


if __name__ == "__main__":
    main()
