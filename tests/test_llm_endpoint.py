"""The model behind an HTTP endpoint: llama.cpp's own OpenAI-compatible server on the local GGUF, started on
127.0.0.1 as `make serve-llm` starts it, answers one question of each route (`RAGROUTER_LLM_BACKEND=openai_like`);
its log shows the calls arrive. Endpoints that refuse, fail, hang or answer garbage (small real HTTP servers on
127.0.0.1) are clear errors naming the endpoint, in the engine and in the CLI (exit 2), never a hang.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engines.models.endpoint import ModelEndpointError
from engines.models.llm import build_llm
from engines.settings import DATA_DIR, Settings
from engines.sources import DocumentsSource, load_sources
from tests.conftest import DEMO_SOURCES, make_settings
from tests.ui.test_cli import run
from tools.servers import free_port, llm_server_command, running

pytestmark = pytest.mark.slow  # the server loads the local model
SHOP_ONLY = "sources:\n  - name: shop\n    kind: sql\n    path: {path}\n"


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("llm-server") / "server.log"
    port = free_port()
    with running(llm_server_command(Settings(), port, context=8192), f"http://127.0.0.1:{port}/v1/models", log):
        yield f"http://127.0.0.1:{port}/v1", log


def _calls(log: Path) -> int:
    return len(re.findall(r'"POST /v1/(?:chat/)?completions HTTP/1.1" 200', log.read_text(errors="replace")))


@pytest.fixture(scope="module")
def endpoint_settings(tmp_path_factory: pytest.TempPathFactory, llm_server, search_server: str) -> Settings:
    return make_settings(
        tmp_path_factory.mktemp("endpoint-state"),
        llm_backend="openai_like",
        api_base=llm_server[0],
        llm_model="qwen",
        web_backend="searxng",
        searxng_url=search_server,
    )


@pytest.fixture(scope="module")
def endpoint_router(endpoint_settings: Settings, embed):
    from tools.build import build_router
    from tools.ingest import ingest_source

    llm = build_llm(endpoint_settings)
    for source in load_sources(DEMO_SOURCES):
        if isinstance(source, DocumentsSource):
            ingest_source(source, endpoint_settings, embed, lambda: llm)
    return build_router(endpoint_settings, DEMO_SOURCES, llm=llm, embed=embed)


@pytest.mark.parametrize(
    ("question", "route", "expected"),
    [
        ("How many days per week can I work remotely?", "handbook", r"\b(three|3)\b"),
        ("How many customers are older than 30?", "shop", r"\b7\b"),
        ("Who won the 2026 Harbor City marathon, according to the latest news?", "web", "Varga"),
    ],
)
def test_each_route_answers_through_the_endpoint(question: str, route: str, expected: str, endpoint_router, llm_server) -> None:
    from tests.conftest import Heard

    before, heard = _calls(llm_server[1]), Heard()
    trace = endpoint_router.ask(question, listener=heard)
    assert trace.route.chosen == route
    assert re.search(expected, trace.answer, re.I), trace.answer
    assert _calls(llm_server[1]) > before  # the server's own log shows the calls
    if route == "handbook":
        assert len(heard.tokens) > 1 and "".join(heard.tokens).strip() == trace.answer  # streamed from the endpoint


def test_corrective_rag_grades_with_the_endpoints_logprobs(endpoint_settings: Settings, endpoint_router, embed, llm_server) -> None:
    from engines.crag.grader import RetrievalGrader
    from tools.build import build_router

    crag = build_router(endpoint_settings.model_copy(update={"crag": True}), DEMO_SOURCES, llm=endpoint_router.llm, embed=embed)
    trace = crag.ask("How many days of annual leave do employees get?")  # the question the local CRAG test asks
    assert "grade" in trace.crag.actions and "28" in trace.answer and not trace.declined
    # A probability from the endpoint's top_logprobs, not the text fallback's 1 or 0.
    p = RetrievalGrader(endpoint_router.llm).probability("When did the Eiffel Tower open?", "The Eiffel Tower is 330 metres tall.")
    assert 0.0 < p < 1.0


class _Misbehaving(BaseHTTPRequestHandler):
    """An endpoint that fails in the way its path names: /500, /garbage, /slow."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.startswith("/slow"):
            time.sleep(5)
        status, body = (500, b'{"error": {"message": "model crashed"}}') if self.path.startswith("/500") else (200, b"<html>not json</html>")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def misbehaving() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Misbehaving)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/500/v1", "answered HTTP 500"), ("/garbage/v1", "not an OpenAI API reply"), ("/slow/v1", "did not answer in time")],
)
def test_failing_endpoints_are_clear_errors(path: str, reason: str, misbehaving: str, tmp_path: Path) -> None:
    settings = make_settings(tmp_path, llm_backend="openai_like", api_base=misbehaving + path, endpoint_timeout_s=1)
    start = time.monotonic()
    with pytest.raises(ModelEndpointError, match=re.escape(misbehaving + path)) as err:
        build_llm(settings).complete("How many customers are there?")
    assert reason in str(err.value)
    assert time.monotonic() - start < 30  # one retry at most, never a hang


