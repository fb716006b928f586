"""The retrieval evaluator of Corrective RAG: how well do the retrieved passages answer the question, 0-10?

The default 1.5B model grades yes/no more reliably than on a 0-10 scale (issue 5: 8/8 vs 5/8), and one batched
call grading all passages at once said "yes" to every RGB negative passage in our dev trials, so each passage is
asked on its own: "does it state the answer?". The probability of "yes" (from the model's token probabilities
where the backend gives them, else 1 or 0 from the text), calibrated, scores the passage; the retrieval's
confidence is ten times the best passage's score, since one passage that states the answer is enough to answer.
Grading stops at the first passage that alone makes the confidence high, and a passage already graded for the
question (a rewrite often retrieves the same ones) is not asked again.

Given the embedding model, a Chinese question's passage grade also weighs how near the passage lies to the
question: the grader's logit moves by `cosine_weight` per unit of e5 cosine above `cosine_center`. The 1.5B says
"yes" to passages on the question's topic about another event; the cosine alone separates RGB zh dev passages about as
well as the grader does and adds to it (docs/experiments/corrective-rag.md, "The grader's P(yes) with the embedding's cosine"). Chinese only:
the weight and center were picked on Chinese passages, and e5 puts English question-passage pairs about 0.05 lower
(RGB dev, 40 questions each: positives' median cosine 0.874 en, 0.928 zh), so one center would push English down.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from llama_index.core.base.embeddings.base import BaseEmbedding, similarity
from llama_index.core.llms import LLM, ChatMessage

from engines.language import has_chinese

GRADE_SYSTEM = (
    "You check whether a passage states the answer to a question. Reply with one word, yes or no. "
    "A passage on the same topic that does not state the asked fact is no.\n"
    "Example: 'When did the Eiffel Tower open?' with 'The Eiffel Tower opened on 31 March 1889.' -> yes; "
    "with 'The Eiffel Tower is 330 metres tall.' -> no."
)
PASSAGE_CHARS = 600
# Of those, about this many tokens: a Chinese passage's 600 characters cost the grader ~170 tokens a call. Over RGB
# dev (25 questions per language, two positive and two negative passages each: `python -m evals.grader_suite`),
# 160 kept the Chinese AUC (0.875 -> 0.888) and calibration (ECE 0.103 -> 0.059) at 16 % fewer tokens; 100 lost
# AUC (0.841). English passages' 600 characters stay under it (docs/experiments/speed.md, "Corrective RAG's cost").
PASSAGE_TOKENS = 160
ALTERNATIVES = 8
# The local model's raw P(yes) is squeezed towards 0.5 (dev RGB passages: stating the answer 0.62 en / 0.54 zh
# on average, not stating it 0.47 / 0.36). A logistic fit of the label on logit(P(yes)) over 85 dev passages
# (22 RGB questions, en and zh, two positive and two negative passages each) gave slope 1.61, intercept 0.005.
CALIBRATION_SLOPE = 1.61


@dataclass
class Grade:
    """Per passage: the probability that it states the answer; overall: `confidence` on 0-10."""

    probabilities: list[float | None] = field(default_factory=list)  # None: not graded (an earlier one sufficed)
    confidence: float = 0.0

    def relevant(self, threshold: float = 0.5) -> list[int]:
        """Indexes of the passages not judged "no": graded at `threshold` or more, or not graded at all."""
        keep = [i for i, p in enumerate(self.probabilities) if p is None or p >= threshold]
        graded = [i for i, p in enumerate(self.probabilities) if p is not None]
        if not keep and graded:
            keep = [max(graded, key=lambda i: self.probabilities[i])]
        return keep


def _token_cost(char: str) -> float:
    """About what a BPE vocabulary such as Qwen's spends on a character: one token per CJK character, one per four
    others. An estimate because the grader may call an endpoint whose tokenizer it cannot reach."""
    return 1.0 if "\u3400" <= char <= "\u9fff" else 0.25


def graded_text(passage: str, tokens: int | None = PASSAGE_TOKENS) -> str:
    """The part of a passage the grader reads: whitespace collapsed, the first PASSAGE_CHARS characters, and at
    most about `tokens` tokens of them when given."""
    text = " ".join(passage.split())[:PASSAGE_CHARS]
    spent = 0.0
    for end, char in enumerate(text if tokens is not None else ""):
        spent += _token_cost(char)
        if spent > tokens:
            return text[:end]
    return text


def _logit(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def calibrated(p_yes: float) -> float:
    return _sigmoid(CALIBRATION_SLOPE * _logit(p_yes))


def with_cosine(probability: float, cosine: float, weight: float, center: float) -> float:
    """The grader's probability with its logit moved by `weight` per unit of cosine above `center`."""
    return round(_sigmoid(_logit(probability) + weight * (cosine - center)), 4)


