"""The router's coverage probe on a local copy of a Milvus Lite collection agrees with Milvus's own search."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from llama_index.core.schema import TextNode

from engines.matching.coverage_probe import coverage_probe, forget_probe_copy, probe_copy_path
from engines.milvus import open_vector_store
from engines.settings import Settings

DIM = 16


def _nodes(rng: np.random.Generator, count: int, start: int = 0) -> list[TextNode]:
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [TextNode(id_=f"n{start + i}", text=f"chunk {start + i}", embedding=v.tolist()) for i, v in enumerate(vectors)]


def _queries(rng: np.random.Generator) -> list[list[float]]:
    queries = rng.normal(size=(20, DIM)).astype(np.float32)
    return (queries / np.linalg.norm(queries, axis=1, keepdims=True)).tolist()


def test_local_copy_scores_as_milvus_does_and_follows_new_chunks(tmp_path: Path) -> None:
    settings = Settings(milvus_uri=str(tmp_path / "milvus.db"), state_dir=tmp_path)
    rng = np.random.default_rng(7)
    store = open_vector_store(settings, "probe_test", DIM, hybrid=False)
    store.add(_nodes(rng, 300))
    copy = probe_copy_path(tmp_path, "probe_test")
    local, server = coverage_probe(store, True, copy), coverage_probe(store, False, copy)
    queries = _queries(rng)
    assert copy.is_file()
    assert np.allclose([local(q) for q in queries], [server(q) for q in queries], atol=1e-5)

    # More chunks change the row count, so the next open copies again instead of using the stale file.
    store.add(_nodes(rng, 50, start=300))
    local, server = coverage_probe(store, True, copy), coverage_probe(store, False, copy)
    assert len(np.load(copy)) == 350
    assert np.allclose([local(q) for q in queries], [server(q) for q in queries], atol=1e-5)

    forget_probe_copy(tmp_path, "probe_test")
    assert not copy.exists()


def test_an_empty_collection_scores_zero(tmp_path: Path) -> None:
    settings = Settings(milvus_uri=str(tmp_path / "milvus.db"), state_dir=tmp_path)
    store = open_vector_store(settings, "empty", DIM, hybrid=False)
    probe = coverage_probe(store, True, probe_copy_path(tmp_path, "empty"))
    assert probe([1.0] + [0.0] * (DIM - 1)) == 0.0
