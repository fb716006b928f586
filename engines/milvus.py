"""Milvus: where document collections and SQL knowledge live, a Lite file by default or a server by URI."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult
from llama_index.vector_stores.milvus import MilvusVectorStore
from llama_index.vector_stores.milvus.utils import BM25BuiltInFunction
from pymilvus.exceptions import MilvusException

from engines.settings import Settings

# jieba segments Chinese into words; English words pass through it whole, lowercase makes BM25 case-blind.
BM25_ANALYZER = {"tokenizer": "jieba", "filter": ["lowercase"]}
# pymilvus pings every 10 s even with no call in flight; Milvus Lite answers that with GOAWAY "too_many_pings",
# and after minutes of model work without a Milvus call the shared channel fails new calls (seen in tests).
LITE_GRPC_OPTIONS = {"grpc.keepalive_permit_without_calls": 0, "grpc.keepalive_time_ms": 300_000}


class StoreLockedError(RuntimeError):
    """Milvus Lite's data folder is held by another process."""


class StoreUnavailableError(RuntimeError):
    """The Milvus server cannot be reached or refused a call; the message names it."""


# Milvus's answer to a search on a collection that is not loaded: a restarted server holds every collection
# released until a client loads it again.
RELEASED = 101


class ServerMilvusVectorStore(MilvusVectorStore):
    """MilvusVectorStore that outlives a restart of its server: pymilvus reconnects on its own, but a restarted
    server holds the collection released, so a search is retried once after loading it; any other failure is a
    StoreUnavailableError naming the server rather than pymilvus's own exception."""

    server_uri: str = ""  # the stock `uri` field keeps its Lite default when the client is given a server

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        with _server_errors(self):
            try:
                return super().query(query, **kwargs)
            except MilvusException as err:
                if err.code != RELEASED:
                    raise
                self.client.load_collection(self.collection_name)
                return super().query(query, **kwargs)

    def add(self, nodes: list[BaseNode], **add_kwargs: Any) -> list[str]:
        with _server_errors(self):
            return super().add(nodes, **add_kwargs)


@contextmanager
def _server_errors(store: ServerMilvusVectorStore) -> Iterator[None]:
    try:
        yield
    except MilvusException as err:
        raise StoreUnavailableError(f"the Milvus server {store.server_uri} failed: {err.message}") from err


def collection_name(source_name: str) -> str:
    return "rr_" + source_name.replace("-", "_")


def _locked_elsewhere(data_dir: Path) -> bool:
    """Probe the lock Milvus Lite takes on its data folder (the .db path is a folder) without keeping it."""
    import fcntl

    from milvus_lite.db import LOCK_FILENAME

    lock = data_dir / LOCK_FILENAME
    if not lock.exists():
        return False
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def is_lite(uri: str) -> bool:
    """A Milvus Lite file path, as opposed to a server URI (http://, https://, tcp://)."""
    return "://" not in uri


def open_vector_store(settings: Settings, source_name: str, dim: int, hybrid: bool = True) -> MilvusVectorStore:
    """Open (or create) the source's collection; a Milvus Lite file in use elsewhere becomes a clear error.

    `hybrid` adds Milvus's built-in BM25 beside the dense vectors (document collections); without it, dense only.
    """
    sparse = {
        "enable_sparse": True,
        "sparse_embedding_function": BM25BuiltInFunction(analyzer_params=BM25_ANALYZER),
        "hybrid_ranker": "RRFRanker",
        "hybrid_ranker_params": {"k": 60},
    }
    uri = settings.milvus_uri
    if is_lite(uri):
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
    store_class = MilvusVectorStore if is_lite(uri) else ServerMilvusVectorStore
    try:
        store = store_class(
            uri=uri,
            token=settings.milvus_token,
            collection_name=collection_name(source_name),
            dim=dim,
            overwrite=False,
            similarity_metric="IP",
            **(sparse if hybrid else {}),
            **({"grpc_options": LITE_GRPC_OPTIONS} if is_lite(uri) else {}),
        )
    except Exception as err:  # pymilvus reports a locked Lite file only as "Open local milvus failed"
        if is_lite(uri) and _locked_elsewhere(Path(uri)):
            raise StoreLockedError(
                f"The Milvus Lite data folder {uri} is in use by another process (a running `ragrouter ui`, `ingest` "
                "or `ask`?). Stop that process, or point RAGROUTER_MILVUS_URI at another file or a Milvus server."
            ) from err
        if not is_lite(uri) and isinstance(err, MilvusException):
            raise StoreUnavailableError(f"cannot use the Milvus server {uri} (RAGROUTER_MILVUS_URI): {err.message}") from err
        raise
    if isinstance(store, ServerMilvusVectorStore):
        store.server_uri = uri  # MilvusVectorStore's constructor passes on only its own fields
    # Milvus Lite reopens collections released; searching one needs it loaded.
    store.client.load_collection(store.collection_name)
    return store
