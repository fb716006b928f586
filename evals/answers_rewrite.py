"""The answers suite through retrieval, with the question as asked and with the structured rewrite
(`ragrouter eval answers --rewrite`). The rewrite changes what is retrieved, so the given passages of the plain
answers suite cannot show it: here each answerable question whose passages belong to a collection of the retrieval
suite (CMRC2018's paragraphs, RGB zh's pooled passages of its split) is asked of the documents path over that whole
collection, once as asked and once with `rewrite: structured`, everything else as configured. Per choice: answer
accuracy, the share whose gold answer is in the passages the model reads, latency, and how often each guard fired."""

from __future__ import annotations

import time
from collections import defaultdict

from engines.documents.engine import build_documents_engine
from engines.routing.router import RagRouter
from engines.tracing.recorder import recording
from evals.answers_suite import correct_answer
from evals.metrics import contains_answer, latency, share
from evals.report import Report
from evals.runlog import RunLog
from tools.build import built

CHOICES = ("off", "structured")
# The answers suite's sets that a retrieval-suite collection holds: set -> collection name (for the split).
COLLECTIONS = {"cmrc2018": "cmrc2018", "rgb-zh": "rgb_zh_{split}"}
GUARDS = {"is short": "short", "could not be used": "unreadable", "results stand": "fell back", "Structured rewrite: rewritten": "kept"}


def retrievable(items: list[dict]) -> list[dict]:
    """The answerable questions whose passages a retrieval-suite collection holds."""
    return [q for q in items if q["answerable"] and q["set"] in COLLECTIONS]


def _guard(notes: list[str]) -> str | None:
    return next((name for cue, name in GUARDS.items() if any(cue in n for n in notes)), None)


def _measure(router: RagRouter, rewrite: str, item: dict, split: str) -> dict:
    tool = built(router, COLLECTIONS[item["set"]].format(split=split))
    settings = router.settings.model_copy(update={"rewrite": rewrite})
    engine = build_documents_engine(tool.index, settings, router.llm, router.embed, tool.source.language)
    start = time.perf_counter()
    with recording() as clock:
        response = engine.query(item["question"])
    answer = str(response.response or "").strip()
    read = " ".join(n.node.get_content() for n in response.source_nodes)
    return {
        "answer": answer,
        "ms": round(1000 * (time.perf_counter() - start), 1),
        "correct": correct_answer(answer, item),
        "gold_read": bool(contains_answer(read, [a for g in item["answers"] for a in (g if isinstance(g, list) else [g])])),
        "guard": _guard(clock.notes),
        "notes": clock.notes,
    }


def _figures(records: list[dict], items: list[dict]) -> dict:
    by_set: dict[str, list[dict]] = defaultdict(list)
    for r, q in zip(records, items):
        by_set[q["set"]].append(r)
    return {
        "answer_accuracy": share([r["correct"] for r in records]),
        "gold_read": share([r["gold_read"] for r in records]),
        **latency(r["ms"] for r in records),
        "guards": {g: sum(1 for r in records if r["guard"] == g) for g in set(GUARDS.values())},
        "by_set": {name: {"n": len(rs), "accuracy": share([r["correct"] for r in rs])} for name, rs in by_set.items()},
    }


def run_rewrite_comparison(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    keyed = [(f"{i}:{q['set']}:{q['question']}", q) for i, q in enumerate(items)]
    figures = {c: _figures(log.run(f"rewrite={c}", keyed, lambda q, c=c: _measure(router, c, q, report.split)), items) for c in CHOICES}
    headline = ("answer_accuracy", "gold_read", "median_ms", "p95_ms")
    report.headline(
        {k: figures["structured"][k] for k in headline}, {k: figures["off"][k] for k in headline}, "as asked", system="rewrite=structured"
    )
    report.detail("rewrites", figures)
    rows = ["| rewrite | answer right | gold answer read | median ms | p95 ms |", "|---|---|---|---|---|"]
    rows += [f"| {c} | {f['answer_accuracy']} | {f['gold_read']} | {f['median_ms']:,.0f} | {f['p95_ms']:,.0f} |" for c, f in figures.items()]
    per_set = ["| set | n | right: as asked / rewritten |", "|---|---|---|"]
    per_set += [
        f"| {s} | {v['n']} | {v['accuracy']} / {figures['structured']['by_set'][s]['accuracy']} |" for s, v in figures["off"]["by_set"].items()
    ]
    guards = figures["structured"]["guards"]
    report.section(
        "## The documents path over each collection, as asked and rewritten\n\n" + "\n".join(rows) + "\n\n" + "\n".join(per_set) + "\n\n"
        f"Guards with the rewrite on: kept {guards['kept']}, fell back to the question's results {guards['fell back']}, "
        f"question too short {guards['short']}, reply unreadable {guards['unreadable']}. `gold answer read`: the gold answer "
        "is in the passages the model reads (after compression)."
    )
