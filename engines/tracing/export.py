"""Every question's spans sent on as OpenTelemetry spans in OpenInference's conventions (RAGROUTER_OTEL).

OpenInference's LlamaIndex instrumentor turns LlamaIndex's spans (and ours, opened through the same dispatcher:
engines/tracing/recorder.py) into OpenTelemetry spans; this module only chooses where they go: OTLP JSON lines in
the state folder, or any OTLP/HTTP endpoint named by the standard OTEL_EXPORTER_OTLP_* variables. A batching
processor with a bounded queue sends them from its own thread, so an endpoint that is down or slow costs the
question nothing; its failures are logged once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from engines.settings import Settings

if TYPE_CHECKING:  # the SDK and OpenInference load only when export is on: `ragrouter ask` starts without them
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
TRACES_FILE = "traces.jsonl"
# An endpoint that does not answer holds a batch this long, then drops it (the SDK's default is 10 s per try).
EXPORT_TIMEOUT_S = 5
log = logging.getLogger(__name__)


class ExportError(ValueError):
    """Tracing export cannot start as configured; the message names the setting."""


@dataclass
class _Export:
    target: tuple[str, str]  # (RAGROUTER_OTEL, where to)
    provider: TracerProvider


_running: _Export | None = None


def start_export(settings: Settings) -> None:
    """Send spans where RAGROUTER_OTEL says, once per process (another destination later is an error). Bad settings
    fail here, before anything is answered."""
    global _running
    if settings.otel == "off":
        return
    target = (settings.otel, _target(settings))
    if _running is not None:
        if _running.target != target:
            raise ExportError(f"tracing export already goes to {_running.target[1]}; it cannot change within one process")
        return
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = _file_exporter(settings.state_dir) if settings.otel == "file" else _otlp_exporter(target[1])
    provider = TracerProvider(resource=Resource.create({"service.name": "ragrouter"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=4096, export_timeout_millis=EXPORT_TIMEOUT_S * 1000))
    config = TraceConfig(hide_inputs=settings.otel_hide_io, hide_outputs=settings.otel_hide_io)
    LlamaIndexInstrumentor().instrument(tracer_provider=provider, config=config)
    _warn_once("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.sdk.trace.export", "opentelemetry.exporter.otlp.json.file")
    _running = _Export(target, provider)


@contextmanager
def unexported() -> Iterator[None]:
    """What runs inside is not exported (start-up work, such as embedding the sources' profiles: no question's)."""
    if _running is None:
        yield
        return
    from openinference.instrumentation import suppress_tracing

    with suppress_tracing():
        yield


def flush_export() -> None:
    """Send what is queued now (the process also does at exit)."""
    if _running is not None:
        _running.provider.force_flush(EXPORT_TIMEOUT_S * 1000)


def stop_export() -> None:
    """Flush, stop, and take OpenInference's handlers off LlamaIndex's dispatcher (they are global)."""
    global _running
    if _running is not None:
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

        LlamaIndexInstrumentor().uninstrument()
        _running.provider.shutdown()
        _running = None


def _target(settings: Settings) -> str:
    if settings.otel == "file":
        return str(settings.state_dir / TRACES_FILE)
    for name in ENDPOINT_VARIABLES:
        if value := os.environ.get(name):
            url = urlparse(value)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ExportError(f"{name} must be an http(s) URL such as http://127.0.0.1:6006/v1/traces; it is {value!r}")
            return value if name == ENDPOINT_VARIABLES[0] else value.rstrip("/") + "/v1/traces"
    raise ExportError("RAGROUTER_OTEL=otlp needs OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (e.g. http://127.0.0.1:6006/v1/traces for Phoenix)")


def _file_exporter(state_dir: Path) -> SpanExporter:
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter

    path = state_dir / TRACES_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as err:
        raise ExportError(f"RAGROUTER_OTEL=file cannot write {path}: {err.strerror or err}") from err
    return FileSpanExporter(path)


def _otlp_exporter(endpoint: str) -> SpanExporter:
    # Headers (OTEL_EXPORTER_OTLP_TRACES_HEADERS / _HEADERS) are read by the exporter itself.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S)


class _Once(logging.Filter):
    """Lets the first warning through; the exporter would log one per batch for as long as its endpoint is down."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if self.seen:
            return False
        self.seen = True
        record.msg = f"tracing export failed (further failures are not logged): {record.msg}"
        return True


def _warn_once(*loggers: str) -> None:
    once = _Once()
    for name in loggers:
        logging.getLogger(name).addFilter(once)
