"""Rerank on one torch thread (the process's default) and on every core, on the same passages, alternating.

    python -m bench.rerank_cores [--questions 30]

SciFact dev claims, each with 20 SciFact abstracts (the documents path reranks its top 20), scored by the
documents path's reranker (`ColbertRerankOnCores`) and by the stock `ColbertRerank` it extends; the orders
must be the same. Prints medians, p95 and the ratio.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.postprocessor.colbert_rerank import ColbertRerank

import engines  # noqa: F401  (offline, one thread)
from engines.documents.rerank import build_reranker
from engines.settings import Settings
from evals.metrics import latency

DEPTH = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "eval")
    parser.add_argument("--questions", type=int, default=30)
    args = parser.parse_args()
    corpus = [f"{r['title']}\n{r['text']}" for r in map(json.loads, (args.eval_dir / "scifact" / "corpus.jsonl").open())]
    claims = [json.loads(line)["text"] for line in (args.eval_dir / "scifact" / "queries.jsonl").open()][: args.questions]
    cores = build_reranker(Settings(answer_top_n=DEPTH))
    one = ColbertRerank(top_n=DEPTH, model=cores.model, tokenizer=cores.model, device="cpu", keep_retrieval_score=True)
    times: dict[str, list[float]] = {"one thread": [], "every core": []}
    for n, claim in enumerate(claims):
        passages = corpus[n * DEPTH : (n + 1) * DEPTH]
        orders = {}
        for name, reranker in (("one thread", one), ("every core", cores))[:: 1 if n % 2 else -1]:
            nodes = [NodeWithScore(node=TextNode(text=p, id_=str(i)), score=0.0) for i, p in enumerate(passages)]
            start = time.perf_counter()
            orders[name] = [x.node.node_id for x in reranker.postprocess_nodes(nodes, QueryBundle(claim))]
            times[name].append(1000 * (time.perf_counter() - start))
        assert orders["one thread"] == orders["every core"], claim
    summary = {name: latency(ms) for name, ms in times.items()}
    summary["ratio_median"] = round(summary["every core"]["median_ms"] / summary["one thread"]["median_ms"], 3)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
