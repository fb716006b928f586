"""Answers suite: given the passages, is the answer right, declined when it should be, and faithful to them?

Sets: RGB noise robustness (positive plus negative passages; the answer must contain every gold answer) and
negative rejection (negative passages only; the answer must decline), SQuAD 2.0 subset (unanswerable
questions must be declined) and CMRC2018 (short-answer F1). Ours answers as the documents path does
(compression, then the citation prompt); the baseline is LlamaIndex's stock query engine over the same
passages (default compact synthesizer and prompts). Faithfulness: LlamaIndex's FaithfulnessEvaluator with
the local model as judge, over the answers that did not decline; beside it, with no model, the share of those
answers whose every added word is in the passages they were judged against (`word_supported`).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from llama_index.core import SummaryIndex
from llama_index.core.evaluation import FaithfulnessEvaluator
from llama_index.core.query_engine import BaseQueryEngine
from llama_index.core.schema import TextNode

from engines.answers.declines import declines
from engines.answers.output_guard import load_output_guard
from engines.crag.workflow import CorrectiveQueryEngine, CorrectiveRAG, answer_bar
from engines.documents.engine import build_answer_engine
from engines.routing.router import RagRouter
from engines.trace import RESULT
from engines.tracing.recorder import recording
from evals.metrics import contains_answer, f1, latency, share, word_support
from evals.report import Report, latency_histogram
from evals.runlog import RunLog

# Faithfulness verdicts checked by hand: JSON lines {system, key, hand, note} naming results of this suite's run.
SPOT_CHECKS = Path(__file__).resolve().parent / "spot_checks"

OURS = "ragrouter"
CRAG = "ragrouter + CRAG"
BASELINE = "stock SummaryIndex.as_query_engine()"
CLOSED_PORT = "http://127.0.0.1:9"


def rgb_correct(answer: str, gold: list) -> bool:
    """RGB: every gold answer must appear; an element that is itself a list lists accepted alternatives."""
    return all(contains_answer(answer, g if isinstance(g, list) else [g]) for g in gold)


def _engines(router: RagRouter) -> Callable[[str, list[str]], BaseQueryEngine]:
    """`engine(system, passages)` for each question; what all questions share is built once."""
    # The suite scores answers from the given passages, so Corrective RAG's web fallback must not reach the web:
    # it is pointed at a closed local port and reports "unavailable", keeping the passages as the paper's
    # "ambiguous" action does.
    offline = router.settings.model_copy(update={"web_backend": "searxng", "searxng_url": CLOSED_PORT})
    guard = load_output_guard(offline.output_guard_file)

    def engine(system: str, passages: list[str]) -> BaseQueryEngine:
        index = SummaryIndex([TextNode(text=p) for p in passages])
        if system == BASELINE:
            return index.as_query_engine(llm=router.llm)
        plain = build_answer_engine(index, index.as_retriever(), router.settings, router.llm, router.embed, rerank=False)
        return plain if system == OURS else CorrectiveQueryEngine(workflow=CorrectiveRAG(plain, router.llm, offline, guard, router.embed))

    return engine


def correct_answer(answer: str, item: dict) -> bool:
    golds = item["answers"]
    return rgb_correct(answer, golds) if item.get("set", "").startswith("rgb") else bool(contains_answer(answer, golds))


def _answer(engine: BaseQueryEngine, judge: FaithfulnessEvaluator, item: dict) -> dict:
    start = time.perf_counter()
    with recording() as recorded:
        response = engine.query(item["question"])
    ms = round(1000 * (time.perf_counter() - start), 1)
    answer = str(response.response or "").strip()
    record = {"answer": answer, "ms": ms, "declined": declines(answer)}
    result = (response.metadata or {}).get(RESULT)
    if result is not None and result.crag is not None:
        crag = result.crag
        record["crag"] = {**crag.model_dump(include={"confidence", "band", "actions", "verification"}), "llm_calls": recorded.llm_calls}
        # Each answer check's draft and probability, so its threshold can be tuned on a run's records.
        record["crag"]["checks"] = [
            {k: s.get(k) for k in ("label", "probability", "draft", "basis", "band")} for s in crag.steps if s["action"] == "verify"
        ]
    if item["answerable"]:
        golds = item["answers"]
        record["correct"] = correct_answer(answer, item)
        record["f1"] = round(f1(answer, [g for g in golds if isinstance(g, str)] or [str(golds)]), 4)
    if not record["declined"]:
        contexts = [n.node.get_content() for n in response.source_nodes] or item["passages"]
        record["faithful"] = bool(judge.evaluate(query=item["question"], response=answer, contexts=contexts).passing)
        record["word_support"] = word_support(item["question"], answer, contexts)
    return record


def summarise(records: list[dict], items: list[dict]) -> dict:
    answerable = [r for r, q in zip(records, items) if q["answerable"]]
    unanswerable = [r for r, q in zip(records, items) if not q["answerable"]]
    by_set: dict[str, list[dict]] = defaultdict(list)
    for r, q in zip(records, items):
        by_set[q.get("group", q.get("set", "all"))].append(r)
    return {
        "answer_accuracy": share([r["correct"] for r in answerable]),
        "rejection_rate": share([r["declined"] for r in unanswerable]),
        "false_rejection_rate": share([r["declined"] for r in answerable]),
        "faithfulness": share([r["faithful"] for r in records if "faithful" in r]),
        "word_supported": share([r["word_support"] == 1.0 for r in records if "word_support" in r]),
        "f1": share([r["f1"] for r in answerable]),
        **latency(r["ms"] for r in records),
        "by_set": {
            name: {"n": len(rs), "accuracy": share([r["correct"] for r in rs if "correct" in r]), "declined": share([r["declined"] for r in rs])}
            for name, rs in by_set.items()
        },
    }


def run_answers_suite(router: RagRouter, items: list[dict], report: Report, log: RunLog) -> None:
    judge = FaithfulnessEvaluator(llm=router.llm)
    keyed = [(f"{i}:{q['set']}:{q['question']}", q) for i, q in enumerate(items)]
    engine = _engines(router)
    results = {name: log.run(name, keyed, lambda q, n=name: _answer(engine(n, q["passages"]), judge, q)) for name in (OURS, CRAG, BASELINE)}
    summaries = {name: summarise(records, items) for name, records in results.items()}
    headline = ("answer_accuracy", "rejection_rate", "false_rejection_rate", "faithfulness", "word_supported", "median_ms")
    default = CRAG if router.settings.crag else OURS  # the documents path as configured is what the headline shows
    report.headline({k: summaries[default][k] for k in headline}, {k: summaries[BASELINE][k] for k in headline}, BASELINE)
    report.detail("systems", summaries)
    rows = ["| set | n | right: ours / + CRAG / stock | declined: ours / + CRAG / stock |", "|---|---|---|---|"]
    for name, ours in summaries[OURS]["by_set"].items():
        crag, stock = summaries[CRAG]["by_set"][name], summaries[BASELINE]["by_set"][name]
        rows.append(
            f"| {name} | {ours['n']} | {ours['accuracy']} / {crag['accuracy']} / {stock['accuracy']} "
            f"| {ours['declined']} / {crag['declined']} / {stock['declined']} |"
        )
    report.section(
        "## Per set\n\n" + "\n".join(rows) + "\n\n`right`: the answer contains the gold answer (RGB: every gold answer); "
        "`declined`: the answer says the passages lack it (for `reject` sets and unanswerable SQuAD questions, declining is right)."
    )
    latency_histogram(report, "answer_latency.png", {n: [r["ms"] for r in rs] for n, rs in results.items()}, "passages -> answer")
    _crag_section(report, results[CRAG], items, (router.settings.crag_lower, router.settings.crag_upper))
    _support_section(report, results[CRAG], items, router.settings.crag_answer_support, router.settings.crag_ambiguous_support)
    _spot_check_section(report, results, dict(keyed))


def _right(record: dict, item: dict) -> bool:
    """Right for its item: the gold answer for an answerable question, a decline for an unanswerable one."""
    return bool(record.get("correct")) if item["answerable"] else record["declined"]


def _crag_section(report: Report, records: list[dict], items: list[dict], thresholds: tuple[float, float]) -> None:
    """How often each confidence band fired, how right the answers in it were, and what each path cost."""
    bands: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    for r, q in zip(records, items):
        bands[r["crag"]["band"]].append((r, q))
    stats = {
        name: {
            "n": len(pairs),
            "right": share([_right(r, q) for r, q in pairs]),
            "answerable": share([q["answerable"] for _, q in pairs]),
            "llm_calls_median": float(np.median([r["crag"]["llm_calls"] for r, _ in pairs])),
            **latency(r["ms"] for r, _ in pairs),
        }
        for name, pairs in sorted(bands.items())
    }
    report.detail("crag_bands", stats)
    rows = ["| band | n | right | answerable | LLM calls (median) | median ms | p95 ms |", "|---|---|---|---|---|---|---|"]
    rows += [
        f"| {b} | {v['n']} | {v['right']} | {v['answerable']} | {v['llm_calls_median']:.0f} | {v['median_ms']:,.0f} | {v['p95_ms']:,.0f} |"
        for b, v in stats.items()
    ]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for answerable, colour in ((True, "tab:blue"), (False, "tab:red")):
        shown = [(r["crag"]["confidence"], _right(r, q)) for r, q in zip(records, items) if q["answerable"] == answerable]
        ax.scatter(
            [c for c, _ in shown],
            [int(ok) + (0.04 if answerable else -0.04) for _, ok in shown],
            c=colour,
            alpha=0.6,
            label="answerable" if answerable else "passages lack the answer",
        )
    for threshold in thresholds:
        ax.axvline(threshold, color="grey", ls="--")
    ax.set_yticks([0, 1], ["wrong", "right"])
    ax.set_xlabel("retrieval confidence (0-10)")
    ax.legend(fontsize=7)
    ax.set_title("Corrective RAG: confidence vs right answer (or right decline)")
    report.figure("crag_calibration.png", fig)
    report.section(
        "## Corrective RAG: bands, rightness and cost\n\n" + "\n".join(rows) + "\n\n`right`: the gold answer for an answerable "
        f"question, a decline for one whose passages lack it. Thresholds: {thresholds[0]:g} and {thresholds[1]:g} (dashed)."
    )


def _at_support(record: dict, support: float, ambiguous: float) -> tuple[str, bool]:
    """The answer shown, and whether it declines, had the answer check passed drafts at `support` (at most the
    run's own threshold: each draft below that was retried, so the records hold every draft a lower one would
    pass); each check at its band's bar, as engines/crag/workflow.py sets it. The first draft that passes is shown;
    otherwise the run's own outcome stands."""
    passed = (
        c["draft"]
        for c in record["crag"].get("checks", [])
        if c.get("probability") is not None and c["probability"] >= answer_bar(c.get("band") or "high", support, ambiguous)
    )
    draft = next(passed, None)
    return (draft, False) if draft is not None else (record["answer"], record["declined"])


