"""SQL suite: execution accuracy of generated SQL on Spider, ours beside the stock NLSQLTableQueryEngine.

A prediction is right when its rows equal the gold query's rows as multisets (as lists when the gold query
has ORDER BY). Both systems' SQL runs on the same read-only, time-boxed connection; ours also passes the
product's guard, as it does when answering.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import numpy as np
from llama_index.core import SQLDatabase
from llama_index.core.query_engine import NLSQLTableQueryEngine
from sqlalchemy.engine import Engine

from engines.router import RagRouter
from engines.sql import GuardedSQLDatabase, build_sql_engine
from engines.sql_guard import guard_sql
from evals.datasets import EvalDataError
from evals.metrics import latency
from evals.report import Report, latency_histogram
from evals.runlog import RunLog

OURS = "ragrouter"
BASELINE = "stock NLSQLTableQueryEngine"
# The guard's LIMIT must not cut a result that the gold query returns whole.
SCORING_ROW_LIMIT = 1_000_000


def _value(v: Any) -> Any:
    return round(v, 6) if isinstance(v, float) else v


def execute(engine: Engine, sql: str) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(_value(v) for v in row) for row in conn.exec_driver_sql(sql).fetchall()]


def same_result(predicted: list[tuple], gold: list[tuple], ordered: bool) -> bool:
    return predicted == gold if ordered else Counter(predicted) == Counter(gold)


def _score(engine: Engine, sql: str | None, gold_sql: str, runnable: str | None) -> dict:
    gold = execute(engine, gold_sql)
    if not sql or runnable is None:
        return {"correct": False, "invalid": True}
    try:
        rows = execute(engine, runnable)
    except Exception as err:  # the SQL fails to execute: invalid, and wrong
        return {"correct": False, "invalid": True, "error": str(err)[:200]}
    return {"correct": same_result(rows, gold, "order by" in gold_sql.lower()), "invalid": False}


def _generate(engine: NLSQLTableQueryEngine, question: str) -> tuple[str | None, float]:
    start = time.perf_counter()
    try:
        sql = engine.query(question).metadata.get("sql_query")
    except Exception:  # a crash in generation or execution is a failed prediction
        sql = None
    return sql, round(1000 * (time.perf_counter() - start), 1)


def _ours(database: GuardedSQLDatabase, engine: NLSQLTableQueryEngine, item: dict) -> dict:
    sql, ms = _generate(engine, item["question"])
    try:
        runnable = guard_sql(sql or "", set(database.get_usable_table_names()), database.dialect, SCORING_ROW_LIMIT)
    except ValueError as err:
        return {"sql": sql, "ms": ms, "correct": False, "invalid": True, "error": str(err)[:200]}
    return {"sql": sql, "ms": ms, **_score(database.engine, sql, item["gold_sql"], runnable)}


def _stock(database: GuardedSQLDatabase, engine: NLSQLTableQueryEngine, item: dict) -> dict:
    sql, ms = _generate(engine, item["question"])
    return {"sql": sql, "ms": ms, **_score(database.engine, sql, item["gold_sql"], sql)}


def _accuracy_by(key: str, records: list[dict], items: list[dict]) -> dict[str, float]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for r, q in zip(records, items):
        groups[q.get(key, "questions")].append(r["correct"])
    return {name: round(float(np.mean(v)), 3) for name, v in sorted(groups.items())}


def summarise(records: list[dict], items: list[dict]) -> dict:
    return {
        "execution_accuracy": round(float(np.mean([r["correct"] for r in records])), 4),
        "invalid_sql_rate": round(float(np.mean([r["invalid"] for r in records])), 4),
        "repair_rate": None,  # no repair loop yet: the text-to-SQL issue adds one
        **latency(r["ms"] for r in records),
        "by_set": _accuracy_by("set", records, items),
        "by_db": _accuracy_by("db", records, items),
    }


def run_sql_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    names = {t.source.name: t for t in router.tools}
    wrong = sorted(db for db in {q["db"] for q in items} if db not in names or names[db].database is None)
    if wrong:
        raise EvalDataError(f"the questions name databases that are not SQL sources in the sources file: {', '.join(wrong)}")
    databases = {db: names[db].database for db in sorted({q["db"] for q in items})}
    ours = {db: build_sql_engine(d, router.llm, synthesize=False) for db, d in databases.items()}
    stock = {db: NLSQLTableQueryEngine(sql_database=SQLDatabase(d.engine), llm=router.llm, synthesize_response=False) for db, d in databases.items()}
    keyed = [(f"{i}:{q['db']}:{q['question']}", q) for i, q in enumerate(items)]
    results = {
        OURS: log.run(OURS, keyed, lambda q: _ours(databases[q["db"]], ours[q["db"]], q)),
        BASELINE: log.run(BASELINE, keyed, lambda q: _stock(databases[q["db"]], stock[q["db"]], q)),
    }
    summaries = {name: summarise(records, items) for name, records in results.items()}
    headline = ("execution_accuracy", "invalid_sql_rate", "median_ms", "p95_ms")
    report.headline({k: summaries[OURS][k] for k in headline}, {k: summaries[BASELINE][k] for k in headline}, BASELINE)
    report.detail("systems", summaries)
    for key, title in (("set", "dataset"), ("db", "database")):
        rows = [f"| {title} | questions | ours EX | stock EX |", "|---|---|---|---|"]
        counts = Counter(q.get(key, "questions") for q in items)
        for name in sorted(counts):
            rows.append(f"| {name} | {counts[name]} | {summaries[OURS][f'by_{key}'][name]:.1%} | {summaries[BASELINE][f'by_{key}'][name]:.1%} |")
        report.section(f"## Execution accuracy per {title}\n\n" + "\n".join(rows))
    report.section("Repair loop: none yet (the text-to-SQL issue adds one), so `repair_rate` is empty for both systems.")
    latency_histogram(report, "sql_latency.png", {n: [r["ms"] for r in rs] for n, rs in results.items()}, "question -> SQL -> rows")
