"""The `ragrouter` command: ingest sources, ask a question, start the app."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from enum import Enum
from pathlib import Path
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from sqlalchemy import Engine

from engines.conversation.store import ConversationIdError, ConversationStore, ConversationStoreError, check_conversation_id
from engines.milvus import StoreLockedError, StoreUnavailableError
from engines.models.endpoint import ModelEndpointError
from engines.models.files import ModelMissingError
from engines.routing.router import QuestionError
from engines.settings import Settings
from engines.sources import SourcesError, SqlSource
from engines.sql.database import DatabaseError
from engines.tracing.export import ExportError

app = typer.Typer(add_completion=False, help="Route questions to documents, SQL databases or the web, and show why.")
console = Console(stderr=True, soft_wrap=True)
USER_ERRORS = (
    SourcesError,
    QuestionError,
    StoreLockedError,
    StoreUnavailableError,
    ModelMissingError,
    ModelEndpointError,
    DatabaseError,
    ConversationIdError,
    ConversationStoreError,
    ExportError,
)
SourcesOption = typer.Option(None, "--sources", help="Sources YAML file (default: data/sources.yaml).")
LINE_EVERY_S = 60  # an ingest's progress line, when its output is not a terminal


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
    from engines.models.embeddings import settings_embedding
    from engines.models.llm import build_llm
    from engines.sources import DocumentsSource, load_sources
    from engines.sql.database import open_engine
    from tools.ingest import ingest_source

    sources = load_sources(sources_file)
    databases = {s.name: (s, open_engine(s)) for s in sources if isinstance(s, SqlSource)}  # every one checked before any store is written
    embed = settings_embedding(settings)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[pace]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    # Off a terminal (a redirected or logged ingest) the bar draws nothing: a line a minute says how far it is.
    with Progress(*columns, console=console, disable=not console.is_terminal) as progress:
        for source in (s for s in sources if isinstance(s, DocumentsSource)):
            task = progress.add_task(source.name, total=None, pace="")
            report = ingest_source(source, settings, embed, lambda: build_llm(settings), _IngestDisplay(progress, task))
            progress.console.print(f"{source.name}: {report.documents} documents, {report.chunks_added} new chunks")
            for skipped in report.skipped:
                progress.console.print(f"[yellow]warning:[/] {source.name}: skipped {skipped}")
    if settings.aliases:
        _describe_databases(settings, list(databases.values()), again=False)


def _describe_databases(settings: Settings, databases: list[tuple[SqlSource, Engine]], again: bool) -> None:
    """Each database's aliases, written by the model where none are cached (or `again`) unless RAGROUTER_ALIASES
    is off, shown as a table."""
    from engines.models.llm import build_llm
    from tools.aliases import source_aliases

    llm = functools.cache(lambda: build_llm(settings))  # loaded only for a database that has none cached
    for source, engine in databases:
        with console.status(f"{source.name}: its names in the other language (the model writes them once)"):
            aliases = source_aliases(source, engine, settings, llm if settings.aliases else None, again)
        table = Table("name", "alias", title=f"{source.name}: {len(aliases.names)} names, {len(aliases.values)} values")
        for name, alias in [*aliases.names.items(), *((f"'{v}'", a) for v, a in aliases.values.items())]:
            table.add_row(name, alias)
        console.print(table)


@app.command()
def describe(
    sources: Path | None = SourcesOption,
    source: str | None = typer.Option(None, "--source", help="Only this database (default: every SQL source)."),
    again: bool = typer.Option(False, "--again", help="Have the model write them anew, though cached."),
) -> None:
    """Write each database's table, column and category names in the other language (Chinese for English names)
    and show them; the sources file's `aliases:` win over them. Cached in the state folder: `ingest` and the first
    question write them once, this command shows or redoes them."""
    from engines.sources import load_sources
    from engines.sql.database import open_engine

    settings = _settings()
    try:
        chosen = [s for s in load_sources(sources or settings.sources_file) if isinstance(s, SqlSource) and source in (None, s.name)]
        if not chosen:
            raise SourcesError(f"no SQL source {'named ' + repr(source) + ' ' if source else ''}in the sources file")
        _describe_databases(settings, [(s, open_engine(s, settings.sql_timeout_s)) for s in chosen], again)
    except USER_ERRORS as err:
        _fail(err)


class _IngestDisplay:
    """An ingest's progress on the bar, with chunks per second and time left; off a terminal, a line a minute."""

    def __init__(self, progress: Progress, task: int) -> None:
        self.progress, self.task, self.printed = progress, task, -LINE_EVERY_S

    def __call__(self, done) -> None:  # noqa: ANN001 (tools.ingest.IngestProgress, imported when used)
        pace = f"{done.documents:,}/{done.total:,} documents · {done.chunks:,} chunks · {done.chunks_per_s:.1f}/s"
        # Measured in characters, so the time left weighs a long document as what it is.
        self.progress.update(self.task, total=done.total_characters, completed=done.characters, pace=pace)
        finished = done.documents == done.total
        if not self.progress.console.is_terminal and (finished or time.monotonic() - self.printed >= LINE_EVERY_S):
            self.progress.console.print(done.line())
            self.printed = time.monotonic()


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

    def rows(self, sql: str, columns: list[str], rows: list[tuple]) -> None:
        console.print(f"[dim]{len(rows)} row{'s' * (len(rows) != 1)} from the query; the answer follows.[/]")


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
    console.print(f"[dim]trace {trace.trace_id}[/]")  # finds the question in Phoenix or any OpenTelemetry backend
    if trace.sql:
        console.print(f"[cyan]SQL:[/] {trace.sql}")
    if trace.metadata_query:
        record = trace.metadata_query
        instruction = json.dumps(record.instruction, ensure_ascii=False)
        console.print(f"[cyan]metadata instruction:[/] {instruction} → Milvus filter {record.expression or '(none)'}, {record.matched} matched")
    for p in trace.passages:
        console.print(f"[dim]- {p.source}/{p.id}: {p.text[:120]!r}[/]")


