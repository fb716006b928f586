"""Router selectors that score every source, so each answer can show why its source won.

LlamaIndex's selectors return only the winner. These return a `ScoredSelection` (a SelectorResult, so
RouterQueryEngine takes it unchanged) that also carries a score per source and which selector decided.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llama_index.core.base.base_selector import BaseSelector, SelectorResult, SingleSelection
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM
from llama_index.core.prompts.mixin import PromptDictType
from llama_index.core.schema import QueryBundle
from llama_index.core.selectors import LLMSingleSelector
from llama_index.core.tools.types import ToolMetadata

from engines.answers.streaming import show_route
from engines.conversation.previous import previous_turn
from engines.language import has_chinese
from engines.matching.coverage_probe import Probe
from engines.matching.schema_terms import SchemaLinker
from engines.trace import Candidate, RouteRecord
from engines.tracing.recorder import span


@dataclass(frozen=True)
class Floor:
    """The score a source gets when nothing matches a question better, per language of the question.

    e5's cosines for Chinese questions run higher than for English ones (a Chinese news question scores 0.82-0.86
    against Chinese Wikipedia passages it has nothing to do with), so one floor cannot serve both.
    """

    english: float
    chinese: float

    def for_question(self, text: str) -> float:
        return self.chinese if has_chinese(text) else self.english


class ScoredSelection(SelectorResult):
    scores: list[float]
    selector: str
    fallback: bool = False
    restated: str = ""


def route_record(choices: Sequence[ToolMetadata], result: ScoredSelection) -> RouteRecord:
    """The decision as the trace shows it: every candidate, best first."""
    candidates = sorted((Candidate(name=c.name, score=round(s, 4)) for c, s in zip(choices, result.scores)), key=lambda c: -c.score)
    return RouteRecord(
        chosen=choices[result.ind].name,
        candidates=candidates,
        reason=result.reason,
        selector=result.selector,
        fallback=result.fallback,
        restated=result.restated,
    )


def scored(selector: str, choices: Sequence[ToolMetadata], query: QueryBundle, decide: Callable[[], ScoredSelection]) -> ScoredSelection:
    """`decide` inside the span "route", whose attributes say what it decided: every candidate's score, the chosen
    source, the selector and its reason. A listener hears the route at once, before the answer; a follow-up's is
    told by the router, whose rule may keep the previous source."""
    with span("route", question=query.query_str, selector=selector) as opened:
        result = decide()
        opened.set(
            selector=result.selector,
            chosen=choices[result.ind].name,
            reason=result.reason,
            fallback=result.fallback,
            candidates={c.name: round(s, 4) for c, s in zip(choices, result.scores)},
        )
        opened.output = choices[result.ind].name
    if previous_turn() is None:
        show_route(route_record(choices, result))
    return result


class ProfileEmbeddingSelector(BaseSelector):
    """Scores a source by the best cosine between the question and the source's profile texts.

    A profile is the description plus what the source holds (table signatures, sample passages), embedded
    once at start-up; the stock EmbeddingSingleSelector re-embeds every description on every call. A linker,
    where there are SQL sources, re-ranks them by the schema words and stored values the question names. A probe,
    where a source has one, scores the question against the source's own contents (the nearest stored chunk),
    and the source takes the better of the two. A floor, where a source has one, is the score it gets when
    nothing matches better: the web answers what no local source comes close to. A question a person routed
    elsewhere (`learn`) counts for questions as close to it as `match` (itself, close rewordings): the right source
    scores at least that closeness, and the wrong one's probe does not count.
    """

    def __init__(
        self,
        embed_model: BaseEmbedding,
        profiles: dict[str, list[str]],
        probes: dict[str, Probe] | None = None,
        probe_margin: float = 0.05,
        floors: dict[str, Floor] | None = None,
        linker: SchemaLinker | None = None,
        match: float = 0.92,
        restate: Callable[[str], str] | None = None,
        restate_margin: float = 0.0,
        translated: dict[str, list[str]] | None = None,
        translated_margin: float = 0.0,
        named_margin: float = 0.0,
    ) -> None:
        self._embed_model = embed_model
        self._profiles = {name: self._embed(texts) for name, texts in profiles.items()}
        self._translated = {name: self._embed(texts) for name, texts in (translated or {}).items() if texts}
        self._translated_margin, self._named_margin = translated_margin, named_margin
        self._probes = probes or {}
        self._probe_margin = probe_margin
        self._floors = floors or {}
        self._linker = linker
        self._match = match
        self._restate = restate
        self._restate_margin = restate_margin
        self._examples: dict[str, np.ndarray] = {}
        self._negatives: dict[str, np.ndarray] = {}

    def learn(self, examples: dict[str, list[str]], negatives: dict[str, list[str]]) -> None:
        """Route by these corrections from now on (all of them: the ones before are replaced)."""
        self._examples = {name: self._embed_questions(texts) for name, texts in examples.items() if texts}
        self._negatives = {name: self._embed_questions(texts) for name, texts in negatives.items() if texts}

    def _embed_questions(self, texts: list[str]) -> np.ndarray:
        """Embedded as the question they are compared with is: the same question scores 1.0."""
        vectors = np.asarray([self._embed_model.get_query_embedding(t) for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def _matched(self, vectors: dict[str, np.ndarray], name: str, q: np.ndarray) -> float:
        """The closeness of the nearest corrected question, when it is close enough to count (else 0)."""
        nearest = float(np.max(vectors[name] @ q)) if name in vectors else 0.0
        return nearest if nearest >= self._match else 0.0

    def with_profile(self, name: str, texts: list[str]) -> ProfileEmbeddingSelector:
        """This selector with one source's profile replaced: what routing would do were it described so."""
        changed = copy.copy(self)
        changed._profiles = {**self._profiles, name: self._embed(texts)}
        return changed

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self._embed_model.get_text_embedding_batch(texts), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def _in_other_language(self, name: str, q: np.ndarray, named: bool) -> float:
        """The best cosine with the source's texts in the other language, less the margin unless the question
        names one of the source's aliases: a short text in the question's own language scores high against any
        question in it (a Chinese news question scores a database's Chinese table names at 0.846, median;
        questions about that database at 0.898; router dev)."""
        if name not in self._translated:
            return 0.0
        return float(np.max(self._translated[name] @ q)) - (self._named_margin if named else self._translated_margin)

    def _profile(self, choice: ToolMetadata) -> np.ndarray:
        if choice.name not in self._profiles:
            self._profiles[choice.name] = self._embed([choice.description])
        return self._profiles[choice.name]

    def scores(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> list[float]:
        q = np.asarray(self._embed_model.get_query_embedding(query.query_str), dtype=np.float32)
        q /= np.linalg.norm(q)
        named = self._linker.aliases_named(query.query_str) if self._linker and self._translated else set()
        scores = [
            max(float(np.max(self._profile(c) @ q)), self._matched(self._examples, c.name, q), self._in_other_language(c.name, q, c.name in named))
            for c in choices
        ]
        nearest = {c.name: self._probes[c.name](q.tolist()) for c in choices if c.name in self._probes}
        nearest = {name: 0.0 if self._matched(self._negatives, name, q) else cosine for name, cosine in nearest.items()}
        # A nearest chunk must beat the profile by the margin: news questions find loosely related chunks in any
        # large collection (tuned on dev questions: 0 -> 73.9 % routed right, 0.05 -> 91.9 %, no probe 83.7 %; docs/experiments/router.md).
        scores = [max(s, nearest[c.name] - self._probe_margin) if c.name in nearest else s for s, c in zip(scores, choices)]
        if self._linker:
            linked = self._linker.adjust(query.query_str, {c.name: s for s, c in zip(scores, choices)})
            scores = [linked.get(c.name, s) for s, c in zip(scores, choices)]
        floors = {name: floor.for_question(query.query_str) for name, floor in self._floors.items()}
        return [max(s, floors.get(c.name, s)) for s, c in zip(scores, choices)]

    def _floored(self, choice: ToolMetadata, score: float, query: QueryBundle) -> bool:
        """Whether `choice` won on its floor alone: no source, this one included, matched the question better."""
        return choice.name in self._floors and score <= self._floors[choice.name].for_question(query.query_str)

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection:
        return scored("embedding", choices, query, lambda: self._choose(choices, query))

    def _choose(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection:
        scores = self.scores(choices, query)
        best = int(np.argmax(scores))
        if self._restate and self._floored(choices[best], scores[best], query) and (second := self._second_look(choices, query)):
            return second
        reason = f"'{choices[best].name}' matched the question best (cosine {scores[best]:.3f} against its description and contents)"
        if self._floored(choices[best], scores[best], query):
            reason = f"no source matched the question at cosine {scores[best]:.3f} or better, so '{choices[best].name}' answers it"
        named = self._linker.named_values(query.query_str).get(choices[best].name) if self._linker else None
        if named:
            reason += f"; the question names {', '.join(repr(v) for v in sorted(named))}, stored in this database"
        return ScoredSelection(
            selections=[SingleSelection(index=best, reason=reason)],
            scores=scores,
            selector="embedding",
        )

    def _second_look(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection | None:
        """The question restated in the other language, routed again: a local source it matches by more than the
        margin above the floor takes it from the web (None when none does)."""
        restated = self._restate(query.query_str) if self._restate else ""
        if not restated or has_chinese(restated) == has_chinese(query.query_str):
            return None
        bundle = QueryBundle(restated)
        scores = self.scores(choices, bundle)
        best = int(np.argmax(scores))
        floor = max((f.for_question(restated) for f in self._floors.values()), default=0.0)
        if choices[best].name in self._floors or scores[best] - self._restate_margin <= floor:
            return None
        reason = (
            f"no source matched the question as asked; restated as '{restated}', it matched '{choices[best].name}' "
            f"best (cosine {scores[best]:.3f} against its description and contents)"
        )
        return ScoredSelection(selections=[SingleSelection(index=best, reason=reason)], scores=scores, selector="embedding", restated=restated)

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection:
        return self._select(choices, query)

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        pass


class LLMWithFallbackSelector(BaseSelector):
    """LlamaIndex's LLMSingleSelector, except that malformed model output falls back to the embedding choice.

    Small local models often answer the selector prompt with text its JSON parser rejects or with a choice
    number that does not exist; the stock router then crashes the query.
    """

    def __init__(self, llm: LLM, embedding_selector: ProfileEmbeddingSelector) -> None:
        self._llm_selector = LLMSingleSelector.from_defaults(llm=llm)
        self._embedding = embedding_selector

    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection:
        return scored("llm", choices, query, lambda: self._choose(choices, query))

    def _choose(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection:
        by_embedding = self._embedding._choose(choices, query)
        try:
            chosen = self._llm_selector.select(choices, query).selections[0]
            if not 0 <= chosen.index < len(choices):
                raise ValueError(f"choice {chosen.index + 1} does not exist")
        except Exception as err:  # any parse or validation failure means: use the embedding choice
            reason = f"LLM selector output was unusable ({type(err).__name__}: {str(err)[:120]}); used the embedding choice. "
            fallback = SingleSelection(index=by_embedding.ind, reason=reason + by_embedding.reason)
            update = {"selections": [fallback], "fallback": True}
        else:
            update = {"selections": [chosen]}
        return by_embedding.model_copy(update={**update, "selector": "llm"})

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> ScoredSelection:
        return self._select(choices, query)

    def _get_prompts(self) -> PromptDictType:
        return self._llm_selector.get_prompts()

    def _update_prompts(self, prompts: PromptDictType) -> None:
        self._llm_selector.update_prompts(prompts)
