"""Model servers on 127.0.0.1 from the project's own files, standing in for the ones a team scales out to.

`llm_server_command` is llama.cpp's own OpenAI-compatible server (`llama_cpp.server`, the `[server]` extra of
llama-cpp-python) on the local GGUF: the same HTTP API as vLLM, so `RAGROUTER_LLM_BACKEND=openai_like` with its
base URL exercises the client path a vLLM deployment uses. `make serve-llm` runs it; the tests start it the same
way (`running`), and read its log to see the calls arrive.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from engines.settings import Settings

LLM_PORT = 8088
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
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


@contextmanager
def running(command: list[str], ready_url: str, log: Path) -> Iterator[subprocess.Popen]:
    """Start `command` with its output in `log`, wait until `ready_url` answers 200, stop it when the block ends."""
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(ready_url):
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


if __name__ == "__main__":
    cli()
