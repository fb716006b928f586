"""Embeddings behind an endpoint: the project's embedding model served over the OpenAI embeddings API on
127.0.0.1 (`make serve-embeddings`, tools/servers.py), and the demo handbook ingested through it, retrieve
exactly what the in-process model retrieves for a fixed set of English and Chinese questions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engines.documents.store import open_index
from engines.models.embeddings import settings_embedding
from engines.models.endpoint import ModelEndpointError
from engines.settings import Settings
from engines.sources import DocumentsSource, load_sources
from tests.conftest import DEMO_SOURCES, make_settings
from tools.ingest import ingest_source
from tools.servers import embeddings_server_command, free_port, running

QUESTIONS = [
    "How many days per week can I work remotely?",
    "How many days of annual leave do employees get?",
    "What is the daily meal allowance on a business trip?",
    "Who approves overtime?",
    "国内出差每天的餐补是多少？",
    "新员工入职第一天要做什么？",
    "密码多久需要更换一次？",
    "弹性工作时间是怎样规定的？",
]


def _no_model() -> None:
    raise AssertionError("the handbook has its own description: ingest needs no model")


@pytest.fixture(scope="module")
def embeddings_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("embeddings-server") / "server.log"
    port = free_port()
    with running(embeddings_server_command(port), f"http://127.0.0.1:{port}/v1/models", log):
        yield f"http://127.0.0.1:{port}/v1", log


def _retrieved(settings: Settings, embed) -> dict[str, list[tuple[str, float]]]:
    handbook = next(s for s in load_sources(DEMO_SOURCES) if isinstance(s, DocumentsSource))
    ingest_source(handbook, settings, embed, _no_model)
    retriever = open_index(handbook, settings, embed).as_retriever(similarity_top_k=5)
    # Chunk ids are new at each ingest: a hit is its document and its text.
    return {q: [(n.node.ref_doc_id, n.node.get_content(), round(n.score, 5)) for n in retriever.retrieve(q)] for q in QUESTIONS}


def test_the_endpoint_retrieves_what_the_local_model_retrieves(embeddings_server, embed, tmp_path: Path) -> None:
    url, log = embeddings_server
    settings = make_settings(tmp_path / "endpoint", embedding_backend="openai_like", embed_api_base=url)
    through_endpoint = _retrieved(settings, settings_embedding(settings))
    in_process = _retrieved(make_settings(tmp_path / "local"), embed)
    assert through_endpoint == in_process
    assert all(len(hits) == 5 for hits in in_process.values())
    assert log.read_text().count('"POST /v1/embeddings HTTP/1.1" 200') >= len(QUESTIONS)  # the vectors came over HTTP


def test_an_unreachable_embeddings_endpoint_is_a_clear_error(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, embedding_backend="openai_like", embed_api_base="http://127.0.0.1:9/v1", endpoint_timeout_s=2)
    with pytest.raises(ModelEndpointError, match="cannot reach the model endpoint http://127.0.0.1:9/v1"):
        settings_embedding(settings).get_query_embedding("How many days of annual leave?")


def test_the_endpoint_backend_needs_a_base_url(tmp_path: Path) -> None:
    with pytest.raises(ModelEndpointError, match="RAGROUTER_EMBED_API_BASE"):
        settings_embedding(make_settings(tmp_path, embedding_backend="openai_like"))
