"""A real Arize Phoenix (`make phoenix`) on 127.0.0.1 receives each question as one trace: the route decision with
every candidate's score, the SQL statement, the model calls with their token counts; read back from Phoenix's own
REST API."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines.tracing.export import flush_export, start_export, stop_export
from tools.servers import PHOENIX, free_port, phoenix_server, running

pytestmark = pytest.mark.skipif(not PHOENIX.exists(), reason="Phoenix is not installed: `make phoenix`")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    command, env = phoenix_server(folder, port)
    with running(command, f"http://127.0.0.1:{port}/healthz", folder / "phoenix.log", env):
        yield f"http://127.0.0.1:{port}"


def _spans(phoenix: str, trace_id: str) -> list[dict]:
    """Every span of the trace, once Phoenix has stored its root (it stores what it receives in batches, a moment
    after the export returns)."""
    deadline = time.monotonic() + 60
    spans = _stored(phoenix, trace_id)
    while not any(s["name"] == "question" for s in spans) and time.monotonic() < deadline:
        time.sleep(0.5)
        spans = _stored(phoenix, trace_id)
    return spans


def _stored(phoenix: str, trace_id: str) -> list[dict]:
    """Every span Phoenix holds of the trace now, page by page."""
    spans, cursor = [], ""
    while True:
        url = f"{phoenix}/v1/projects/default/spans?trace_id={trace_id}&limit=1000" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(url, timeout=10) as reply:
            page = json.loads(reply.read())
        spans += page["data"]
        if not (cursor := page.get("next_cursor")):
            return spans


def test_a_sql_and_a_documents_question_arrive_in_phoenix_as_one_trace_each(phoenix: str, router, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{phoenix}/v1/traces")
    start_export(router.settings.model_copy(update={"otel": "otlp"}))
    try:
        sql = router.ask("How many customers are older than 30?")
        docs = router.ask("How many days of annual leave do employees get?")
        flush_export()
    finally:
        stop_export()
    assert sql.trace_id != docs.trace_id
    sources = {t.source.name for t in router.tools}
    for trace in (sql, docs):
        spans = _spans(phoenix, trace.trace_id)
        roots = [s for s in spans if not s["parent_id"]]
        assert [r["name"] for r in roots] == ["question"]
        (route,) = [s for s in spans if s["name"] == "route"]
        assert route["attributes"]["ragrouter.chosen"] == trace.route.chosen
        assert set(json.loads(route["attributes"]["ragrouter.candidates"])) == sources
        llm = {s["context"]["span_id"]: s for s in spans if s["span_kind"] == "LLM"}
        calls = [s for s in llm.values() if s["parent_id"] not in llm]  # predict() around complete() is one call
        innermost = [s for s in llm.values() if not any(o["parent_id"] == s["context"]["span_id"] for o in llm.values())]
        assert len(calls) == trace.llm_calls > 0 and all(s["attributes"]["llm.token_count.prompt"] > 0 for s in innermost)
    attempts = [s for s in _spans(phoenix, sql.trace_id) if s["name"] == "sql"]
    assert attempts[-1]["attributes"]["ragrouter.statement"] == sql.sql and attempts[-1]["attributes"]["ragrouter.verdict"] == "ran"
    assert any(s["name"] == "retrieve" for s in _spans(phoenix, docs.trace_id))
