"""A Milvus server by URI: Milvus Lite's gRPC server started as a process of its own on 127.0.0.1 (standing in
for Milvus standalone: the same pymilvus client path; docs/scaling.md says why). The handbook is ingested into
it and answered from it; a second process ingests into the same server while this one serves, and this one
sees the new document; the server is restarted and the next search succeeds with nothing lost; a server that is
gone is a clear error, in the engine and from the CLI (exit 2)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engines.documents.store import open_index
from engines.milvus import StoreUnavailableError, collection_name
from engines.settings import Settings
from engines.sources import DocumentsSource, load_sources
from tests.conftest import DEMO_SOURCES
from tests.ui.test_cli import run
from tools.ingest import ingest_source
from tools.servers import free_port, milvus_server_command, port_open, running

HANDBOOK = next(s for s in load_sources(DEMO_SOURCES) if isinstance(s, DocumentsSource))
SOURCES = "sources:\n  - name: handbook\n    kind: documents\n    path: {path}\n    description: Company employee handbook and HR policies.\n"
NEW_POLICY = "# Pets at work (2026)\n\nEmployees may bring one calm dog to the office on Fridays, with the team's agreement.\n"


@dataclass
class MilvusServer:
    data: Path
    port: int
    log: Path
    process: ExitStack = field(default_factory=ExitStack)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process.enter_context(running(milvus_server_command(self.data, self.port), port_open(self.port), self.log))

    def stop(self) -> None:
        self.process.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServer]:
    folder = tmp_path_factory.mktemp("milvus-server")
    milvus = MilvusServer(folder / "data", free_port(), folder / "server.log")
    milvus.start()
    yield milvus
    milvus.stop()


@pytest.fixture(scope="module")
def served(server: MilvusServer, tmp_path_factory: pytest.TempPathFactory, embed) -> tuple[Settings, DocumentsSource, Path]:
    """The handbook (a copy, so a document can be added) ingested into the server."""
    folder = tmp_path_factory.mktemp("served")
    shutil.copytree(HANDBOOK.path, folder / "handbook")
    sources = folder / "sources.yaml"
    sources.write_text(SOURCES.format(path=folder / "handbook"))
    settings = Settings(state_dir=folder / "state", milvus_uri=server.uri)
    source = load_sources(sources)[0]
    report = ingest_source(source, settings, embed, lambda: None)
    assert report.chunks_added >= report.documents == 10
    return settings, source, sources


def _ids(settings: Settings, source: DocumentsSource, embed, question: str) -> list[str]:
    return [Path(n.node.ref_doc_id).name for n in open_index(source, settings, embed).as_retriever(similarity_top_k=3).retrieve(question)]


def _rows(settings: Settings, source: DocumentsSource, embed) -> int:
    store = open_index(source, settings, embed).vector_store
    return store.client.query(collection_name(source.name), filter="", output_fields=["count(*)"])[0]["count(*)"]


def test_the_router_answers_from_the_server(served, llm, embed) -> None:
    from tools.build import build_router

    settings, _, sources = served
    trace = build_router(settings, sources, llm=llm, embed=embed).ask("How many days of annual leave do employees get?")
    assert trace.route.chosen == "handbook" and "28" in trace.answer
    assert any("leave-policy" in (p.id or "") for p in trace.passages)


def test_a_second_process_ingests_while_this_one_serves(served, embed, cli_env: dict) -> None:
    settings, source, sources = served
    index = open_index(source, settings, embed)  # this process holds the collection open, as the app does
    (source.path / "pets-at-work-2026.md").write_text(NEW_POLICY)
    env = {**cli_env, "RAGROUTER_STATE_DIR": str(settings.state_dir), "RAGROUTER_MILVUS_URI": settings.milvus_uri}
    result = run(env, "ingest", "--sources", str(sources))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "1 new chunks" in result.stdout + result.stderr
    hits = index.as_retriever(similarity_top_k=3).retrieve("Can I bring my dog to the office?")
    assert Path(hits[0].node.ref_doc_id).name == "pets-at-work-2026.md"


def test_a_restarted_server_answers_the_next_search_and_lost_nothing(server: MilvusServer, served, embed) -> None:
    settings, source, _ = served
    index = open_index(source, settings, embed)
    before = _rows(settings, source, embed)
    server.stop()
    server.start()  # the same port and data folder; this process keeps its client
    hits = index.as_retriever(similarity_top_k=3).retrieve("How many days of annual leave do employees get?")
    assert any("leave-policy" in Path(h.node.ref_doc_id).name for h in hits)
    assert _rows(settings, source, embed) == before


def test_a_server_that_is_gone_is_a_clear_error(served, embed, cli_env: dict) -> None:
    settings, source, sources = served
    gone = settings.model_copy(update={"milvus_uri": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(StoreUnavailableError, match=f"Milvus server {gone.milvus_uri}"):
        open_index(source, gone, embed)
    env = {**cli_env, "RAGROUTER_STATE_DIR": str(settings.state_dir), "RAGROUTER_MILVUS_URI": gone.milvus_uri}
    result = run(env, "ask", "How many days of annual leave do employees get?", "--sources", str(sources))
    assert result.returncode == 2 and f"Milvus server {gone.milvus_uri}" in result.stderr, result.stderr[-2000:]
