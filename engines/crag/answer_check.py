"""After an answer is written: find the sentence of the passages that carries it, and ask whether that sentence
states the answer to the question.

Asked about its own answer with the passages in view, the default 1.5B model agrees with itself. Over 77 dev
answers (RGB zh and en, SQuAD 2.0, CMRC2018; a scratch study of 2026-12-01, in docs/experiments/corrective-rag.md under "The check on
the evidence sentence"), the probability it gave a GOOD label, asked as the next turn after its answer,
separated right answers from answers to negative-only passages with AUC 0.67 (a yes/no wording 0.63, "which
source states it" 0.61). The retrieval grader asked about the one sentence that holds the answer's own words,
not about whole passages, separated them with AUC 0.79 (zh 0.75): on the topic-alike passages of RGB's
negatives, one sentence leaves the model less to be misled by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jieba

from engines.answers.declines import declines
from engines.crag.grader import RetrievalGrader
from engines.language import split_sentences

CITATION = re.compile(r"\[\d+\]|Source \d+:?")
# Words that say nothing about what the answer claims: particles, and the answer prompt's own framing.
FILLER = frozenset("的 了 是 在 和 有 为 将 被 由 资料 根据 source sources the a an of in on at to is was were and by for".split())


@dataclass
class Check:
    """The label, the sentence it rests on and the grader's probability for it."""

    label: str  # GOOD, HALLUCINATION, NO_CONTEXT or INSUFFICIENT
    evidence: str = ""
    probability: float | None = None
    basis: str = ""  # "sentence": the grader read the sentence; "passage": it had graded the sentence's passage


def _words(text: str) -> set[str]:
    # jieba segments Chinese into words and passes English words through whole.
    return {w.strip().lower() for w in jieba.lcut(text) if w.strip() and not re.fullmatch(r"[\W_]+", w.strip())}


def added_words(question: str, answer: str) -> set[str]:
    """What the answer says beyond the question: its words less the question's, citation marks and filler (all of
    its words when it only repeats the question)."""
    said = _words(CITATION.sub("", answer)) - FILLER
    return (said - _words(question)) or said


def evidence(question: str, answer: str, passages: list[str]) -> str:
    """The passage sentence holding most of what the answer adds to the question (by characters of its words), or
    "" when no sentence holds any of it."""
    new = added_words(question, answer)
    sentences = [s for p in passages for s in split_sentences(p)]
    weights = [sum(len(w) for w in new if w in s.lower()) for s in sentences]
    best = max(range(len(sentences)), key=lambda i: (weights[i], -i), default=None)  # ties: the earliest sentence
    return sentences[best] if best is not None and weights[best] else ""


def _passage_grade(sentence: str, graded: dict[str, float], grader: RetrievalGrader) -> float | None:
    """The best grade among `graded` passages whose graded part (what the grader read) holds the sentence."""
    text = " ".join(sentence.split())
    return max((p for passage, p in graded.items() if text in grader.graded_text(passage)), default=None)


def verify(
    question: str,
    answer: str,
    passages: list[str],
    grader: RetrievalGrader,
    supported: float,
    graded: dict[str, float] | None = None,
    asked: dict[str, float] | None = None,
) -> Check:
    """NO_CONTEXT when the answer declines; HALLUCINATION when no passage sentence holds what it says; GOOD with
    no call when the sentence lies in a passage of `graded` (text -> probability: the retrieval grader's verdicts
    that a passage states the answer) graded at `supported` or more; else the grader asks whether that sentence
    states the answer: GOOD at a calibrated probability of `supported` or more, else INSUFFICIENT (related, but
    not the asked fact). `asked` (sentence -> probability) keeps the grader's verdicts on sentences for the question:
    a sentence asked about before is not asked again. Raises when the grader's call fails (the caller lets the
    answer through)."""
    if declines(answer):
        return Check("NO_CONTEXT")
    sentence = evidence(question, answer, passages)
    if not sentence:
        return Check("HALLUCINATION")
    prior = _passage_grade(sentence, graded or {}, grader)
    if prior is not None and prior >= supported:
        return Check("GOOD", sentence, prior, "passage")
    probability = grader.remembered(question, sentence, asked if asked is not None else {})
    return Check("GOOD" if probability >= supported else "INSUFFICIENT", sentence, probability, "sentence")
