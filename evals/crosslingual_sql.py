"""SQL across languages, database given: CSpider items of a split (`--limit` per database, round-robin) asked in
Chinese and in English by ours, and in Chinese by the stock `NLSQLTableQueryEngine`; right when the rows equal
the gold query's (the SQL suite's scoring). `python -m evals.crosslingual_sql --split test --limit 45`
(docs/experiments/crosslingual.md).
"""

from __future__ import annotations

import argparse

from llama_index.core import SQLDatabase
from llama_index.core.query_engine import NLSQLTableQueryEngine

from engines.settings import DATA_DIR, Settings
from engines.sql.engine import TextToSQLQueryEngine, engine_limits
from evals.datasets import QUESTIONS_DIR, read_jsonl, stratified
from evals.sql_suite import _stock, execute, our_sql, score
from tools.build import build_router, built_sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--limit", type=int, default=45)
    args = parser.parse_args()
    settings = Settings(second_look=False)
    router = build_router(settings, DATA_DIR / "eval-sql-sources.yaml")
    sources = {t.source.name: t for t in built_sources(router)}
    chinese = stratified(read_jsonl(QUESTIONS_DIR / f"sql-cspider-zh.{args.split}.jsonl"), args.limit, "db")
    english = {(q["db"], q["gold_sql"]): q["question"] for q in read_jsonl(QUESTIONS_DIR / f"sql-cspider-en.{args.split}.jsonl")}
    for system in ("ours, Chinese", "ours, English", "stock, Chinese"):
        right = 0
        for item in chinese:
            built = sources[item["db"]]
            question = english[(item["db"], item["gold_sql"])] if system.endswith("English") else item["question"]
            gold = execute(built.database.engine, item["gold_sql"])
            if system.startswith("ours"):
                engine = TextToSQLQueryEngine(
                    database=built.database, knowledge=built.knowledge, llm=router.llm, write_answer=False, **engine_limits(settings)
                )
                sql = our_sql(engine, {**item, "question": question}, None)["sql"]
            else:
                stock = NLSQLTableQueryEngine(sql_database=SQLDatabase(built.database.engine), llm=router.llm, synthesize_response=False)
                sql = _stock(stock, {**item, "question": question}, None)["sql"]
            right += bool(score(built.database, sql, gold, item["gold_sql"], guarded=system.startswith("ours"))["correct"])
        print(f"{system}: {right}/{len(chinese)}", flush=True)


if __name__ == "__main__":
    main()
