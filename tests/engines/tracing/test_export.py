"""Export: OTLP JSON lines in the state folder, bad targets refused up front, an endpoint that is down costs a
warning and nothing else. Each test takes OpenInference's handlers off the global dispatcher again."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines.tracing.export import TRACES_FILE, ExportError, flush_export, start_export, stop_export
from engines.tracing.recorder import question, span
from tests.conftest import make_settings


@pytest.fixture(autouse=True)
def _stopped() -> Iterator[None]:
    yield
    stop_export()


def _spans(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [s for line in lines for r in line["resourceSpans"] for scope in r["scopeSpans"] for s in scope["spans"]]


def _attributes(exported: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in exported.get("attributes", [])}


def _ask(text: str) -> str:
    with question(text) as recorded, span("route", question=text) as opened:
        opened.set(chosen="shop", candidates={"shop": 0.91, "web": 0.8})
    return recorded.trace_id


def test_file_export_writes_one_trace_per_question_with_the_route_decision(tmp_path: Path) -> None:
    start_export(make_settings(tmp_path, otel="file"))
    first, second = _ask("How many customers?"), _ask("年假有多少天？")
    flush_export()
    spans = _spans(tmp_path / TRACES_FILE)
    assert {s["traceId"] for s in spans} == {first, second}  # the trace id in `ask --json` is the exported one
    for trace_id in (first, second):
        mine = {s["name"]: s for s in spans if s["traceId"] == trace_id}
        assert set(mine) == {"question", "route"} and mine["route"]["parentSpanId"] == mine["question"]["spanId"]
        route = _attributes(mine["route"])
        assert route["ragrouter.chosen"] == "shop" and json.loads(route["ragrouter.candidates"]) == {"shop": 0.91, "web": 0.8}
        assert route["openinference.span.kind"] == "CHAIN" and "input.value" in route


def test_hidden_inputs_and_outputs_stay_out_of_the_file(tmp_path: Path) -> None:
    start_export(make_settings(tmp_path, otel="file", otel_hide_io=True))
    _ask("A question with a secret in it")
    flush_export()
    text = (tmp_path / TRACES_FILE).read_text(encoding="utf-8")
    assert "secret" not in text and '"ragrouter.chosen"' in text


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "needs OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:6006"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector"}, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL"),
    ],
)
def test_a_bad_otlp_target_is_refused_naming_the_variable(tmp_path: Path, monkeypatch, env: dict, message: str) -> None:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ExportError, match=re.escape(message)):
        start_export(make_settings(tmp_path, otel="otlp"))


def test_a_state_folder_that_cannot_be_written_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(ExportError, match=f"RAGROUTER_OTEL=file cannot write {blocker / TRACES_FILE}"):
        start_export(make_settings(blocker, otel="file"))


def test_an_endpoint_that_is_down_costs_one_warning(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")  # nothing listens on port 9
    start_export(make_settings(tmp_path, otel="otlp"))
    with caplog.at_level(logging.WARNING):
        for n in range(3):
            assert len(_ask(f"question {n}")) == 32
            flush_export()
    failures = [r for r in caplog.records if r.name.startswith("opentelemetry") and r.levelno >= logging.WARNING]
    assert len(failures) == 1 and "tracing export failed" in failures[0].getMessage()