def _support_section(report: Report, records: list[dict], items: list[dict], run_support: float, ambiguous: float) -> None:
    """What each answer-check threshold up to the run's own would have shown: right answers, and declines (the
    ambiguous band's checks held at `ambiguous` at least)."""
    rows = [
        "| answer check passes at | right answers shown | negatives declined | answerable declined | right + right declines |",
        "|---|---|---|---|---|",
    ]
    sweep = {}
    for support in sorted({round(s / 10, 1) for s in range(0, int(run_support * 10) + 1)} | {run_support}):
        shown = [(_at_support(r, support, ambiguous), q) for r, q in zip(records, items)]
        right = sum(not declined and correct_answer(answer, q) for (answer, declined), q in shown if q["answerable"])
        rejected = sum(declined for (_, declined), q in shown if not q["answerable"])
        false = sum(declined for (_, declined), q in shown if q["answerable"])
        sweep[support] = {"right": right, "rejected": rejected, "false_rejected": false}
        rows.append(f"| {support:g} | {right} | {rejected} | {false} | {right + rejected} |")
    report.detail("crag_answer_support", sweep)
    report.section(
        f"## Corrective RAG: the answer check's threshold\n\nRun at {run_support:g} (`RAGROUTER_CRAG_ANSWER_SUPPORT`); lower "
        "thresholds replayed from each check's recorded draft and probability.\n\n" + "\n".join(rows)
    )


