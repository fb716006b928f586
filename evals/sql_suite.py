"""SQL suite: execution accuracy of generated SQL on Spider, ours beside the stock NLSQLTableQueryEngine.

A prediction is right when its rows equal the gold query's rows as multisets (as lists when the gold query
has ORDER BY), as ../shared/eval/README.md defines it; beside it the suite reports Spider's own execution match
(test-suite-sql-eval's `result_eq`), where the columns may come in any order. Both systems' SQL runs on the
same read-only, time-boxed connection; ours also passes the product's guard, as it does when answering. The log keeps each system's SQL; scoring runs on it every time the report is written,
so a resumed run is scored by the current metric.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from llama_index.core import SQLDatabase
from llama_index.core.query_engine import NLSQLTableQueryEngine
from sqlalchemy.engine import Engine

from engines.routing.router import RagRouter
from engines.sql.database import GuardedSQLDatabase, plain_value
from engines.sql.engine import TextToSQLQueryEngine, engine_limits
from engines.sql.guard import guard_sql
from engines.sql.knowledge import SqlKnowledgeBase, example_node
from engines.trace import RESULT, SqlAttempt
from evals.datasets import EVAL_DIR, KAGGLE_DATABASES, EvalDataError, kaggle_questions
from evals.metrics import latency
from evals.report import Report, latency_histogram
from evals.runlog import RunLog
from tools.build import built_sources

OURS = "ragrouter"
BASELINE = "stock NLSQLTableQueryEngine"
# The guard's LIMIT must not cut a result that the gold query returns whole.
SCORING_ROW_LIMIT = 1_000_000


def _value(v: Any) -> Any:
    v = plain_value(v)
    return round(v, 6) if isinstance(v, float) else v


def execute(engine: Engine, sql: str) -> list[tuple]:
    """The rows of `sql` as written; `no_parameters` keeps psycopg from reading LIKE's `%` as placeholders, as the
    product's run_sql (SQLAlchemy's text()) does."""
    with engine.connect() as conn:
        return [tuple(_value(v) for v in row) for row in conn.execution_options(no_parameters=True).exec_driver_sql(sql).fetchall()]


def same_result(predicted: list[tuple], gold: list[tuple], ordered: bool, any_column_order: bool = False) -> bool:
    """The same rows; with `any_column_order`, under some order of the predicted columns (Spider's own match: a
    question names its columns, not their order). test-suite-sql-eval is not a PyPI package, so its `result_eq`
    is redone here: only column orders that pair columns holding the same set of values are tried."""
    if not predicted or not gold or not any_column_order:
        return predicted == gold if ordered else Counter(predicted) == Counter(gold)
    width = len(gold[0])
    if len(predicted) != len(gold) or len(predicted[0]) != width:
        return False
    gold_values = [{row[i] for row in gold} for i in range(width)]
    predicted_values = [{row[j] for row in predicted} for j in range(width)]
    fits = [[j for j in range(width) if predicted_values[j] == gold_values[i]] for i in range(width)]
    for order in itertools.product(*fits):
        if len(set(order)) < width:
            continue
        permuted = [tuple(row[j] for j in order) for row in predicted]
        if same_result(permuted, gold, ordered):
            return True
    return False


def _unrunnable(error: str | None = None) -> dict:
    """The score of SQL that is missing, refused or fails to execute: invalid, and wrong by either match."""
    return {"correct": False, "correct_any_column_order": False, "invalid": True, **({"error": error[:200]} if error else {})}


def score(database: GuardedSQLDatabase, sql: str | None, gold: list[tuple], gold_sql: str, guarded: bool) -> dict:
    """Run a system's SQL (ours through the product's guard, with a row limit that cannot cut the gold result)
    and compare its rows with the gold query's."""
    if not sql:
        return _unrunnable()
    runnable = sql
    if guarded:
        try:
            runnable = guard_sql(sql, set(database.get_usable_table_names()), database.sqlglot_dialect, SCORING_ROW_LIMIT)
        except ValueError as err:
            return _unrunnable(str(err))
    try:
        rows = execute(database.engine, runnable)
    except Exception as err:  # the SQL fails to execute: invalid, and wrong
        return _unrunnable(str(err))
    ordered = "order by" in gold_sql.lower()
    return {"correct": same_result(rows, gold, ordered), "correct_any_column_order": same_result(rows, gold, ordered, True), "invalid": False}


