"""The `ragrouter` command: ingest sources, ask a question, start the app."""

from __future__ import annotations

import json
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from engines.milvus import StoreLockedError
from engines.models.files import ModelMissingError
from engines.routing.router import QuestionError
from engines.settings import Settings
from engines.sources import SourcesError
from engines.sql.database import DatabaseError

app = typer.Typer(add_completion=False, help="Route questions to documents, SQL databases or the web, and show why.")
console = Console(stderr=True, soft_wrap=True)
USER_ERRORS = (SourcesError, QuestionError, StoreLockedError, ModelMissingError, DatabaseError)
SourcesOption = typer.Option(None, "--sources", help="Sources YAML file (default: data/sources.yaml).")


def _fail(err: Exception) -> NoReturn:
    console.print(f"[bold red]error:[/] {err}")
    raise typer.Exit(code=2)


def _settings() -> Settings:
    """The settings, or a clear error naming each RAGROUTER_* variable that does not validate."""
    try:
        return Settings()
    except ValidationError as err:
        _fail(ValueError("; ".join(f"RAGROUTER_{str(e['loc'][0]).upper()}: {e['msg']}" for e in err.errors())))


def _ingest_all(settings: Settings, sources_file: Path) -> None:
    from engines.models.embeddings import build_embedding
    from engines.models.llm import build_llm
    from engines.sources import DocumentsSource, SqlSource, load_sources
    from engines.sql.database import open_engine
    from tools.ingest import ingest_source

    sources = load_sources(sources_file)
    for source in sources:  # check every database before any store is written
        if isinstance(source, SqlSource):
            open_engine(source)
    embed = build_embedding(settings.embed_model, settings.embed_threads)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        for source in (s for s in sources if isinstance(s, DocumentsSource)):
            task = progress.add_task(source.name, total=None)
            report = ingest_source(
                source,
                settings,
                embed,
                lambda: build_llm(settings),
                on_start=lambda total, t=task: progress.update(t, total=total),
                on_batch=lambda done, t=task: progress.advance(t, done),
            )
            progress.console.print(f"{source.name}: {report.documents} documents, {report.chunks_added} new chunks")
            for skipped in report.skipped:
                progress.console.print(f"[yellow]warning:[/] {source.name}: skipped {skipped}")


@app.command()
def ingest(sources: Path | None = SourcesOption) -> None:
    """Read, chunk and embed every document source into Milvus (unchanged files add nothing)."""
    settings = _settings()
    try:
        _ingest_all(settings, sources or settings.sources_file)
    except USER_ERRORS as err:
        _fail(err)


class _TerminalAnswer:
    """The answer printed as the model writes it (engines/answers/streaming.py)."""

    def __init__(self) -> None:
        self.shown = ""

    def begin(self) -> None:
        if self.shown:  # a second answer (Corrective RAG after verifying the first) starts on its own line
            print()
        self.shown = ""

    def token(self, delta: str) -> None:
        self.shown += delta
        print(delta, end="", flush=True)

    def withdraw(self, message: str) -> None:
        print(f"\n{message}", flush=True)
        self.shown = message


def _print_trace(trace, shown: str) -> None:
    """The route and what was used; the answer too where the checked answer is not what streamed."""
    route = trace.route
    if shown.strip() != trace.answer:
        print(("\n" if shown else "") + trace.answer)
    elif shown:
        print()
    table = Table("source", "score", title=f"routed to {route.chosen} by {route.selector} selector")
    for c in route.candidates:
        table.add_row(c.name, f"{c.score:.3f}")
    console.print(table)
    console.print(f"[dim]{route.reason}[/]")
    if trace.sql:
        console.print(f"[cyan]SQL:[/] {trace.sql}")
    for p in trace.passages:
        console.print(f"[dim]- {p.source}/{p.id}: {p.text[:120]!r}[/]")


@app.command()
def ask(
    question: str,
    sources: Path | None = SourcesOption,
    source: str | None = typer.Option(None, "--source", help="Skip routing and ask this source."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole trace as one JSON object."),
) -> None:
    """Ask one question; the answer comes with the route taken and why."""
    from engines.routing.router import check_question
    from tools.build import build_router

    settings = _settings()
    try:
        check_question(question, settings.max_question_chars)  # fail before loading any model
        streamed = None if as_json else _TerminalAnswer()
        trace = build_router(settings, sources).ask(question, source, listener=streamed)
    except USER_ERRORS as err:
        _fail(err)
    if streamed is None:
        print(json.dumps(trace.model_dump(mode="json"), ensure_ascii=False, indent=1))
    else:
        _print_trace(trace, streamed.shown)


class Suite(str, Enum):
    router = "router"
    sql = "sql"
    retrieval = "retrieval"
    answers = "answers"


class Split(str, Enum):
    dev = "dev"
    test = "test"


@app.command(name="eval")
def evaluate(
    suite: Suite,
    sources: Path | None = typer.Option(None, "--sources", help="Sources the questions are about (default: the suite's data/eval-*.yaml)."),
    questions: Path | None = typer.Option(None, "--questions", help="JSON lines question file (default: built from ../shared/eval)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="At most this many questions, spread over every kind."),
    split: Split = typer.Option(Split.dev, "--split", help="dev for tuning, test for reporting."),
    out: Path | None = typer.Option(None, "--out", help="Report folder (default: evals/reports/SUITE-SPLIT); rerunning resumes."),
    replay: Path | None = typer.Option(
        None,
        "--replay",
        help="sql only: an earlier run's report folder; its stored queries are fixed, voted and scored anew instead of written again.",
    ),
) -> None:
    """Measure a suite on public data, ours beside LlamaIndex's stock pieces: report.json, report.md, plots."""
    from evals.datasets import EvalDataError
    from evals.run import SUITE_SOURCES, run_suite

    _settings()
    try:
        run_suite(suite.value, sources or SUITE_SOURCES[suite.value], questions, limit, split.value, out, replay=replay)
    except (*USER_ERRORS, EvalDataError) as err:
        _fail(err)


@app.command()
def ui(port: int = typer.Option(8501, help="Port for the Streamlit app.")) -> None:
    """Start the Streamlit chat app."""
    script = Path(__file__).with_name("app.py")
    raise typer.Exit(
        subprocess.call([sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port), "--server.headless", "true"])
    )


if __name__ == "__main__":
    app()