def test_a_refused_connection_exits_2_from_the_cli(cli_env: dict, tmp_path: Path) -> None:
    sources = tmp_path / "sources.yaml"
    sources.write_text(SHOP_ONLY.format(path=DATA_DIR / "demo" / "shop.sqlite"))
    env = {**cli_env, "RAGROUTER_LLM_BACKEND": "openai_like", "RAGROUTER_API_BASE": "http://127.0.0.1:9/v1"}  # the discard port
    result = run(env, "ask", "How many customers are there?", "--sources", str(sources))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "cannot reach the model endpoint http://127.0.0.1:9/v1" in result.stderr


LOAD = [
    ("How many days per week can I work remotely?", "handbook", r"\b(three|3)\b"),
    ("How many days of annual leave do employees get?", "handbook", r"\b28\b"),
    ("国内出差每天的餐补是多少？", "handbook", "300"),
    ("How many customers are older than 30?", "shop", r"\b7\b"),
    ("年龄大于30的客户有多少？", "shop", "7"),
    ("How many orders are there?", "shop", r"\b60\b"),
    ("How many products are there?", "shop", r"\b8\b"),
    ("Who won the 2026 Harbor City marathon, according to the latest news?", "web", "Varga"),
]


def test_eight_questions_at_once_each_keep_their_own_trace(endpoint_router) -> None:
    """No lock around an endpoint: eight threads ask at once (the server takes them in turn, `--interrupt_requests
    False`); each trace holds its own question, route and stages."""
    with ThreadPoolExecutor(max_workers=len(LOAD)) as pool:
        traces = list(pool.map(lambda item: endpoint_router.ask(item[0]), LOAD))
    for (question, route, expected), trace in zip(LOAD, traces):
        assert trace.question == question and trace.route.chosen == route
        assert re.search(expected, trace.answer, re.I), (question, trace.answer)
        if route == "shop":
            assert trace.sql_attempts and not trace.passages and "retrieve" not in trace.timings_ms
        else:
            assert not trace.sql_attempts and trace.passages
            assert ("web" in trace.timings_ms) == (route == "web")


def test_the_api_on_an_endpoint_takes_eight_questions_side_by_side(llm_server, search_server: str, tmp_path: Path) -> None:
    """`ragrouter serve` with the endpoint as its model: eight native streams at once; none is queued, all of them
    start before the first one ends, and each gets its own answer."""
    import httpx

    from tests.ui.test_api import _sources

    port = free_port()
    env = {
        **os.environ,
        "RAGROUTER_STATE_DIR": str(tmp_path / "state"),
        "RAGROUTER_MILVUS_URI": str(tmp_path / "state" / "milvus" / "api.db"),
        "RAGROUTER_LLM_BACKEND": "openai_like",
        "RAGROUTER_API_BASE": llm_server[0],
        "RAGROUTER_LLM_MODEL": "qwen",
        "RAGROUTER_WEB_BACKEND": "searxng",
        "RAGROUTER_SEARXNG_URL": search_server,
    }
    command = [sys.executable, "-m", "ui.cli", "serve", "--port", str(port), "--sources", str(_sources(tmp_path))]
    load = [item for item in LOAD if item[1] != "handbook" and item[0].isascii()]  # this shop has no Chinese description
    load += [
        ("How many customers live in Beijing?", "shop", ""),
        ("Which product is the most expensive?", "shop", ""),
        ("What is the total quantity of all orders?", "shop", ""),
        ("What is the average age of the customers?", "shop", ""),
    ]

    def stream(item: tuple[str, str, str]) -> list[tuple[float, str, dict]]:
        found, kind = [], ""
        with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/ask", json={"question": item[0]}, timeout=600) as reply:
            for line in reply.iter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    found.append((time.monotonic(), kind, json.loads(line.removeprefix("data: "))))
        return found

    with running(command, f"http://127.0.0.1:{port}/docs", tmp_path / "serve.log", env), ThreadPoolExecutor(len(load)) as pool:
        streams = list(pool.map(stream, load))
    assert len(load) == 8 and not any(kind == "queued" for found in streams for _, kind, _ in found)
    assert max(found[0][0] for found in streams) < min(found[-1][0] for found in streams)  # all started before any ended
    for (question, route, expected), found in zip(load, streams):
        trace = next(data for _, kind, data in found if kind == "trace")
        assert trace["question"] == question and trace["route"]["chosen"] == route
        assert re.search(expected, trace["answer"], re.I), (question, trace["answer"])