def _spot_check_section(report: Report, results: dict[str, list[dict]], items: dict[str, dict]) -> None:
    """The judge's verdicts beside a person's, for the cases in spot_checks/faithfulness.SPLIT.jsonl."""
    path = SPOT_CHECKS / f"faithfulness.{report.split}.jsonl"
    if not path.is_file():
        return
    judged = {(name, r["key"]): r for name, records in results.items() for r in records}
    checks = [c for c in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if (c["system"], c["key"]) in judged]
    if not checks:
        return
    rows = ["| system | question | answer | judge | hand | why |", "|---|---|---|---|---|---|"]
    for c in checks:
        r = judged[(c["system"], c["key"])]
        cells = [c["system"], items[c["key"]]["question"][:80], r["answer"][:160].replace("\n", " "), r["faithful"], c["hand"], c["note"]]
        rows.append("| " + " | ".join(str(x).replace("|", "/") for x in cells) + " |")
    agreement = share([judged[(c["system"], c["key"])]["faithful"] == c["hand"] for c in checks])
    report.detail("faithfulness_spot_check", {"cases": len(checks), "judge_agrees_with_hand": agreement})
    report.section(
        f"## Faithfulness judge, checked by hand\n\n{len(checks)} judged answers read against their passages by a person "
        f"({path.name}); the judge agreed on {agreement:.0%} of them.\n\n" + "\n".join(rows)
    )
