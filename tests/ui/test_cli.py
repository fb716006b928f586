"""The `ragrouter` command as a user runs it: clear errors, exit code 2, and stores left unchanged."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engines.settings import DATA_DIR

SHOP = DATA_DIR / "demo" / "shop.sqlite"


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ui.cli", *args], env=env, capture_output=True, text=True, timeout=600)


def _sources(tmp_path: Path, body: str) -> str:
    path = tmp_path / "sources.yaml"
    path.write_text("sources:\n" + body, encoding="utf-8")
    return str(path)


def _sql_and_web(tmp_path: Path, db: Path = SHOP) -> str:
    return _sources(tmp_path, f"  - {{name: shop, kind: sql, path: '{db}'}}\n  - {{name: web, kind: web}}\n")


@pytest.mark.parametrize(("question", "message"), [("", "empty"), ("  ", "empty"), ("x" * 50_000, "limit is")])
def test_bad_question_exits_2(cli_env: dict, question: str, message: str) -> None:
    result = run(cli_env, "ask", question)
    assert result.returncode == 2 and message in result.stderr


BAD_SETTINGS = [
    ("RAGROUTER_CRAG_REWRITES", '["hyde", "guess"]'),
    ("RAGROUTER_SQL_MAX_ATTEMPTS", "9"),
    ("RAGROUTER_CRAG_ANSWER_SUPPORT", "1.5"),
    ("RAGROUTER_CRAG_AMBIGUOUS_SUPPORT", "-0.1"),
    ("RAGROUTER_CRAG_GRADE_COSINE_WEIGHT", "-1"),
    ("RAGROUTER_CRAG_GRADE_COSINE_CENTER", "2"),
    ("RAGROUTER_OTEL", "phoenix"),
]


@pytest.mark.parametrize(("variable", "value"), BAD_SETTINGS)
def test_a_bad_setting_is_named_and_exits_2(cli_env: dict, variable: str, value: str) -> None:
    for command in (["ask", "hello"], ["ingest"], ["eval", "sql"]):
        result = run({**cli_env, variable: value}, *command)
        assert result.returncode == 2 and variable in result.stderr and "Traceback" not in result.stderr


def test_typo_in_sources_file_exits_2(cli_env: dict, tmp_path: Path) -> None:
    sources = _sources(tmp_path, "  - {name: shop, kind: sqll, path: x}\n")
    for command in (["ask", "hello"], ["ingest"]):
        result = run(cli_env, *command, "--sources", sources)
        assert result.returncode == 2 and "sources file" in result.stderr and "sql" in result.stderr


@pytest.mark.parametrize("content", [None, b"this is not sqlite"])
def test_bad_database_file_exits_2_and_writes_nothing(cli_env: dict, tmp_path: Path, content: bytes | None) -> None:
    db = tmp_path / "shop.sqlite"
    if content is not None:
        db.write_bytes(content)
    sources = _sources(
        tmp_path, f"  - {{name: shop, kind: sql, path: '{db}'}}\n  - {{name: docs, kind: documents, path: '{DATA_DIR / 'demo' / 'handbook'}'}}\n"
    )
    result = run(cli_env, "ingest", "--sources", sources)
    assert result.returncode == 2 and ("does not exist" in result.stderr or "not a SQLite" in result.stderr)
    assert not Path(cli_env["RAGROUTER_STATE_DIR"]).exists()


def test_missing_model_says_how_to_get_it(cli_env: dict, tmp_path: Path) -> None:
    cli_env["RAGROUTER_MODEL_PATH"] = str(tmp_path / "absent.gguf")
    result = run(cli_env, "ask", "How many customers are there?", "--sources", _sql_and_web(tmp_path))
    assert result.returncode == 2 and "make model" in result.stderr


def test_locked_milvus_folder_is_named(cli_env: dict, tmp_path: Path) -> None:
    uri = cli_env["RAGROUTER_MILVUS_URI"]
    Path(uri).parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from pymilvus import MilvusClient; import time; MilvusClient({uri!r}); print('ok', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ok"
        sources = _sources(tmp_path, f"  - {{name: docs, kind: documents, path: '{DATA_DIR / 'demo' / 'handbook'}'}}\n")
        result = run(cli_env, "ingest", "--sources", sources)
        assert result.returncode == 2 and "in use by another process" in result.stderr and uri in result.stderr.replace("\n", "")
    finally:
        holder.kill()


def test_unknown_source_exits_2(cli_env: dict, tmp_path: Path) -> None:
    result = run(cli_env, "ask", "hello", "--source", "nope", "--sources", _sql_and_web(tmp_path))
    assert result.returncode == 2 and "unknown source 'nope'" in result.stderr


def test_ask_prints_the_answer_as_it_streams_then_the_route(cli_env: dict, tmp_path: Path) -> None:
    result = run(cli_env, "ask", "How many orders are there?", "--sources", _sql_and_web(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("60") == 1  # the answer (on stdout) streamed once, not printed again
    assert "routed to shop" in result.stderr and "SQL:" in result.stderr  # the route beside it, on stderr


# The keys `ask --json` had before the trace was built from LlamaIndex's instrumentation (commit 04cd707): all stay.
KEYS_BEFORE = {
    *("question", "standalone_question", "conversation", "route", "answer", "sql", "rows", "columns", "sql_attempts", "passages"),
    *("timings_ms", "llm_calls", "model_calls", "web_unavailable", "web_error", "crag", "metadata_query", "declined", "notes"),
}


def test_ask_json_has_the_stable_keys_and_a_tracing_endpoint_that_is_down_changes_nothing(cli_env: dict, tmp_path: Path) -> None:
    down = {**cli_env, "RAGROUTER_OTEL": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces"}  # nothing listens
    result = run(down, "ask", "How many orders are there?", "--json", "--sources", _sql_and_web(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("tracing export failed") <= 1 and "Traceback" not in result.stderr
    trace = json.loads(result.stdout)
    assert KEYS_BEFORE | {"trace_id", "spans"} == set(trace) and len(trace["trace_id"]) == 32
    assert {"total", "route", "answer", "sql"} == set(trace["timings_ms"])
    assert {"chosen", "candidates", "reason", "selector"} <= set(trace["route"])
    assert trace["route"]["chosen"] == "shop" and trace["rows"] == [[60]]
    assert trace["crag"] is None and trace["declined"] is False  # CRAG runs on the documents path only
    assert all({"name", "score"} == set(c) for c in trace["route"]["candidates"])


@pytest.fixture()
def state_env(tmp_path: Path) -> dict[str, str]:
    """A private state folder, for commands that load no model (not marked slow, unlike `cli_env`)."""
    return {**os.environ, "RAGROUTER_STATE_DIR": str(tmp_path / "state"), "RAGROUTER_MILVUS_URI": str(tmp_path / "state" / "milvus" / "cli.db")}


def test_a_malformed_conversation_id_exits_2_before_any_model_loads(state_env: dict, tmp_path: Path) -> None:
    result = run(state_env, "ask", "How many orders are there?", "--conversation", "../x", "--sources", _sql_and_web(tmp_path))
    assert result.returncode == 2 and "not a conversation id" in result.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"RAGROUTER_OTEL": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:6006"},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL",
        ),
        ({"RAGROUTER_OTEL": "otlp"}, "RAGROUTER_OTEL=otlp needs OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ({"RAGROUTER_OTEL": "file", "RAGROUTER_STATE_DIR": str(SHOP)}, "RAGROUTER_OTEL=file cannot write"),  # a file, not a folder
    ],
)
def test_a_tracing_target_that_cannot_work_exits_2_before_any_model_loads(state_env: dict, tmp_path: Path, env: dict, message: str) -> None:
    clean = {k: v for k, v in state_env.items() if not k.startswith("OTEL_")}
    result = run({**clean, **env}, "ask", "How many orders are there?", "--sources", _sql_and_web(tmp_path))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [("show", "nope"), ("delete", "nope"), ("rename", "nope", "A title")])
def test_an_unknown_conversation_exits_2(state_env: dict, command: tuple[str, ...]) -> None:
    result = run(state_env, "conversations", *command)
    assert result.returncode == 2 and "there is no conversation 'nope'" in result.stderr


def test_a_corrupt_history_store_exits_2_naming_it_and_is_left_as_it_was(state_env: dict, tmp_path: Path) -> None:
    path = tmp_path / "state" / "conversations.sqlite"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database" * 64)
    result = run(state_env, "conversations", "list")
    assert result.returncode == 2 and str(path) in result.stderr and "Traceback" not in result.stderr
    assert path.read_bytes() == b"not a database" * 64


def test_ask_continues_a_conversation_and_its_json_carries_the_standalone_question(cli_env: dict, tmp_path: Path) -> None:
    sources = _sql_and_web(tmp_path)
    first = json.loads(run(cli_env, "ask", "How many customers are older than 30?", "--conversation", "c1", "--json", "--sources", sources).stdout)
    result = run(cli_env, "ask", "What about Beijing?", "--conversation", "c1", "--json", "--sources", sources)
    assert result.returncode == 0, result.stderr
    follow_up = json.loads(result.stdout)
    assert first["standalone_question"] == first["question"] and first["conversation"]["turn"] == 1
    assert follow_up["conversation"] == {**follow_up["conversation"], "id": "c1", "turn": 2}
    assert "Beijing" in follow_up["standalone_question"] and "condense" in follow_up["timings_ms"]
    listed = run(cli_env, "conversations", "list")
    assert listed.returncode == 0 and "c1" in listed.stdout and "How many customers are older than 30?" in listed.stdout
    shown = run(cli_env, "conversations", "show", "c1")
    assert "asked as:" in shown.stderr and "What about Beijing?" in shown.stderr
    assert run(cli_env, "conversations", "delete", "c1").returncode == 0
    assert "0 conversations" in run(cli_env, "conversations", "list").stdout


def test_chat_answers_a_follow_up_and_leaves_on_end_of_input(cli_env: dict, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "ui.cli", "chat", "--sources", _sql_and_web(tmp_path)]
    lines = "How many customers are older than 30?\nWhat about Beijing?\n/history\n/new\n"
    result = subprocess.run(command, env=cli_env, input=lines, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "asked as:" in result.stderr and result.stderr.count("routed to shop") == 2
    assert "2. What about Beijing?" in result.stderr and "A new conversation starts" in result.stderr


def test_an_ingest_whose_output_is_not_a_terminal_prints_how_far_it_is(cli_env: dict, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"note{n}.md").write_text(f"# Note {n}\nEmployees get {20 + n} days of leave.\n", encoding="utf-8")
    sources = _sources(tmp_path, f"  - {{name: notes, kind: documents, path: '{docs}', description: 'HR notes'}}\n")
    result = run(cli_env, "ingest", "--sources", sources)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("notes: ") and " of 3 documents" in line]
    assert lines[0].startswith("notes: 0 of 3 documents") and lines[-1].startswith("notes: 3 of 3 documents, 3 chunks (")


def test_describe_shows_the_aliases_a_sources_file_gives_and_refuses_an_unknown_database(state_env: dict, tmp_path: Path) -> None:
    aliases = "aliases: {names: {customers: 客户, customers.city: 城市}, values: {Beijing: 北京}}"
    sources = _sources(tmp_path, f"  - {{name: shop, kind: sql, path: '{SHOP}', {aliases}}}\n  - {{name: web, kind: web}}\n")
    shown = run({**state_env, "RAGROUTER_ALIASES": "false"}, "describe", "--sources", sources)  # what the file gives, no model
    assert shown.returncode == 0 and "客户" in shown.stderr and "北京" in shown.stderr, shown.stderr
    unknown = run(state_env, "describe", "--sources", sources, "--source", "nope")
    assert unknown.returncode == 2 and "no SQL source named 'nope'" in unknown.stderr