def _print_conversation(trace) -> None:
    """Where the turn stands in its conversation, and the question routed when it was rewritten."""
    conversation = trace.conversation
    if conversation is None:
        return
    if trace.standalone_question != trace.question:
        console.print(f"[magenta]asked as:[/] {trace.standalone_question}")
    console.print(f"[dim]conversation {conversation.id}, turn {conversation.turn} (continue it with --conversation {conversation.id})[/]")
    for note in trace.notes:
        console.print(f"[yellow]note:[/] {note}")


ConversationOption = typer.Option(None, "--conversation", help="Continue (or start) the conversation with this id.")


@app.command()
def ask(
    question: str,
    sources: Path | None = SourcesOption,
    source: str | None = typer.Option(None, "--source", help="Skip routing and ask this source."),
    conversation: str | None = ConversationOption,
    as_json: bool = typer.Option(False, "--json", help="Print the whole trace as one JSON object."),
) -> None:
    """Ask one question; the answer comes with the route taken and why. With --conversation, a follow-up."""
    from engines.routing.router import check_question
    from tools.build import build_router
    from tools.chat import build_chat

    settings = _settings()
    try:
        check_question(question, settings.max_question_chars)  # fail before loading any model
        if conversation is not None:
            check_conversation_id(conversation)
        streamed = None if as_json else _TerminalAnswer()
        router = build_router(settings, sources)
        chat = build_chat(router)
        trace = chat.ask_alone(question, streamed, source) if conversation is None else chat.ask(question, conversation, streamed, source)
    except USER_ERRORS as err:
        _fail(err)
    if streamed is None:
        print(json.dumps(trace.model_dump(mode="json"), ensure_ascii=False, indent=1))
    else:
        _print_trace(trace, streamed.shown)
        _print_conversation(trace)


@app.command()
def serve(
    sources: Path | None = SourcesOption,
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on; another than 127.0.0.1 needs RAGROUTER_API_KEYS."),
    port: int = typer.Option(8000, "--port", help="The port."),
) -> None:
    """Serve the HTTP API (OpenAI-compatible chat; docs at /docs), loading the model once."""
    import uvicorn

    from tools.build import build_router
    from tools.chat import build_chat
    from ui.api.app import create_app

    settings = _settings()
    if host not in ("127.0.0.1", "localhost") and not settings.api_keys:
        _fail(ValueError(f"serving on {host} needs API keys: set RAGROUTER_API_KEYS (without keys the API serves only on 127.0.0.1)"))
    try:
        chat = build_chat(build_router(settings, sources))
    except USER_ERRORS as err:
        _fail(err)
    uvicorn.run(create_app(chat, settings), host=host, port=port, log_level="warning")


def _print_history(store: ConversationStore, conversation_id: str) -> None:
    for n, turn in enumerate(store.turns(conversation_id), 1):
        route = turn.route.chosen if turn.route else "?"
        asked = f"  (asked as: {turn.standalone_question})" if turn.standalone_question not in ("", turn.question) else ""
        console.print(f"[bold]{n}. {turn.question}[/]{asked}\n   [dim]{route}:[/] {turn.answer}")


