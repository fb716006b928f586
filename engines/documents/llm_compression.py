"""Compression by the answering model, as choices beside `SentenceEmbeddingOptimizer` (`RAGROUTER_COMPRESS`):

- `llm_extract` keeps, of each passage, only the sentences the model copies out as answering the question
  (LangChain's `LLMChainExtractor` idea);
- `llm_filter` keeps or drops whole passages by the model's yes/no (LangChain's `LLMChainFilter` idea).

LlamaIndex has neither as a postprocessor (its `LLMRerank` ranks a batch; it does not cut inside a passage or judge
one alone), so both are written here, one model call per passage. Both fail safe: a reply that cannot be read keeps
the passage as it was, and when the model would drop every passage they all stand, with a note in the trace, so
the answer is never written from nothing.
"""

from __future__ import annotations

import re

from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from engines.language import split_sentences
from engines.tracing.recorder import note

NONE = "NO_OUTPUT"
EXTRACT_PROMPT = (
    "Copy, word for word, the sentences of the passage that help answer the question. Copy nothing else and do not "
    f"explain. If no sentence helps, reply {NONE}.\n\nQuestion: {{question}}\nPassage:\n{{passage}}\n\nSentences:"
)
FILTER_PROMPT = "Does the passage help answer the question? Reply yes or no.\n\nQuestion: {question}\nPassage:\n{passage}\n\nAnswer:"
NON_WORD = re.compile(r"[\W_]+")


def _squeezed(text: str) -> str:
    return NON_WORD.sub("", text.casefold())


def copied_sentences(passage: str, reply: str) -> list[str] | None:
    """The passage's sentences that the reply copies, in passage order; [] when the reply says none help; None when
    the reply copies no sentence of the passage (it paraphrased or answered instead)."""
    if reply.strip().upper().startswith(NONE):
        return []
    copied = _squeezed(reply)
    kept = [s for s in split_sentences(passage) if len(_squeezed(s)) > 0 and _squeezed(s) in copied]
    return kept or None


def _said_yes(reply: str) -> bool | None:
    word = reply.strip().lower()
    if word.startswith(("yes", "是")):
        return True
    if word.startswith(("no", "否", "不")):
        return False
    return None


class _LLMCompressor(BaseNodePostprocessor):
    llm: LLM = Field(exclude=True)
    max_tokens: int = 256
    label: str = "LLM compression"  # how the trace's notes name it

    def _judge(self, question: str, node: NodeWithScore) -> NodeWithScore | None:
        """The passage as kept (None: dropped); raises ValueError on a reply that cannot be read."""
        raise NotImplementedError

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None or not nodes:
            return nodes
        kept, unread = [], 0
        for node in nodes:
            try:
                judged = self._judge(query_bundle.query_str, node)
            except ValueError:
                judged, unread = node, unread + 1
            if judged is not None:
                kept.append(judged)
        if unread:
            note(f"{self.label}: {unread} of {len(nodes)} replies could not be read; those passages stand whole")
        if not kept:
            note(f"{self.label}: the model kept nothing of any passage; all {len(nodes)} stand as retrieved")
            return nodes
        note(f"{self.label}: kept {len(kept)} of {len(nodes)} passages")
        return kept


class LLMExtract(_LLMCompressor):
    """Keeps the sentences of each passage that the model copies out (a passage with none is dropped)."""

    label: str = "LLM extract"

    @classmethod
    def class_name(cls) -> str:
        return "LLMExtract"

    def _judge(self, question: str, node: NodeWithScore) -> NodeWithScore | None:
        passage = node.node.get_content()
        reply = self.llm.complete(EXTRACT_PROMPT.format(question=question, passage=passage), max_tokens=self.max_tokens).text
        sentences = copied_sentences(passage, reply)
        if sentences is None:
            raise ValueError("the reply copied no sentence of the passage")
        if not sentences:
            return None
        node.node.set_content(" ".join(sentences))
        return node


class LLMFilter(_LLMCompressor):
    """Keeps the passages the model says help answer the question."""

    max_tokens: int = 2
    label: str = "LLM filter"

    @classmethod
    def class_name(cls) -> str:
        return "LLMFilter"

    def _judge(self, question: str, node: NodeWithScore) -> NodeWithScore | None:
        reply = self.llm.complete(FILTER_PROMPT.format(question=question, passage=node.node.get_content()), max_tokens=self.max_tokens).text
        verdict = _said_yes(reply)
        if verdict is None:
            raise ValueError(f"the reply is neither yes nor no: {reply[:40]!r}")
        return node if verdict else None
