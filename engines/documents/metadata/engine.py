"""The documents path in front of retrieval for sources with metadata fields: a question that may be a sort,
superlative, count or filter over them gets a metadata instruction from the model, applied to the collection and
answered from the documents it finds; any other question, or an instruction that cannot be applied (the trace
says why), goes on to retrieval as if the option were off."""

from __future__ import annotations

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import RESPONSE_TYPE, Response
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
from llama_index.vector_stores.milvus import MilvusVectorStore

from engines.answers.passages import with_passages
from engines.answers.streaming import whole_answer
from engines.documents.metadata.answer import metadata_answer, shown_fields
from engines.documents.metadata.cues import may_ask_metadata
from engines.documents.metadata.fields import Catalog
from engines.documents.metadata.instruction import InstructionError, MetadataInstruction
from engines.documents.metadata.lookup import Lookup, find_documents
from engines.documents.metadata.writer import write_instruction
from engines.trace import MetadataRecord
from engines.tracing.recorder import note, span

MAX_PASSAGES = 5


class MetadataQueryEngine(BaseQueryEngine):
    def __init__(self, retrieval: BaseQueryEngine, store: MilvusVectorStore, catalog: Catalog, llm: LLM) -> None:
        super().__init__(callback_manager=CallbackManager([]))
        self.retrieval, self.store, self.catalog, self.llm = retrieval, store, catalog, llm

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"retrieval": self.retrieval}

    def _instruction(self, question: str) -> MetadataInstruction | None:
        if not may_ask_metadata(question, self.catalog):
            return None
        with span("metadata instruction"):
            try:
                instruction, changes = write_instruction(self.llm, question, self.catalog)
            except InstructionError as err:
                note(f"Metadata instruction not applied: {err}; the question was answered by retrieval.")
                return None
        for change in changes:
            note(f"Metadata instruction: {change}.")
        if instruction.is_empty():
            note("Metadata instruction: the model found no sort, count or filter in the question; answered by retrieval.")
            return None
        return instruction

    def _passages(self, lookup: Lookup, instruction: MetadataInstruction) -> list[NodeWithScore]:
        """The opening chunk of each document listed, for the answer's sources."""
        listed = lookup.documents[: min(instruction.listed(), MAX_PASSAGES)]
        passages = []
        for document in listed:
            only = MetadataFilters(filters=[MetadataFilter(key="doc_id", operator=FilterOperator.EQ, value=document["doc_id"])])
            chunks = self.store.get_nodes(filters=only)
            if chunks:
                passages.append(NodeWithScore(node=min(chunks, key=lambda n: n.start_char_idx or 0), score=None))
        return passages

    def find(self, question: str) -> tuple[MetadataInstruction, Lookup] | None:
        """The instruction for `question` and the documents it finds; None when retrieval should answer."""
        instruction = self._instruction(question)
        if instruction is None:
            return None
        with span("metadata lookup"):
            return instruction, find_documents(self.store, self.catalog, instruction)

    def _answer(self, question: str, instruction: MetadataInstruction, lookup: Lookup) -> Response:
        with span("metadata lookup"):
            passages = self._passages(lookup, instruction)
        text = whole_answer(metadata_answer(question, lookup, instruction))
        fields = shown_fields(instruction)
        listed = lookup.documents[: instruction.listed()]
        record = MetadataRecord(
            instruction=instruction.model_dump(),
            expression=lookup.expression,
            matched=len(lookup.documents),
            unsorted=lookup.unsorted,
            documents=[{"doc_id": d["doc_id"], "title": d.get("title"), **{f: d.get(f) for f in fields}} for d in listed],
        )
        return with_passages(Response(response=text, source_nodes=passages), metadata_query=record)

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        found = self.find(query_bundle.query_str)
        if found is None:
            return self.retrieval.query(query_bundle)
        return self._answer(query_bundle.query_str, *found)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        return self._query(query_bundle)
