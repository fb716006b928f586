"""Shared fixtures: real models, a real Milvus Lite folder per test session, and a local search server."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import engines  # noqa: F401  (sets the offline / one-thread environment first)
from engines.models.embeddings import build_embedding
from engines.settings import DATA_DIR, Settings
from evals.postgres import Cluster, PostgresUnavailable, throwaway_cluster

DEMO_SOURCES = DATA_DIR / "sources.yaml"
# Every router a test builds in a new state folder would have the model write its databases' aliases (about 15 s a
# database), in this process and in the CLI and server subprocesses that inherit the environment: off, except in
# tests/test_crosslingual.py, which turns them on for the database it builds.
os.environ.setdefault("RAGROUTER_ALIASES", "false")
# A test that needs one of these loads the local model (directly, through the router, or in a CLI subprocess).
SLOW_FIXTURES = {"llm", "router", "cli_env", "served"}  # served: tests/ui/test_api.py's server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that load the local model as slow, so `make test-fast` can leave them out."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


# What the local SearXNG-compatible server answers: a fact no model knows, so a right answer proves the path.
SEARCH_RESULTS = [
    {
        "title": "Harbor City marathon 2026 results",
        "url": "http://127.0.0.1/news/marathon-2026",
        "content": "The 2026 Harbor City marathon was won by Ilse Varga in a time of 2 hours 9 minutes.",
    },
    {
        "title": "Harbor City weather",
        "url": "http://127.0.0.1/news/weather",
        "content": "Harbor City expects light rain on race day.",
    },
]


class _SearxHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"query": self.path, "results": SEARCH_RESULTS}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def search_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SearxHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class Heard:
    """A listener that keeps what it was told."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.begins = 0
        self.withdrawn: str | None = None
        self.shown_rows: list[tuple] | None = None

    def begin(self) -> None:
        self.begins += 1

    def token(self, delta: str) -> None:
        self.tokens.append(delta)

    def withdraw(self, message: str) -> None:
        self.withdrawn = message

    def rows(self, sql: str, columns: list[str], rows: list[tuple]) -> None:
        self.shown_rows = rows


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """A throwaway PostgreSQL server on 127.0.0.1 for the session (`make postgres` installs Debian's)."""
    try:
        with throwaway_cluster() as cluster:
            yield cluster
    except PostgresUnavailable as err:
        pytest.skip(f"no PostgreSQL server to test against: {err}")


@pytest.fixture(scope="session")
def embed():
    return build_embedding("e5")


def make_settings(state: Path, **overrides: object) -> Settings:
    return Settings(state_dir=state, milvus_uri=str(state / "milvus" / "test.db"), **overrides)


@pytest.fixture(scope="session")
def demo_settings(tmp_path_factory: pytest.TempPathFactory, search_server: str) -> Settings:
    return make_settings(tmp_path_factory.mktemp("state"), web_backend="searxng", searxng_url=search_server)


@pytest.fixture(scope="session")
def llm(demo_settings: Settings):
    from engines.models.llm import build_llm

    return build_llm(demo_settings)


@pytest.fixture(scope="session")
def router(demo_settings: Settings, llm, embed):
    from engines.sources import DocumentsSource, load_sources
    from tools.build import build_router
    from tools.ingest import ingest_source

    for source in load_sources(DEMO_SOURCES):
        if isinstance(source, DocumentsSource):
            ingest_source(source, demo_settings, embed, lambda: llm)
    return build_router(demo_settings, DEMO_SOURCES, llm=llm, embed=embed)


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the CLI in a subprocess against a private state folder."""
    env = dict(os.environ)
    env["RAGROUTER_STATE_DIR"] = str(tmp_path / "state")
    env["RAGROUTER_MILVUS_URI"] = str(tmp_path / "state" / "milvus" / "cli.db")
    return env