def _generate(answer: Callable[[], Any]) -> tuple[dict, float]:
    start = time.perf_counter()
    try:
        metadata = answer().metadata
    except Exception:  # a crash in generation or execution is a failed prediction
        metadata = {}
    return metadata, round(1000 * (time.perf_counter() - start), 1)


def our_sql(engine: TextToSQLQueryEngine, item: dict, replayed: dict | None) -> dict:
    """Our SQL for the item; with an earlier record of it that kept its queries, the first attempt's queries come
    from there (the fixes, vote and repairs run anew). A replayed record keeps the earlier run's `ms`, which
    includes writing the queries, and adds this run's as `replay_ms`."""
    written = (replayed or {}).get("raw")
    metadata, ms = _generate(lambda: engine.replay(item["question"], written))
    result = metadata.get(RESULT)
    attempts = result.attempts if result and result.attempts else [SqlAttempt(sql="")]
    return {
        "sql": attempts[-1].sql or None,  # as the model wrote it: the guard's row limit must not cut the scored result
        "ms": ms,
        "attempts": len(attempts),
        "repaired": len(attempts) > 1 and not attempts[-1].error,
        "overturned": attempts[0].chosen > 0,
        "raw": attempts[0].raw,
        **({"ms": replayed["ms"], "replay_ms": ms} if written is not None else {}),
    }


def _stock(engine: NLSQLTableQueryEngine, item: dict, replayed: dict | None) -> dict:
    """The stock engine's SQL; taken as it is from an earlier record (same model, same stock code) when there is one."""
    if replayed is not None:
        return {"sql": replayed["sql"], "ms": replayed["ms"]}
    metadata, ms = _generate(lambda: engine.query(item["question"]))
    return {"sql": metadata.get("sql_query"), "ms": ms}


def add_fewshot_examples(knowledge: dict[str, SqlKnowledgeBase], split: str) -> None:
    """KaggleDBQA's few-shot questions (its dev split) as user examples in the test run; none in the dev run."""
    for db in KAGGLE_DATABASES:
        if db in knowledge:
            shots = [q for q in kaggle_questions(EVAL_DIR, "dev") if q["db_id"] == db] if split == "test" else []
            knowledge[db].sync("eval-fewshot", [example_node(q["question"], q["query"], "eval-fewshot") for q in shots])


def _accuracy_by(key: str, records: list[dict], items: list[dict], match: str = "correct") -> dict[str, float]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for r, q in zip(records, items):
        groups[q.get(key, "questions")].append(r[match])
    return {name: round(float(np.mean(v)), 3) for name, v in sorted(groups.items())}


def _share(records: list[dict], test: Callable[[dict], bool]) -> float | None:
    """Share of records passing `test`; None for a system without repair attempts (the stock engine)."""
    if not any("attempts" in r for r in records):
        return None
    return round(float(np.mean([test(r) for r in records])), 4)


def summarise(records: list[dict], items: list[dict]) -> dict:
    return {
        "execution_accuracy": round(float(np.mean([r["correct"] for r in records])), 4),
        "execution_accuracy_any_column_order": round(float(np.mean([r["correct_any_column_order"] for r in records])), 4),
        "invalid_sql_rate": round(float(np.mean([r["invalid"] for r in records])), 4),
        "repair_rate": _share(records, lambda r: r.get("attempts", 1) > 1),
        "repaired_rate": _share(records, lambda r: r.get("repaired", False)),
        "vote_overturned_rate": _share(records, lambda r: r.get("overturned", False)),
        **latency(r["ms"] for r in records),
        "by_set": _accuracy_by("set", records, items),
        "by_set_any_column_order": _accuracy_by("set", records, items, "correct_any_column_order"),
        "by_db": _accuracy_by("db", records, items),
    }


