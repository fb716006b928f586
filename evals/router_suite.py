"""Router suite: does each question go to the source that can answer it, and how long does the decision take?

Ours is the product's configured selector; beside it, on the same tools, descriptions and embeddings, the stock
LlamaIndex selectors: `LLMSingleSelector` (what `RouterQueryEngine.from_defaults` uses; the baseline) and
`EmbeddingSingleSelector`. Only the decision is timed and scored, not the answer.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

import matplotlib.pyplot as plt
import numpy as np
from llama_index.core.base.base_selector import BaseSelector
from llama_index.core.schema import QueryBundle
from llama_index.core.selectors import EmbeddingSingleSelector, LLMSingleSelector
from llama_index.core.tools.types import ToolMetadata

from engines.routing.router import RagRouter
from evals.datasets import EvalDataError
from evals.metrics import latency
from evals.report import Report, latency_histogram
from evals.runlog import RunLog

OURS = "ragrouter"
BASELINE = "stock LLMSingleSelector"
ERROR = "(error)"


def decide(selector: BaseSelector, choices: list[ToolMetadata], question: str) -> dict:
    start = time.perf_counter()
    try:
        chosen = choices[selector.select(choices, QueryBundle(question)).ind].name
    except Exception as err:  # a stock selector's unparsable output is a wrong route, as it would crash the query
        chosen, error = ERROR, f"{type(err).__name__}: {str(err)[:200]}"
    else:
        error = None
    return {"chosen": chosen, "ms": round(1000 * (time.perf_counter() - start), 2), "error": error}


def summarise(records: list[dict], items: list[dict]) -> dict:
    hits = [r["chosen"] == q["expected_source"] for r, q in zip(records, items)]
    by_group: dict[str, list[bool]] = defaultdict(list)
    for hit, q in zip(hits, items):
        by_group[q.get("group", "all")].append(hit)
    return {
        "accuracy": round(float(np.mean(hits)), 4),
        **latency(r["ms"] for r in records),
        "errors": sum(r["chosen"] == ERROR for r in records),
        "by_group": {g: round(float(np.mean(v)), 4) for g, v in by_group.items()},
    }


def _confusion_figure(report: Report, name: str, records: list[dict], items: list[dict], sources: list[str], title: str) -> None:
    labels = sources + ([ERROR] if any(r["chosen"] == ERROR for r in records) else [])
    index = {s: i for i, s in enumerate(labels)}
    matrix = np.zeros((len(sources), len(labels)), dtype=int)
    for r, q in zip(records, items):
        matrix[index[q["expected_source"]], index[r["chosen"]]] += 1
    fig, ax = plt.subplots(figsize=(9, 8))
    shown = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
    ax.imshow(shown, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
    ax.set_yticks(range(len(sources)), sources, fontsize=7)
    ax.set_xlabel("chosen source")
    ax.set_ylabel("expected source")
    ax.set_title(title)
    for (i, j), count in np.ndenumerate(matrix):
        if count:
            ax.text(j, i, str(count), ha="center", va="center", fontsize=6, color="white" if shown[i, j] > 0.5 else "black")
    report.figure(name, fig)


def _confusions(records: list[dict], items: list[dict]) -> list[dict]:
    pairs = Counter((q["expected_source"], r["chosen"]) for r, q in zip(records, items) if r["chosen"] != q["expected_source"])
    return [{"expected": e, "chosen": c, "count": n} for (e, c), n in pairs.most_common(15)]


def run_router_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    choices = [t.tool.metadata for t in router.tools]
    sources = [c.name for c in choices]
    unknown = sorted({q["expected_source"] for q in items} - set(sources))
    if unknown:
        raise EvalDataError(f"the questions expect sources the sources file lacks: {', '.join(unknown)}")
    systems: dict[str, BaseSelector] = {
        OURS: router.selector,
        BASELINE: LLMSingleSelector.from_defaults(llm=router.llm),
        "stock EmbeddingSingleSelector": EmbeddingSingleSelector.from_defaults(embed_model=router.embed),
    }
    keyed = [(f"{i}:{q['question']}", q) for i, q in enumerate(items)]
    results = {name: log.run(name, keyed, lambda q, s=sel: decide(s, choices, q["question"])) for name, sel in systems.items()}
    summaries = {name: summarise(records, items) for name, records in results.items()}
    headline = ("accuracy", "median_ms", "p95_ms")
    report.headline({k: summaries[OURS][k] for k in headline}, {k: summaries[BASELINE][k] for k in headline}, BASELINE)
    report.detail("systems", summaries)
    report.detail("confusions", {name: _confusions(results[name], items) for name in systems})
    groups = list(summaries[OURS]["by_group"])
    rows = ["| selector | accuracy | " + " | ".join(groups) + " | median ms | p95 ms | errors |", "|---" * (len(groups) + 5) + "|"]
    for name, s in summaries.items():
        cells = " | ".join(f"{s['by_group'].get(g, 0):.0%}" for g in groups)
        rows.append(f"| {name} | {s['accuracy']:.1%} | {cells} | {s['median_ms']:,.1f} | {s['p95_ms']:,.1f} | {s['errors']} |")
    report.section("## Every selector on the same questions\n\n" + "\n".join(rows))
    report.section(
        "## Most frequent wrong routes (ours)\n\n"
        + "\n".join(f"- {c['expected']} → {c['chosen']}: {c['count']}" for c in _confusions(results[OURS], items))
    )
    _confusion_figure(report, "confusion_ours.png", results[OURS], items, sources, f"{OURS}: expected vs chosen")
    _confusion_figure(report, "confusion_baseline.png", results[BASELINE], items, sources, f"{BASELINE}: expected vs chosen")
    latency_histogram(report, "route_latency.png", {n: [r["ms"] for r in rs] for n, rs in results.items()}, "route decision time")
