"""Run one suite: load its questions, take the split and limit, run ours and the baseline, write the report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engines.routing.router import RagRouter
from engines.settings import DATA_DIR, Settings
from evals.datasets import EvalDataError, load_questions, stratified
from evals.report import Report
from evals.runlog import Progress, RunLog
from tools.build import build_router

# Questions are sliced round-robin over this field, so `--limit 10` still samples every kind of question.
GROUP_KEY = {"metadata": "kind", "router": "group", "sql": "db", "retrieval": "source", "answers": "group", "chat": "set"}
# The reference sources each suite's questions are about (data/eval-*.yaml, over ../shared/eval).
SUITE_SOURCES = {
    "router": DATA_DIR / "eval-sources.yaml",
    "sql": DATA_DIR / "eval-sql-sources.yaml",
    "retrieval": DATA_DIR / "eval-retrieval-sources.yaml",
    "answers": DATA_DIR / "eval-sources.yaml",
    "chat": DATA_DIR / "eval-sources.yaml",
    "metadata": DATA_DIR / "eval-metadata-sources.yaml",
}


def _suite(name: str) -> Callable[[RagRouter, list[dict], Report, RunLog], None]:
    if name == "router":
        from evals.router_suite import run_router_suite as run
    elif name == "sql":
        from evals.sql_suite import run_sql_suite as run
    elif name == "retrieval":
        from evals.retrieval_suite import run_retrieval_suite as run
    elif name == "answers":
        from evals.answers_suite import run_answers_suite as run
    elif name == "metadata":
        from evals.metadata_suite import run_metadata_suite as run
    else:
        from evals.chat_suite import run_chat_suite as run
    return run


def run_suite(
    suite: str,
    sources_file: Path,
    questions: Path | None,
    limit: int | None,
    split: str,
    out: Path | None,
    router: RagRouter | None = None,
    on_progress: Progress = lambda system, done, total: None,
    replay: Path | None = None,
    postgres: bool = False,
    compression: bool = False,
    rewrite: bool = False,
) -> Path:
    """Run SUITE and write its report; `router` lets a caller that already holds the models reuse them; `replay`
    (the SQL suite only) is an earlier run's report folder whose stored queries are reused; `postgres` (the SQL
    suite only) runs ours on the SQLite databases and on PostgreSQL copies of them instead of ours beside stock;
    `compression` and `rewrite` (the answers suite only) compare the plain path's choices of that setting."""
    if postgres and suite != "sql":
        raise EvalDataError("--postgres is for the sql suite only")
    if (compression or rewrite) and suite != "answers":
        raise EvalDataError(f"--{'compression' if compression else 'rewrite'} is for the answers suite only")
    if compression and rewrite:
        raise EvalDataError("--compression and --rewrite are separate runs: pass one")
    if replay is not None and (suite != "sql" or not (replay / "items.jsonl").is_file()):
        raise EvalDataError(
            f"--replay takes the report folder of an earlier SQL run (holding items.jsonl); {replay} is not one"
            if suite == "sql"
            else "--replay is for the sql suite only"
        )
    items, origin = load_questions(suite, split, questions)
    if rewrite:
        from evals.answers_rewrite import retrievable

        items = retrievable(items)
    items = stratified(items, limit, GROUP_KEY[suite])
    router = router or build_router(Settings(), sources_file)
    variant = "".join(f"-{name}" for name, on in (("postgres", postgres), ("compression", compression), ("rewrite", rewrite)) if on)
    out = out or router.settings.reports_dir / f"{suite}-{split}{variant}"
    report = Report(suite, split, out, origin, len(items), router.settings)
    if postgres:
        from evals.sql_postgres import run_sql_on_postgres

        run_sql_on_postgres(router, sources_file, items, report, RunLog(out, on_progress))
        return report.write()
    if compression:
        from evals.answers_compression import run_compression_comparison

        run_compression_comparison(router, items, report, RunLog(out, on_progress))
        return report.write()
    if rewrite:
        from evals.answers_rewrite import run_rewrite_comparison

        run_rewrite_comparison(router, items, report, RunLog(out, on_progress))
        return report.write()
    extra = {"replay": RunLog(replay)} if replay is not None else {}
    _suite(suite)(router, items, report, RunLog(out, on_progress), **extra)
    return report.write()
