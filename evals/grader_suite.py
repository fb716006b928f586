"""Corrective RAG's retrieval grader on its own: how well its probability separates passages that state the answer
from passages on the same topic that do not, how well calibrated it is, and what each call costs.

RGB dev questions (Chinese and English, `--per-language` of each, the same sample every run), two positive and two
negative passages each, graded as Corrective RAG grades them (`RetrievalGrader.passage_probability`, with the e5
cosine for Chinese). Reports AUC (positive against negative), Brier score, expected calibration error over five
bins, share of positives / negatives at 0.7 or more (the high band's bar), and the model's prompt tokens evaluated
and time per call. `--passage-tokens N` caps what the grader reads of a passage at about N tokens (0: no cap, the
first 600 characters only; default: the product's cap).
`python -m evals.grader_suite [--per-language 25] [--passage-tokens N] [--out name]`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics

from sklearn.metrics import brier_score_loss, roc_auc_score

from engines.crag.grader import PASSAGE_TOKENS, RetrievalGrader
from engines.models.embeddings import build_embedding
from engines.models.llm import build_llm
from engines.settings import Settings
from engines.tracing.recorder import recording
from evals.datasets import EVAL_DIR, _rgb

PASSAGES = 2  # of each kind per question
HIGH = 0.7


def expected_calibration_error(probabilities: list[float], labels: list[int], bins: int = 5) -> float:
    total = 0.0
    for b in range(bins):
        inside = [(p, y) for p, y in zip(probabilities, labels) if b / bins <= p < (b + 1) / bins or (b == bins - 1 and p == 1.0)]
        if inside:
            total += len(inside) / len(labels) * abs(statistics.mean(p for p, _ in inside) - statistics.mean(y for _, y in inside))
    return round(total, 4)


def summary(records: list[dict]) -> dict:
    probabilities, labels = [r["p"] for r in records], [r["positive"] for r in records]
    positives = [r["p"] for r in records if r["positive"]]
    negatives = [r["p"] for r in records if not r["positive"]]
    return {
        "passages": len(records),
        "auc": round(roc_auc_score(labels, probabilities), 4),
        "brier": round(brier_score_loss(labels, probabilities), 4),
        "ece": expected_calibration_error(probabilities, labels),
        "positives_high": round(sum(p >= HIGH for p in positives) / len(positives), 3),
        "negatives_high": round(sum(p >= HIGH for p in negatives) / len(negatives), 3),
        "prompt_tokens_evaluated_median": statistics.median(r["evaluated"] for r in records),
        "call_ms_median": round(statistics.median(r["ms"] for r in records), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=25)
    parser.add_argument("--passage-tokens", type=int, default=PASSAGE_TOKENS)
    parser.add_argument("--out", default=None, help="report name under the reports folder (grader-dev-<out>.json)")
    args = parser.parse_args()
    settings = Settings()
    grader = RetrievalGrader(
        build_llm(settings),
        build_embedding(settings.embed_model),
        settings.crag_grade_cosine_weight,
        settings.crag_grade_cosine_center,
        passage_tokens=args.passage_tokens or None,
    )
    rng = random.Random(0)
    records = []
    for language in ("zh", "en"):
        questions = [r for lang, r in _rgb(EVAL_DIR, "dev") if lang == language]
        for record in rng.sample(questions, min(args.per_language, len(questions))):
            for kind in ("positive", "negative"):
                for passage in record[kind][:PASSAGES]:
                    with recording() as clock:
                        p = grader.passage_probability(record["query"], passage)
                    (call,) = clock.model_calls
                    evaluated, ms = call.prompt_tokens_evaluated, call.prompt_ms + call.generate_ms
                    records.append({"language": language, "positive": int(kind == "positive"), "p": p, "evaluated": evaluated, "ms": ms})
    report = {
        "passage_tokens": args.passage_tokens or None,
        "all": summary(records),
        **{lang: summary([r for r in records if r["language"] == lang]) for lang in ("zh", "en")},
    }
    print(json.dumps(report, indent=1))
    if args.out:
        (settings.reports_dir / f"grader-dev-{args.out}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
