"""`make bench`: speed on this machine, ours beside LlamaIndex's stock pieces on the same model, in one run.

    python -m bench.performance [--questions 20] [--ingest-docs 300] [--steps sql documents ...]

Per path, at least 20 questions, each answered by ours and by the stock engine in turn, on the same stores and
the same model, with the model's evaluation emptied before each (nothing carries over from the question before,
except what ours keeps on purpose: evaluated schemas, engines/models/prompt_states.py):
- sql: the demo shop's six questions and Spider dev questions (round-robin over databases); ours end to end
  (query, rows, answer) against `NLSQLTableQueryEngine` (query, then a sentence), both streaming;
- documents: the demo handbook's six questions and retrieval dev questions (SciFact, CMRC2018); ours against
  `VectorStoreIndex.as_query_engine`, both streaming; then ours again with Corrective RAG on;
- route: the decision alone, ours against the stock embedding and LLM selectors;
- tracing: ours on the sql and documents questions with RAGROUTER_OTEL=file against export off;
- decoding: prompt-lookup speculative decoding (`LlamaPromptLookupDecoding`) against plain decoding, on SQL
  and extractive prompts: generated tokens per second, and whether the text is the same;
- ingest: the first N SciFact abstracts, ours against `VectorStoreIndex.from_documents`, and the embedding model
  alone on the same chunks (the physical limit);
- memory: peak RSS of `ragrouter chat` with every model loaded (a SQL question, a follow-up, a question answered
  with Corrective RAG).
Medians, p95, time to first token, prompt tokens evaluated, ratios ours / stock; writes bench/results.json and
prints the table. A benchmark, never a timed test. Needs `make ingest` and `make eval-ingest` (the target runs both).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import engines  # noqa: F401  (offline, one thread)
from bench.decoding import decoding_speed
from bench.ingest import ingest_throughput
from engines.routing.router import RagRouter
from engines.settings import DATA_DIR, Settings
from engines.tracing.export import start_export, stop_export
from engines.tracing.recorder import recording
from evals.datasets import EVAL_DIR, load_questions, retrieval_questions, stratified
from evals.metrics import latency
from tools.build import BuiltSource, build_router, built, built_sources

RESULTS = Path(__file__).resolve().parent / "results.json"
DEMO_SQL = [
    "How many customers are older than 30?",
    "What is the most expensive product?",
    "How many orders were placed in total?",
    "年龄大于30的客户有多少？",
    "最贵的商品是什么？",
    "一共有多少个订单？",
]
DEMO_DOCUMENTS = [
    "How many days per week can I work remotely?",
    "How many days of annual leave do new employees get?",
    "What is the overtime rule now?",
    "国内出差每天的餐补是多少？",
    "新员工有多少天年假？",
    "每周可以远程办公几天？",
]
# What `ragrouter chat` is asked for the memory figure: every model gets loaded (the condense context at the follow-up).
CHAT_SCRIPT = "How many customers are older than 30?\nand how many are older than 40?\nHow many days of annual leave do new employees get?\n"
Asked = tuple[RagRouter, str, str]  # the router that holds the source, the source, the question


class _Unseen:
    """A listener with no page to write on: only the first token's time matters here."""

    def begin(self) -> None: ...

    def token(self, delta: str) -> None: ...

    def withdraw(self, message: str) -> None: ...

    def rows(self, sql: str, columns: list[str], rows: list[tuple]) -> None: ...


def _cold(router: RagRouter) -> None:
    """The model's evaluation emptied: the next prompt is read from its first token."""
    router.llm._model.reset()


def _ours(router: RagRouter, source: str, question: str) -> dict:
    _cold(router)
    trace = router.ask(question, source=source, listener=_Unseen())
    times = trace.timings_ms
    return {
        "ms": times["total"],
        "first_token_ms": times.get("first_token", times["total"]),
        "prompt_tokens": sum(c.prompt_tokens for c in trace.model_calls),
        "prompt_tokens_evaluated": sum(c.prompt_tokens_evaluated for c in trace.model_calls),
        "model_calls": len(trace.model_calls),
    }


def _stock(router: RagRouter, engine, question: str) -> dict:
    """The stock engine's streamed answer, metered like ours, without our kept prompts."""
    _cold(router)
    start, first = time.perf_counter(), None
    with recording() as clock, router.llm.prompt_states_set_aside():
        try:
            for _ in engine.query(question).response_gen:
                first = first or 1000 * (time.perf_counter() - start)
            failed = False
        except Exception:  # the stock engine's own failure (a query that does not run): its time still counts
            failed = True
    total = 1000 * (time.perf_counter() - start)
    return {
        "ms": round(total, 1),
        "first_token_ms": round(first or total, 1),
        "prompt_tokens": sum(c.prompt_tokens for c in clock.model_calls),
        "prompt_tokens_evaluated": sum(c.prompt_tokens_evaluated for c in clock.model_calls),
        "model_calls": len(clock.model_calls),
        "failed": failed,
    }


