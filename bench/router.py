"""How well and how fast does the default selector route? Dev questions over the reference source set.

    python -m bench.router [--eval-dir ../shared/eval] [--per-set 150] [--llm]

Questions (dev splits only): Spider dev questions -> their db_id, SciFact dev claims -> scifact, CMRC2018
questions of even-index paragraphs -> cmrc2018, RGB en_fact and zh_refine dev (news questions) -> web.
Sources: data/eval-sources.yaml (22 sources), ingested first with
`ragrouter ingest --sources data/eval-sources.yaml`. Compared in the same run on the same embeddings and tool
descriptions: the product router's selector and LlamaIndex's stock EmbeddingSingleSelector (and, with --llm,
the stock LLMSingleSelector with the local model, which takes seconds per question).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np
from llama_index.core.base.base_selector import BaseSelector
from llama_index.core.schema import QueryBundle
from llama_index.core.selectors import EmbeddingSingleSelector, LLMSingleSelector
from llama_index.core.tools.types import ToolMetadata

import engines  # noqa: F401  (offline, one thread)
from engines.router import RagRouter
from engines.settings import DATA_DIR, Settings


def questions(eval_dir: Path, per_set: int) -> list[tuple[str, str, str]]:
    """(question, expected source, group) from the dev splits, `per_set` per group at most (seed 0)."""
    rng = random.Random(0)
    spider = [(q["question"], q["db_id"], "sql-en") for q in json.loads((eval_dir / "spider" / "dev.json").read_text())]
    scifact_dev = {line.split()[0] for line in list((eval_dir / "scifact" / "qrels" / "dev.tsv").open())[1:]}
    scifact = [(q["text"], "scifact", "docs-en") for q in map(json.loads, (eval_dir / "scifact" / "queries.jsonl").open()) if q["_id"] in scifact_dev]
    cmrc_data = json.loads((eval_dir / "cmrc2018" / "cmrc2018_dev.json").read_text())["data"]
    cmrc = [(item["paragraphs"][0]["qas"][0]["question"], "cmrc2018", "docs-zh") for item in cmrc_data[::2]]
    web_en = [(json.loads(l)["query"], "web", "web-en") for l in (eval_dir / "rgb" / "en_fact.jsonl").open()]
    web_zh = [(json.loads(l)["query"], "web", "web-zh") for l in (eval_dir / "rgb" / "zh_refine.dev.jsonl").open()]
    picked = []
    for group in (spider, scifact, cmrc, web_en, web_zh):
        picked += rng.sample(group, min(per_set, len(group)))
    return picked


def run(selector: BaseSelector, choices: list[ToolMetadata], items: list[tuple[str, str, str]]) -> dict:
    right, times, by_group, confusions = 0, [], Counter(), Counter()
    for question, expected, group in items:
        start = time.perf_counter()
        try:
            chosen = choices[selector.select(choices, QueryBundle(question)).ind].name
        except Exception:  # a stock selector's unparsable output counts as a wrong route
            chosen = "(error)"
        times.append(1000 * (time.perf_counter() - start))
        hit = chosen == expected
        right += hit
        by_group[group] += hit
        if not hit:
            confusions[(expected if expected in ("scifact", "cmrc2018", "web") else "sql", chosen)] += 1
    groups = Counter(g for _, _, g in items)
    return {
        "accuracy": right / len(items),
        "by_group": {g: by_group[g] / n for g, n in groups.items()},
        "median_ms": statistics.median(times),
        "p95_ms": float(np.percentile(times, 95)),
        "top_confusions": confusions.most_common(5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "eval")
    parser.add_argument("--per-set", type=int, default=150)
    parser.add_argument("--llm", action="store_true", help="also run the stock LLMSingleSelector (slow)")
    parser.add_argument("--skip-stock", action="store_true", help="only ragrouter's selector (for quick tuning runs)")
    args = parser.parse_args()
    router = RagRouter(Settings(), DATA_DIR / "eval-sources.yaml")
    choices = [t.tool.metadata for t in router.tools]
    items = questions(args.eval_dir, args.per_set)
    print(f"{len(items)} questions over {len(choices)} sources; groups {dict(Counter(g for *_, g in items))}")
    selectors: dict[str, BaseSelector] = {"ragrouter ProfileEmbeddingSelector": router.embedding_selector}
    if not args.skip_stock:
        selectors["stock EmbeddingSingleSelector"] = EmbeddingSingleSelector.from_defaults(embed_model=router.embed)
    if args.llm:
        selectors["stock LLMSingleSelector"] = LLMSingleSelector.from_defaults(llm=router.llm)
    for name, selector in selectors.items():
        result = run(selector, choices, items)
        groups = ", ".join(f"{g} {v:.0%}" for g, v in result["by_group"].items())
        print(f"{name}: accuracy {result['accuracy']:.1%} ({groups}); median {result['median_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms")
        print(f"  most frequent wrong routes (expected, chosen): {result['top_confusions']}", flush=True)


if __name__ == "__main__":
    main()