@app.command()
def chat(
    sources: Path | None = SourcesOption,
    conversation: str | None = ConversationOption,
) -> None:
    """Ask question after question; follow-ups know what came before. /new starts over, /history shows the turns, Ctrl-D leaves."""
    from tools.build import build_router
    from tools.chat import build_chat

    settings = _settings()
    try:
        current = check_conversation_id(conversation) if conversation else None
        session = build_chat(build_router(settings, sources))
    except USER_ERRORS as err:
        _fail(err)
    console.print("[dim]Ask a question. /new starts a new conversation, /history shows this one, Ctrl-D leaves.[/]")
    while True:
        try:
            line = input("» ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return
        current = _chat_turn(session, line, current)


def _chat_turn(session, line: str, current: str | None) -> str | None:
    """One line of `chat`: a command or a question; the conversation it leaves open."""
    if line == "/new":
        console.print("[dim]A new conversation starts with your next question.[/]")
        return None
    if line == "/history":
        if current is None:
            console.print("[dim]Nothing asked yet in this conversation.[/]")
            return current
        try:
            _print_history(session.store, current)
        except ConversationStoreError as err:
            console.print(f"[bold red]error:[/] {err}")
        return current
    streamed = _TerminalAnswer()
    try:
        trace = session.ask(line, current, streamed)
    except QuestionError as err:
        console.print(f"[bold red]error:[/] {err}")
        return current
    _print_trace(trace, streamed.shown)
    _print_conversation(trace)
    return trace.conversation.id


conversations_app = typer.Typer(help="List, show, rename and delete saved conversations.", no_args_is_help=True)
app.add_typer(conversations_app, name="conversations")


def _store() -> ConversationStore:
    return ConversationStore(_settings().conversations_path)


@conversations_app.command("list")
def conversations_list() -> None:
    """Every saved conversation, the most recent first."""
    try:
        found = _store().recent()
    except ConversationStoreError as err:
        _fail(err)
    table = Table("id", "title", "turns", "last used", title=f"{len(found)} conversations")
    for c in found:
        table.add_row(c.id, c.title, str(c.turns), time.strftime("%Y-%m-%d %H:%M", time.localtime(c.updated)))
    Console(soft_wrap=True).print(table)


def _known(store: ConversationStore, conversation_id: str) -> None:
    if not store.exists(check_conversation_id(conversation_id)):
        raise ConversationIdError(f"there is no conversation '{conversation_id}' (`ragrouter conversations list` shows them)")


@conversations_app.command("show")
def conversations_show(conversation_id: str, as_json: bool = typer.Option(False, "--json", help="Every turn's whole trace, as JSON.")) -> None:
    """A conversation's turns: each question, the question routed, the source and the answer."""
    store = _store()
    try:
        _known(store, conversation_id)
        if as_json:
            print(json.dumps([t.model_dump(mode="json") for t in store.turns(conversation_id)], ensure_ascii=False, indent=1))
        else:
            _print_history(store, conversation_id)
    except (ConversationIdError, ConversationStoreError) as err:
        _fail(err)


@conversations_app.command("rename")
def conversations_rename(conversation_id: str, title: str) -> None:
    """Give a conversation another title."""
    store = _store()
    try:
        _known(store, conversation_id)
        store.rename(conversation_id, title)
    except (ConversationIdError, ConversationStoreError) as err:
        _fail(err)


@conversations_app.command("delete")
def conversations_delete(conversation_id: str) -> None:
    """Delete a conversation and its turns (nothing else)."""
    store = _store()
    try:
        _known(store, conversation_id)
        store.delete(conversation_id)
    except (ConversationIdError, ConversationStoreError) as err:
        _fail(err)
    console.print(f"deleted conversation {conversation_id}")


@app.command()
def feedback(
    target: str = typer.Argument(..., metavar="TRACE_ID|export", help="The trace id of an answer, or `export`."),
    rating: str | None = typer.Argument(None, metavar="[up|down|none]", help="👍, 👎, or none to take feedback back."),
    source: str | None = typer.Option(None, "--source", help="The source that should have answered (a route correction)."),
    sql: str | None = typer.Option(None, "--sql", help="The right SQL (a correction; with `up` and no --sql: `--aspect sql` confirms it)."),
    comment: str | None = typer.Option(None, "--comment", help="Why, in words."),
    aspect: str | None = typer.Option(None, "--aspect", help="What the rating is about: answer (default), route, sql or citation."),
    sources: Path | None = SourcesOption,
    out: Path | None = typer.Option(None, "--out", help="export: the folder for router.jsonl, sql.jsonl and triage.jsonl."),
) -> None:
    """Say whether an answer was right, or export what feedback taught as regression cases for `ragrouter eval`."""
    from engines.feedback.store import FeedbackStore
    from engines.sources import load_sources
    from tools.feedback import FeedbackError, UnknownTraceError, give_feedback

    settings = _settings()
    store = FeedbackStore(ConversationStore(settings.conversations_path))
    if target == "export":
        _export_feedback(store, out or settings.state_dir / "feedback")
        return
    verdicts = _verdicts(None if rating == "none" else rating, aspect, {"route": source, "sql": sql}, comment)
    try:
        given = give_feedback(store, target, verdicts, "cli", load_sources(sources or settings.sources_file), settings.sql_timeout_s)
    except UnknownTraceError as err:
        _fail(ValueError(f"{err} (`ragrouter ask` prints the trace id under each answer)"))
    except (*USER_ERRORS, FeedbackError) as err:
        _fail(err)
    for verdict, row in zip(verdicts, given):
        console.print(
            f"{verdict.aspect}: " + ("feedback taken back" if row is None else "kept; the router and SQL knowledge take it in at their next start")
        )


def _verdicts(rating: str | None, aspect: str | None, corrections: dict[str, str | None], comment: str | None) -> list:
    """The rating (with the comment) on its aspect, each correction on its own: `down --source web` is one verdict on
    the route; `--sql` beside it adds one on the SQL."""
    from tools.feedback import Verdict

    main = aspect or next((name for name, given in corrections.items() if given), "answer")
    return [Verdict(main, rating, corrections.get(main), comment)] + [
        Verdict(name, rating, given) for name, given in corrections.items() if given and name != main
    ]


def _export_feedback(store, folder: Path) -> None:  # noqa: ANN001 (FeedbackStore, imported when used)
    from engines.feedback.cases import router_cases, sql_cases, triage

    try:
        items = store.all()
    except ConversationStoreError as err:
        _fail(err)
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("router", router_cases(items)), ("sql", sql_cases(items)), ("triage", triage(items))):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        console.print(f"{folder / f'{name}.jsonl'}: {len(rows)} {'to look into' if name == 'triage' else 'cases'}")
    console.print(f"[dim]Run them: ragrouter eval router --questions {folder / 'router.jsonl'} --sources YOUR_SOURCES (and sql likewise)[/]")