def summary(records: list[dict]) -> dict:
    def median(key: str) -> float:
        return float(sorted(r[key] for r in records)[len(records) // 2])

    return {
        **latency(r["ms"] for r in records),
        "first_token": latency(r["first_token_ms"] for r in records),
        "prompt_tokens_evaluated_median": median("prompt_tokens_evaluated"),
        "prompt_tokens_median": median("prompt_tokens"),
        "model_calls_median": median("model_calls"),
        "failed": sum(r.get("failed", False) for r in records),
        "n": len(records),
    }


def _stock_sql(tool: BuiltSource, router: RagRouter):
    from llama_index.core import SQLDatabase
    from llama_index.core.query_engine import NLSQLTableQueryEngine

    return NLSQLTableQueryEngine(sql_database=SQLDatabase(tool.database.engine), llm=router.llm, streaming=True)


def _stock_documents(tool: BuiltSource, router: RagRouter):
    return tool.index.as_query_engine(llm=router.llm, streaming=True)


def compare(asked: list[Asked], stock_engine: Callable[[BuiltSource, RagRouter], object]) -> dict:
    """Each question by ours, then by the stock engine; both summaries and the ratio of their medians."""
    stock_engines: dict[str, object] = {}
    ours, stock = [], []
    for router, source, question in asked:
        ours.append(_ours(router, source, question))
        engine = stock_engines.setdefault(source, stock_engine(built(router, source), router))
        stock.append(_stock(router, engine, question))
    mine, theirs = summary(ours), summary(stock)
    return {"ragrouter": mine, "stock": theirs, "ratio": round(mine["median_ms"] / theirs["median_ms"], 3)}


def corrective(asked: list[Asked], crag_routers: dict[int, RagRouter]) -> dict:
    """Ours with Corrective RAG on (the router of the same sources with `crag`), on the same questions."""
    return summary([_ours(crag_routers[id(router)], source, question) for router, source, question in asked])


def export_overhead(asked: list[Asked], settings: Settings) -> dict:
    """Ours on the same questions with tracing export off and on to a file (RAGROUTER_OTEL=file, in the state
    folder), in alternating passes (off, file, off, file), so the machine's drift and the kept prompt states
    favour neither; the ratio of the pooled medians, and the geometric mean of each question's own ratio."""
    passes: list[tuple[str, list[dict]]] = [("off", []), ("file", []), ("off", []), ("file", [])]
    for mode, records in passes:
        if mode == "file":
            start_export(settings.model_copy(update={"otel": "file"}))
        records.extend(_ours(router, source, question) for router, source, question in asked)
        if mode == "file":
            stop_export()
    pooled = {mode: [r for m, records in passes if m == mode for r in records] for mode in ("off", "file")}
    off, exported = summary(pooled["off"]), summary(pooled["file"])
    halves = {mode: [[r["ms"] for r in records] for m, records in passes if m == mode] for mode in ("off", "file")}
    paired = [math.log((f1 + f2) / (o1 + o2)) for o1, o2, f1, f2 in zip(*halves["off"], *halves["file"])]
    return {
        "off": off,
        "file": exported,
        "ratio": round(exported["median_ms"] / off["median_ms"], 3),
        "paired_ratio": round(math.exp(sum(paired) / len(paired)), 3),
    }


def sql_questions(demo: RagRouter, reference: RagRouter, n: int) -> list[Asked]:
    spider = [q for q in load_questions("sql", "dev", None)[0] if q["set"] == "spider"]
    asked = [(demo, "shop", q) for q in DEMO_SQL]
    return asked + [(reference, q["db"], q["question"]) for q in stratified(spider, n - len(asked), "db")]


def documents_questions(demo: RagRouter, reference: RagRouter, n: int) -> list[Asked]:
    indexed = {t.source.name for t in built_sources(reference) if t.index is not None}
    dev = [q for q in retrieval_questions(EVAL_DIR, "dev") if q["source"] in indexed]
    asked = [(demo, "handbook", q) for q in DEMO_DOCUMENTS]
    return asked + [(reference, q["source"], q["question"]) for q in stratified(dev, n - len(asked), "source")]


def route_times(router: RagRouter, repeats: int) -> dict:
    from llama_index.core.selectors import EmbeddingSingleSelector, LLMSingleSelector

    from evals.router_suite import decide

    questions = [q["question"] for q in stratified(load_questions("router", "dev", None)[0], 50, "group")]
    choices = [t.tool.metadata for t in router.tools]
    selectors = {
        "ragrouter": (router.selector, questions * repeats),
        "stock EmbeddingSingleSelector": (EmbeddingSingleSelector.from_defaults(embed_model=router.embed), questions[:20]),
        "stock LLMSingleSelector": (LLMSingleSelector.from_defaults(llm=router.llm), questions[:20]),
    }
    # A stock selector's unparsable output still took its time: decide times every decision, failed or not.
    return {name: {**latency(decide(sel, choices, q)["ms"] for q in qs), "n": len(qs)} for name, (sel, qs) in selectors.items()}


def peak_memory() -> dict:
    """Max resident set of `ragrouter chat` with every model loaded, in MiB."""
    start = time.perf_counter()
    env = {**os.environ, "RAGROUTER_CRAG": "true"}
    subprocess.run([sys.executable, "-m", "ui.cli", "chat"], input=CHAT_SCRIPT, text=True, check=True, capture_output=True, env=env)
    return {"peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1), "wall_s": round(time.perf_counter() - start, 1)}


def _ratio_row(what: str, ours: dict, stock: dict, key: str = "median_ms") -> str:
    return f"| {what} | {ours[key]:,.0f} / {ours['p95_ms']:,.0f} | {stock[key]:,.0f} / {stock['p95_ms']:,.0f} | {ours[key] / stock[key]:.2f} |"


def markdown(results: dict) -> str:
    """The table: ms as median / p95, ours beside the stock piece, ours / stock."""
    rows = ["| measurement | ragrouter (median / p95) | stock (median / p95) | ours / stock |", "|---|---|---|---|"]
    for path in ("sql", "documents"):
        if path in results:
            pair = results[path]
            rows.append(_ratio_row(f"{path}: answer, ms ({pair['ragrouter']['n']} questions)", pair["ragrouter"], pair["stock"]))
            rows.append(_ratio_row(f"{path}: first token, ms", pair["ragrouter"]["first_token"], pair["stock"]["first_token"]))
            ours, stock = pair["ragrouter"], pair["stock"]
            rows.append(
                f"| {path}: prompt tokens evaluated / model calls per question (median) | {ours['prompt_tokens_evaluated_median']:,.0f} / "
                f"{ours['model_calls_median']:.0f} | {stock['prompt_tokens_evaluated_median']:,.0f} / {stock['model_calls_median']:.0f} | – |"
            )
    if "crag" in results and "documents" in results:
        rows.append(_ratio_row("documents with Corrective RAG vs without, ms", results["crag"], results["documents"]["ragrouter"]))
    if "route" in results:
        route = results["route"]
        for stock in ("stock EmbeddingSingleSelector", "stock LLMSingleSelector"):
            rows.append(_ratio_row(f"route decision vs {stock.split()[1]}, ms", route["ragrouter"], route[stock]))
    if "tracing" in results:
        t = results["tracing"]
        rows.append(
            _ratio_row(f"answer with tracing exported to a file vs off, ms ({t['file']['n'] // 2} questions, twice each)", t["file"], t["off"])
        )
        rows.append(f"| the same, per question (geometric mean of each question's file / off) | – | – | {t['paired_ratio']:.2f} |")
    if "decoding" in results:
        d = results["decoding"]
        rows.append(
            f"| generation with prompt lookup vs plain, tokens/s ({d['prompts']} prompts) | {d['lookup']['tokens_per_s']} | "
            f"{d['plain']['tokens_per_s']} | {d['lookup']['tokens_per_s'] / d['plain']['tokens_per_s']:.2f} |"
        )
    if "ingest" in results:
        i = results["ingest"]
        rows.append(
            f"| ingest {i['documents']} SciFact abstracts, docs/s (embedding alone: {i['embedding_alone']['docs_per_s']}) | "
            f"{i['ragrouter']['docs_per_s']} | {i['stock']['docs_per_s']} | {i['ragrouter']['docs_per_s'] / i['stock']['docs_per_s']:.2f} |"
        )
    if "memory" in results:
        rows.append(f"| `ragrouter chat` peak RSS, every model loaded | {results['memory']['peak_rss_mib']:,.0f} MiB | – | – |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20, help="questions per path")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the route decisions")
    parser.add_argument("--ingest-docs", type=int, default=300)
    parser.add_argument("--steps", nargs="*", help="rerun only these sections into the existing results.json")
    args = parser.parse_args()
    results: dict = json.loads(RESULTS.read_text()) if args.steps else {}
    results.update({"machine": f"{sys.platform}, {len(os.sched_getaffinity(0))} cores", "commit": _commit()})
    if not args.steps or "memory" in args.steps:
        results["memory"] = peak_memory()  # first: a second process cannot open Milvus Lite while we hold it
    demo = build_router(Settings(), DATA_DIR / "sources.yaml")
    reference = build_router(Settings(), DATA_DIR / "eval-sources.yaml", llm=demo.llm, embed=demo.embed)
    files = ((demo, "sources.yaml"), (reference, "eval-sources.yaml"))
    crag = {id(r): build_router(Settings(crag=True), DATA_DIR / f, llm=demo.llm, embed=demo.embed) for r, f in files}
    sql, documents = sql_questions(demo, reference, args.questions), documents_questions(demo, reference, args.questions)
    steps = {
        "sql": lambda: compare(sql, _stock_sql),
        "documents": lambda: compare(documents, _stock_documents),
        "crag": lambda: corrective(documents, crag),
        "route": lambda: route_times(reference, args.repeats),
        "tracing": lambda: export_overhead(sql + documents, demo.settings),
        "decoding": lambda: decoding_speed(demo.settings, sql, documents),
        "ingest": lambda: ingest_throughput(reference, args.ingest_docs),
    }
    for name, step in steps.items():
        if args.steps and name not in args.steps:
            continue
        results[name] = step()
        RESULTS.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")  # kept if a later step fails
    print(markdown(results))


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
