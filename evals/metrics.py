"""Scores shared by the suites: ranking metrics, short-answer EM/F1, word support, latency summaries."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from engines.crag.answer_check import added_words
from engines.language import has_chinese


def ndcg_at(ranked: Sequence[str], relevance: dict[str, int], k: int = 10) -> float:
    gains = [relevance.get(doc, 0) for doc in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevance.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevance: dict[str, int], k: int) -> float:
    relevant = {d for d, g in relevance.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranked: Sequence[str], relevance: dict[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if relevance.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def share(values: Sequence[float]) -> float | None:
    """The mean of per-question scores or flags, to four places; None when no question counts."""
    return round(float(np.mean(values)), 4) if len(values) else None


def latency(ms: Iterable[float]) -> dict[str, float]:
    values = list(ms)
    if not values:
        return {"median_ms": float("nan"), "p95_ms": float("nan")}
    return {"median_ms": round(float(np.median(values)), 1), "p95_ms": round(float(np.percentile(values, 95)), 1)}


_PUNCT = set(string.punctuation) | set("，。！？、；：“”‘’（）《》【】…—·")


def _tokens(text: str) -> list[str]:
    """SQuAD's normalisation for English (lowercase, no punctuation or articles); characters for Chinese (CMRC)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    if has_chinese(text):
        return [ch for ch in text if not ch.isspace()]
    return re.sub(r"\b(a|an|the)\b", " ", text).split()


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    return float(any(_tokens(prediction) == _tokens(g) for g in golds))


def f1(prediction: str, golds: Sequence[str]) -> float:
    def one(gold: str) -> float:
        p, g = _tokens(prediction), _tokens(gold)
        common = sum((Counter(p) & Counter(g)).values())
        if not common:
            return 0.0
        precision, recall = common / len(p), common / len(g)
        return 2 * precision * recall / (precision + recall)

    return max((one(g) for g in golds), default=0.0)


def _joined(text: str) -> str:
    tokens = _tokens(text)
    return "".join(tokens) if has_chinese(text) else " ".join(tokens)


def contains_answer(prediction: str, golds: Sequence[str]) -> float:
    """RGB's criterion: the answer text appears in the response (normalised)."""
    text = _joined(prediction)
    return float(any(_joined(g) and _joined(g) in text for g in golds))


# What the product adds after a citation mark (engines/answers/cited_names.py: "[3] (leave-policy.md)") and the
# label the prompt gives a source ("Source 2 (Annual Leave Policy Update (2024), 2024-01-01)"): the passages'
# names, not words the answer adds (one level of brackets inside a name).
_CITED_NAME = re.compile(r"(\[\d+\]|Source \d+)\s*\((?:[^()]|\([^()]*\))*\)")


def word_support(question: str, answer: str, contexts: Sequence[str]) -> float:
    """Share (by characters) of the words the answer adds to the question that appear in the contexts; 1.0 when it
    adds none. A faithfulness measure with no model in it: on 50 hand-labelled dev answers the local 1.5B judge
    told faithful from unfaithful no better than chance (docs/experiments/corrective-rag.md, "The faithfulness judge against 50 hand labels")."""
    added = added_words(question, _CITED_NAME.sub(r"\1", answer))
    text = " ".join(contexts).lower()
    total = sum(len(w) for w in added)
    return round(sum(len(w) for w in added if w in text) / total, 4) if total else 1.0