def run_sql_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog, replay: RunLog | None = None) -> None:
    """Both systems on the items; with `replay` (an earlier run's log), what it holds of the items is reused: the
    stock engine's SQL, and our first attempt's queries as the model wrote them."""
    names = {t.source.name: t for t in built_sources(router)}
    wrong = sorted(db for db in {q["db"] for q in items} if db not in names or names[db].database is None)
    if wrong:
        raise EvalDataError(f"the questions name databases that are not SQL sources in the sources file: {', '.join(wrong)}")
    databases = {db: names[db].database for db in sorted({q["db"] for q in items})}
    knowledge = {db: names[db].knowledge for db in databases}
    add_fewshot_examples(knowledge, report.split)
    limits = engine_limits(router.settings)
    ours = {
        db: TextToSQLQueryEngine(database=d, knowledge=knowledge[db], llm=router.llm, write_answer=False, **limits) for db, d in databases.items()
    }
    stock = {db: NLSQLTableQueryEngine(sql_database=SQLDatabase(d.engine), llm=router.llm, synthesize_response=False) for db, d in databases.items()}
    keyed = [(f"{i}:{q['db']}:{q['question']}", q) for i, q in enumerate(items)]
    earlier = replay.records if replay else {}
    keyed = [(key, {**q, "key": key}) for key, q in keyed]
    logged = {
        OURS: log.run(OURS, keyed, lambda q: our_sql(ours[q["db"]], q, earlier.get((OURS, q["key"])))),
        BASELINE: log.run(BASELINE, keyed, lambda q: _stock(stock[q["db"]], q, earlier.get((BASELINE, q["key"])))),
    }
    golds = [execute(databases[q["db"]].engine, q["gold_sql"]) for q in items]
    results = {
        name: [{**r, **score(databases[q["db"]], r["sql"], gold, q["gold_sql"], guarded=name == OURS)} for r, q, gold in zip(records, items, golds)]
        for name, records in logged.items()
    }
    summaries = {name: summarise(records, items) for name, records in results.items()}
    headline = ("execution_accuracy", "execution_accuracy_any_column_order", "invalid_sql_rate", "median_ms", "p95_ms")
    report.headline({k: summaries[OURS][k] for k in headline}, {k: summaries[BASELINE][k] for k in headline}, BASELINE)
    report.detail("systems", summaries)
    for key, title in (("set", "dataset"), ("db", "database")):
        rows = [f"| {title} | questions | ours EX | stock EX |", "|---|---|---|---|"]
        counts = Counter(q.get(key, "questions") for q in items)
        for name in sorted(counts):
            rows.append(f"| {name} | {counts[name]} | {summaries[OURS][f'by_{key}'][name]:.1%} | {summaries[BASELINE][f'by_{key}'][name]:.1%} |")
        report.section(f"## Execution accuracy per {title}\n\n" + "\n".join(rows))
    report.section(
        f"Repair loop (ours): {summaries[OURS]['repair_rate']:.1%} of questions needed more than one attempt; "
        f"{summaries[OURS]['repaired_rate']:.1%} ended with a query that ran after a repair. "
        f"The vote chose another query than the first one written for {summaries[OURS]['vote_overturned_rate']:.1%} of questions. "
        "The stock engine has neither."
    )
    replayed = sum("replay_ms" in r for r in logged[OURS])
    if replayed:
        report.section(
            f"Replayed: {replayed} of our {len(items)} first attempts used the queries an earlier run wrote (`--replay`); "
            "their times are that run's, as writing the queries is most of a question's time."
        )
    latency_histogram(report, "sql_latency.png", {n: [r["ms"] for r in rs] for n, rs in results.items()}, "question -> SQL -> rows")
