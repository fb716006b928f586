"""Does route feedback fix what it corrects without breaking the rest? On a router split: route every question,
correct each wrong route as a person would ("should be X", kept in a feedback store), let the router take the
corrections in, and route every question again.

Reported: the corrected questions routed right after (goal: all), accuracy on the questions that were right
before (goal: no drop), and, correcting only half of the wrong ones, how many of the other half the corrections
fix on their own (questions near a corrected one). `python -m evals.router_feedback [--split dev]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from pathlib import Path

from llama_index.core.schema import QueryBundle

from engines.conversation.store import ConversationStore
from engines.feedback.cases import route_corrections
from engines.feedback.store import DOWN, FeedbackStore
from engines.routing.router import RagRouter
from engines.settings import Settings
from engines.trace import RouteRecord, Trace
from evals.datasets import load_questions
from evals.run import SUITE_SOURCES
from tools.build import build_router


def routes(router: RagRouter, items: list[dict]) -> list[str]:
    choices = [t.tool.metadata for t in router.tools]
    return [choices[router.embedding_selector.select(choices, QueryBundle(q["question"])).ind].name for q in items]


def corrected(router: RagRouter, wrong: list[tuple[dict, str]]) -> None:
    """Each wrong route corrected through a feedback store, as `ragrouter feedback ID down --source X` keeps it."""
    with tempfile.TemporaryDirectory() as folder:
        store = FeedbackStore(ConversationStore(Path(folder) / "conversations.db"))
        for item, chosen in wrong:
            route = RouteRecord(chosen=chosen, candidates=[], reason="", selector="embedding")
            trace = Trace(trace_id=uuid.uuid4().hex, question=item["question"], standalone_question=item["question"], route=route)
            store.give(trace, "route", DOWN, item["expected_source"], None, "cli")
        corrections = route_corrections(store.all())
    router.embedding_selector.learn(corrections.examples, corrections.negatives)


def accuracy(items: list[dict], chosen: list[str], indices: list[int]) -> float:
    return sum(chosen[i] == items[i]["expected_source"] for i in indices) / max(len(indices), 1)


def measure(router: RagRouter, items: list[dict]) -> dict:
    before = routes(router, items)
    wrong = [i for i, (q, c) in enumerate(zip(items, before)) if c != q["expected_source"]]
    right = [i for i in range(len(items)) if i not in set(wrong)]
    half, rest = wrong[::2], wrong[1::2]
    corrected(router, [(items[i], before[i]) for i in half])
    after_half = routes(router, items)
    corrected(router, [(items[i], before[i]) for i in wrong])
    after = routes(router, items)
    router.embedding_selector.learn({}, {})
    return {
        "questions": len(items),
        "accuracy_before": round(accuracy(items, before, list(range(len(items)))), 4),
        "accuracy_after": round(accuracy(items, after, list(range(len(items)))), 4),
        "wrong_before": len(wrong),
        "corrected_right_after": sum(after[i] == items[i]["expected_source"] for i in wrong),
        "right_before": len(right),
        "right_before_still_right": sum(after[i] == items[i]["expected_source"] for i in right),
        "others_accuracy_after": round(accuracy(items, after, right), 4),
        "half_corrected": len(half),
        "uncorrected_half_right_after": sum(after_half[i] == items[i]["expected_source"] for i in rest),
        "uncorrected_half": len(rest),
        "others_accuracy_after_half": round(accuracy(items, after_half, right), 4),
        "changed": [
            {"question": items[i]["question"], "expected": items[i]["expected_source"], "before": before[i], "after": after[i]}
            for i in range(len(items))
            if before[i] != after[i]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    args = parser.parse_args()
    items, _ = load_questions("router", args.split, None)
    router = build_router(Settings(), SUITE_SOURCES["router"])
    result = measure(router, items)
    out = router.settings.reports_dir / f"router-{args.split}-feedback.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "changed"}, indent=1))
    print(out)


if __name__ == "__main__":
    main()