class Suite(str, Enum):
    router = "router"
    sql = "sql"
    retrieval = "retrieval"
    answers = "answers"
    chat = "chat"
    metadata = "metadata"


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
    postgres: bool = typer.Option(
        False, "--postgres", help="sql only: ours on the SQLite databases and on PostgreSQL copies of them (a throwaway local server), side by side."
    ),
    compression: bool = typer.Option(
        False, "--compression", help="answers only: the plain path with each compression (off, embedding, llm_extract, llm_filter) side by side."
    ),
    rewrite: bool = typer.Option(
        False,
        "--rewrite",
        help="answers only: the documents path over the retrieval suite's collections, as asked and with rewrite: structured, side by side.",
    ),
) -> None:
    """Measure a suite on public data, ours beside LlamaIndex's stock pieces: report.json, report.md, plots."""
    from evals.datasets import EvalDataError
    from evals.run import SUITE_SOURCES, run_suite

    _settings()
    try:
        run_suite(
            suite.value,
            sources or SUITE_SOURCES["retrieval" if rewrite else suite.value],
            questions,
            limit,
            split.value,
            out,
            replay=replay,
            postgres=postgres,
            compression=compression,
            rewrite=rewrite,
        )
    except (*USER_ERRORS, EvalDataError) as err:
        _fail(err)


@app.command()
def ui(port: int = typer.Option(8501, help="Port for the Streamlit app.")) -> None:
    """Start the Streamlit chat app."""
    raise typer.Exit(subprocess.call(streamlit_command(port)))


def streamlit_command(port: int, address: str | None = None) -> list[str]:
    """`streamlit run` on the app, headless, with usage statistics off."""
    script = Path(__file__).with_name("app.py")
    where = ["--server.address", address] if address else []
    options = [*where, "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    return [sys.executable, "-m", "streamlit", "run", str(script), *options]


if __name__ == "__main__":
    app()
