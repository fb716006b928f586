"""The SQL suite on PostgreSQL: our SQL path on the SQLite databases and on PostgreSQL copies of them, in one run.

Every database of the suite's sources file is copied into a throwaway cluster on 127.0.0.1 (evals/postgres.py),
a second router is built over `url:` sources with the same descriptions and knowledge files, and each question is
asked of both. The gold rows come from the SQLite file in both cases: Spider's gold queries are SQLite's (they
quote strings with "...", group loosely), and the question is whether the answer is right, not whether the gold
query runs on Postgres.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import yaml

from engines.routing.router import RagRouter
from engines.sources import SqlSource, load_sources
from engines.sql.engine import TextToSQLQueryEngine, engine_limits
from evals.postgres import copy_sqlite, throwaway_cluster
from evals.report import Report
from evals.runlog import RunLog
from evals.sql_suite import add_fewshot_examples, execute, our_sql, score, summarise
from tools.build import build_router, built_sources

SQLITE = "ragrouter on SQLite"
POSTGRES = "ragrouter on PostgreSQL"
SUFFIX = "_pg"  # the Postgres twin's source name: its SQL knowledge lives in its own collection


def _postgres_sources(sqlite_sources: list[SqlSource], cluster_url: Callable[[SqlSource], str], folder: Path) -> Path:
    entries = []
    for source in sqlite_sources:
        entry = {"name": source.name + SUFFIX, "kind": "sql", "url": cluster_url(source)}
        entry |= {"knowledge": str(source.knowledge)} if source.knowledge else {}
        entry |= {"description": source.description} if source.description else {}
        entries.append(entry)
    path = folder / "postgres-sources.yaml"
    path.write_text(yaml.safe_dump({"sources": entries}, allow_unicode=True), encoding="utf-8")
    return path


def _engines(router: RagRouter, names: dict[str, str], split: str) -> dict[str, TextToSQLQueryEngine]:
    tools = {t.source.name: t for t in built_sources(router)}
    knowledge = {db: tools[name].knowledge for db, name in names.items()}
    add_fewshot_examples(knowledge, split)
    limits = engine_limits(router.settings)
    return {
        db: TextToSQLQueryEngine(database=tools[name].database, knowledge=knowledge[db], llm=router.llm, write_answer=False, **limits)
        for db, name in names.items()
    }


def run_sql_on_postgres(router: RagRouter, sources_file: Path, items: list[dict], report: Report, log: RunLog) -> None:
    """Ours on SQLite and ours on the PostgreSQL copies, question by question, scored against SQLite's gold rows."""
    dbs = sorted({q["db"] for q in items})
    sqlite_sources = [s for s in load_sources(sources_file) if isinstance(s, SqlSource) and s.name in dbs]
    with throwaway_cluster() as cluster:
        for source in sqlite_sources:
            copy_sqlite(source.path, cluster.create_database(source.name.lower()))
        pg_file = _postgres_sources(sqlite_sources, lambda s: cluster.url(s.name.lower()), cluster.folder)
        pg_router = build_router(router.settings, pg_file, llm=router.llm, embed=router.embed)
        ours = {
            SQLITE: _engines(router, {db: db for db in dbs}, report.split),
            POSTGRES: _engines(pg_router, {db: db + SUFFIX for db in dbs}, report.split),
        }
        keyed = [(f"{i}:{q['db']}:{q['question']}", q) for i, q in enumerate(items)]
        logged = {name: log.run(name, keyed, lambda q, e=engines: our_sql(e[q["db"]], q, None)) for name, engines in ours.items()}
        golds = [execute(ours[SQLITE][q["db"]].database.engine, q["gold_sql"]) for q in items]
        results = {
            name: [
                {**r, **score(ours[name][q["db"]].database, r["sql"], gold, q["gold_sql"], guarded=True)} for r, q, gold in zip(records, items, golds)
            ]
            for name, records in logged.items()
        }
    summaries = {name: summarise(records, items) for name, records in results.items()}
    headline = ("execution_accuracy", "execution_accuracy_any_column_order", "invalid_sql_rate", "median_ms", "p95_ms")
    report.headline({k: summaries[POSTGRES][k] for k in headline}, {k: summaries[SQLITE][k] for k in headline}, SQLITE, POSTGRES)
    report.detail("systems", summaries)
    _differences(report, results, items)


def _differences(report: Report, results: dict[str, list[dict]], items: list[dict]) -> None:
    """Where one database got a question right and the other did not, grouped by the Postgres error (or "rows
    differ"), so the experiment record can explain each group."""
    groups: Counter[str] = Counter()
    for lite, pg, _ in zip(results[SQLITE], results[POSTGRES], items):
        if lite["correct"] == pg["correct"]:
            continue
        side = "SQLite right, PostgreSQL wrong" if lite["correct"] else "PostgreSQL right, SQLite wrong"
        why = (pg.get("error") or lite.get("error") or "rows differ").split("\n")[0][:90]
        groups[f"{side}: {why}"] += 1
    rows = ["| where they differ | questions |", "|---|---|", *(f"| {why} | {n} |" for why, n in groups.most_common())]
    report.detail("differences", dict(groups))
    report.section("## Questions answered right on one database only\n\n" + "\n".join(rows))
