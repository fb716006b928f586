"""Small SQL results: the template (engines/sql/readout.py) beside the model's sentence, on a SQL run's queries.

For each of our queries in an SQL report (`evals/reports/sql-<split>/items.jsonl`) whose result a template can
say, the model writes its sentence as the SQL path did before (`ANSWER_FROM_ROWS`), and both are checked for
stating every value of the result (a number matches written with or without its decimals). The template states
them by construction; the figure is how often the model did, and what its sentence cost.
`python -m evals.sql_readout [--split dev] [--limit N]`.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from engines.models.llm import build_llm
from engines.settings import Settings
from engines.sources import SqlSource, load_sources
from engines.sql.database import GuardedSQLDatabase, open_engine
from engines.sql.prompts import ANSWER_FROM_ROWS
from engines.sql.readout import read_out, value_text
from evals.metrics import latency
from evals.run import SUITE_SOURCES
from evals.sql_suite import OURS


def states_every_value(sentence: str, rows: list[tuple]) -> bool:
    """Every value of the rows appears in the sentence (numbers as written or rounded to whole)."""
    text = sentence.lower().replace(",", "")
    for row in rows:
        for value in row:
            forms = {value_text(value).lower().replace(",", ""), str(value).lower().replace(",", "")}
            if isinstance(value, float):
                forms |= {str(round(value)), f"{value:.2f}", f"{value:.1f}"}
            if not any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", text) if f[:1].isdigit() else f in text for f in forms):
                return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    settings = Settings()
    folder = settings.reports_dir / f"sql-{args.split}"
    records = [r for r in map(json.loads, (folder / "items.jsonl").read_text(encoding="utf-8").splitlines()) if r["system"] == OURS and r["sql"]]
    sources = {s.name: s for s in load_sources(SUITE_SOURCES["sql"]) if isinstance(s, SqlSource)}
    databases = {name: GuardedSQLDatabase(open_engine(s, settings.sql_timeout_s), settings.sql_row_limit) for name, s in sources.items()}
    llm = build_llm(settings)
    results = []
    for record in records[: args.limit]:
        _, db, question = record["key"].split(":", 2)
        try:
            _, ran = databases[db].run_sql(record["sql"])
        except Exception:  # a query that fails has no rows to say: the SQL path says so without the model
            continue
        rows, columns = ran["result"], ran["col_keys"]
        said = read_out(rows, columns, "en")
        if said is None or len(rows) < 2:  # no rows and a single value were template answers before this change
            continue
        start = time.perf_counter()
        prompt = ANSWER_FROM_ROWS.format(query_str=question, sql_query=record["sql"], context_str=str(rows[:20]))
        sentence = llm.complete(prompt).text.strip()
        results.append(
            {
                "question": question,
                "rows": [list(r) for r in rows],
                "template": said,
                "model": sentence,
                "model_ms": round(1000 * (time.perf_counter() - start), 1),
                "model_states_all": states_every_value(sentence, rows),
                "template_states_all": states_every_value(said, rows),
            }
        )
    summary = {
        "queries": len(records[: args.limit]),
        "read_out_by_template": len(results),
        "model_states_every_value": sum(r["model_states_all"] for r in results),
        "template_states_every_value": sum(r["template_states_all"] for r in results),
        "model_sentence": latency(r["model_ms"] for r in results),
    }
    out = settings.reports_dir / f"sql-{args.split}-readout.json"
    out.write_text(json.dumps({"summary": summary, "items": results}, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(summary, indent=1))
    print(out)


if __name__ == "__main__":
    main()
