"""The structured query rewrite on the plain documents path (`RAGROUTER_REWRITE=structured`), before Corrective
RAG ever runs: the model turns a colloquial question into `{"rewritten_query", "keywords", "sub_questions"}`.

The rewritten query is embedded for the dense side of hybrid search, and with the keywords beside it feeds the
BM25 side; each sub-question is retrieved too, and the lists are fused by reciprocal rank. Three guards keep it
from doing harm: a short question (under 10 Chinese characters or 4 words) is searched as asked; a reply that is
not such JSON is a note, and the question is searched as asked; and when the rewritten search finds nothing as
close to the question as the question's own search does, the question's own results stand.
"""

from __future__ import annotations

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding, similarity
from llama_index.core.llms import LLM
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, Field

from engines.documents.fusion import fusing
from engines.language import has_chinese, is_short
from engines.models.llm import complete_json, json_reply
from engines.tracing.recorder import note

MIN_WORDS = 4
MAX_SUB_QUESTIONS = 3
# The rewritten search must find a passage at least this close (e5 cosine) to the question, less this margin,
# as the question's own best passage; below it, the rewrite lost the question.
USEFUL_MARGIN = 0.02

PROMPT = {
    "en": 'Rewrite the question for a search engine. Reply with JSON only: {{"rewritten_query": the question as a '
    'clear, complete search query, "keywords": up to 5 key terms (names, numbers, technical words), '
    '"sub_questions": up to 3 simpler questions when it asks several things, else []}}. Keep names, dates and '
    "numbers.\nQuestion: {question}\nJSON:",
    "zh": '把问题改写成适合搜索的形式。只回答 JSON：{{"rewritten_query": 清楚完整的搜索问题, "keywords": 最多 5 个关键词'
    '（人名、数字、术语）, "sub_questions": 问了几件事时拆成最多 3 个简单问题，否则 []}}。保留人名、日期和数字，用中文。\n'
    "问题：{question}\nJSON：",
}


class StructuredQuery(BaseModel):
    rewritten_query: str = Field(min_length=1)
    keywords: list[str] = []
    sub_questions: list[str] = []


SCHEMA = {
    "type": "object",
    "properties": {
        "rewritten_query": {"type": "string"},
        "keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "sub_questions": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_SUB_QUESTIONS},
    },
    "required": ["rewritten_query", "keywords", "sub_questions"],
}


def parse_structured(reply: str) -> StructuredQuery:
    """The reply as a StructuredQuery; ValueError when it is not one."""
    query = json_reply(reply, StructuredQuery)
    return query.model_copy(update={"sub_questions": query.sub_questions[:MAX_SUB_QUESTIONS]})


class StructuredRewriteRetriever(BaseRetriever):
    def __init__(self, retriever: BaseRetriever, llm: LLM, embed_model: BaseEmbedding, similarity_top_k: int) -> None:
        super().__init__()
        self._retriever, self._llm, self._embed, self._top_k = retriever, llm, embed_model, similarity_top_k

    def rewrite(self, question: str) -> StructuredQuery | None:
        """The model's structured query, or None (with a note saying why) when the question is searched as asked."""
        if is_short(question, MIN_WORDS):
            note("Structured rewrite: the question is short; searched as asked.")
            return None
        prompt = PROMPT["zh" if has_chinese(question) else "en"].format(question=question)
        try:
            return parse_structured(complete_json(self._llm, prompt, SCHEMA))
        except ValueError as err:
            note(f"Structured rewrite: the model's reply could not be used ({err}); searched as asked.")
            return None

    def _closest(self, query: list[float], nodes: list[NodeWithScore]) -> float:
        if not nodes:
            return -1.0
        return max(similarity(query, self._embed.get_text_embedding(n.node.get_content())) for n in nodes[:3])

    def search(self, structured: StructuredQuery) -> list[NodeWithScore]:
        """The rewritten query (dense on it, BM25 on it and the keywords) and each sub-question, fused."""
        main = QueryBundle(query_str=" ".join([structured.rewritten_query, *structured.keywords]), custom_embedding_strs=[structured.rewritten_query])
        queries = [main, *(QueryBundle(q) for q in structured.sub_questions)]
        return fusing(self._retriever, queries, self._top_k, self._llm).retrieve(main)

    def useful(self, question: str, rewritten: list[NodeWithScore], asked: list[NodeWithScore]) -> bool:
        """Whether the rewritten search found something about as close to the question as its own search did."""
        query = self._embed.get_query_embedding(question)
        return self._closest(query, rewritten) >= self._closest(query, asked) - USEFUL_MARGIN

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str
        structured = self.rewrite(question)
        if structured is None:
            return self._retriever.retrieve(query_bundle)
        rewritten, asked = self.search(structured), self._retriever.retrieve(query_bundle)
        shown = f"rewritten {structured.rewritten_query!r}, keywords {structured.keywords}, sub-questions {structured.sub_questions}"
        if not self.useful(question, rewritten, asked):
            note(f"Structured rewrite: {shown}; it found nothing as close to the question as the question itself, so the question's results stand.")
            return asked
        note(f"Structured rewrite: {shown}.")
        return rewritten