def _yes_probability(reply: str, logprobs: list | None) -> float:
    """P(yes) among {yes, no} at the first generated token, else read from the text."""
    if logprobs:
        mass = {"yes": 0.0, "no": 0.0}
        for alternative in logprobs[0]:
            word = alternative.token.strip().lower()
            if word in mass:
                mass[word] += math.exp(alternative.logprob)
        if mass["yes"] + mass["no"] > 0:
            return mass["yes"] / (mass["yes"] + mass["no"])
    word = reply.strip().lower()
    return 1.0 if word.startswith("yes") or word.startswith("是") else 0.0


def grade_messages(question: str, text: str) -> list[ChatMessage]:
    """The grader's prompt. The question comes before the passage so consecutive calls share the prompt up to it
    (llama.cpp reuses it); the instructions before it are the same for every call (pinned: engines/crag/workflow.py)."""
    return [
        ChatMessage(role="system", content=GRADE_SYSTEM),
        ChatMessage(role="user", content=f"Question: {question}\nPassage: {text}\nDoes the passage state the answer? yes or no"),
    ]


class RetrievalGrader:
    def __init__(
        self,
        llm: LLM,
        embed_model: BaseEmbedding | None = None,
        cosine_weight: float = 0.0,
        cosine_center: float = 0.0,
        passage_tokens: int | None = PASSAGE_TOKENS,
    ) -> None:
        self._llm = llm
        self.passage_tokens = passage_tokens
        self._embed = embed_model if cosine_weight else None
        self._weight, self._center = cosine_weight, cosine_center
        self._queries: dict[str, list[float]] = {}  # the question's embedding, asked for once per question

    def probability(self, question: str, passage: str) -> float:
        """Calibrated P(the passage states the answer to the question): one model call."""
        return round(calibrated(self._raw_probability(question, passage)), 4)

    def passage_probability(self, question: str, passage: str) -> float:
        """`probability`, weighed with the passage's cosine to a Chinese question when the grader has an embedding model."""
        probability = self.probability(question, passage)
        if self._embed is None or not has_chinese(question):
            return probability
        if question not in self._queries:
            self._queries[question] = self._embed.get_query_embedding(question)
        cosine = similarity(self._queries[question], self._embed.get_text_embedding(self.graded_text(passage)))
        return with_cosine(probability, cosine, self._weight, self._center)

    def graded_text(self, passage: str) -> str:
        """What this grader reads of a passage."""
        return graded_text(passage, self.passage_tokens)

    def remembered(self, question: str, passage: str, known: dict[str, float], ask: Callable[[str, str], float] | None = None) -> float:
        """`ask` (by default `probability`), taken from `known` (text -> probability, for this question) when it is
        there, else asked and kept in it."""
        if passage not in known:
            known[passage] = (ask or self.probability)(question, passage)
        return known[passage]

    def _raw_probability(self, question: str, passage: str) -> float:
        messages = grade_messages(question, self.graded_text(passage))
        response = self._llm.chat(messages, logprobs=True, top_logprobs=ALTERNATIVES, max_tokens=2, stop=["\n"])
        return _yes_probability(response.message.content or "", response.logprobs)

    def grade(self, question: str, passages: list[str], known: dict[str, float] | None = None, enough: float = 1.0) -> Grade:
        """Grade in rank order until one passage scores `enough`; the rest get None. `known` caches by passage."""
        known = known if known is not None else {}
        probabilities: list[float | None] = []
        for passage in passages:
            if probabilities and max(p for p in probabilities if p is not None) >= enough:
                probabilities.append(None)
                continue
            probabilities.append(self.remembered(question, passage, known, self.passage_probability))
        confidence = round(10 * max((p for p in probabilities if p is not None), default=0.0), 2)
        return Grade(probabilities, confidence)
