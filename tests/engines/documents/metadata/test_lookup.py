"""The metadata path on a real Milvus Lite collection with the real embedding model; the instruction comes from
ScriptedReplies (a scripted LLM double from test_crag: the point is what the path does with a given reply)."""

import pytest
from llama_index.core.schema import QueryBundle

from engines.documents.metadata.engine import MetadataQueryEngine
from engines.documents.metadata.fields import Catalog, load_catalog
from engines.documents.metadata.instruction import MetadataInstruction
from engines.documents.metadata.lookup import find_documents
from engines.documents.metadata.writer import parse_instruction
from engines.documents.store import open_index
from engines.sources import load_sources
from engines.trace import RESULT
from engines.tracing.recorder import recording
from tests.conftest import make_settings
from tests.engines.crag.test_crag import ScriptedReplies
from tests.engines.documents.metadata.peps_like import write_peps
from tools.ingest import ingest_source


def _no_model():
    raise AssertionError("the source has its own description: ingest needs no model")


@pytest.fixture(scope="module")
def peps(tmp_path_factory: pytest.TempPathFactory, embed):
    folder = tmp_path_factory.mktemp("peps")
    settings = make_settings(folder / "state")
    source = load_sources(write_peps(folder))[0]
    ingest_source(source, settings, embed, _no_model)
    return settings, source, open_index(source, settings, embed), load_catalog(settings.state_dir, "peps")


def _ids(peps, reply: str) -> list[str]:
    _, _, index, catalog = peps
    instruction, _ = parse_instruction(reply, catalog)
    return [d["doc_id"] for d in find_documents(index.vector_store, catalog, instruction).documents][
        : instruction.limit if instruction.sort_by else None
    ]


def test_ingest_keeps_the_catalog_beside_the_collection(peps) -> None:
    catalog: Catalog = peps[3]
    assert catalog.documents == 8 and catalog.field("created").high == "2023-01-09"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"sort_by": "created", "order": "desc", "limit": 2}', ["pep-0703", "pep-0619"]),
        (
            '{"filters": [{"field": "status", "op": "==", "value": "final"}], "sort_by": "words", "order": "asc", "limit": 4}',
            ["pep-3000", "pep-0604", "pep-0572", "pep-0484"],
        ),
        ('{"filters": [{"field": "authors", "op": "contains", "value": "guido"}, {"field": "created", "op": "<", "value": "2005"}]}', ["pep-0008"]),
        (
            '{"filters": [{"field": "python_version", "op": ">=", "value": "3.10"}], "sort_by": "python_version", "order": "asc", "limit": 5}',
            ["pep-0604", "pep-0619", "pep-0703"],
        ),
        ('{"filters": [{"field": "topic", "op": "==", "value": "Typing"}, {"field": "created", "op": "==", "value": "2019"}]}', ["pep-0604"]),
        ('{"filters": [{"field": "title", "op": "contains", "value": "release"}]}', ["pep-0619"]),
        ('{"filters": [{"field": "status", "op": "==", "value": "Accepted"}, {"field": "created", "op": "<", "value": "2000"}]}', []),
        ('{"filters": [{"field": "python_version", "op": "==", "value": "3.10"}]}', ["pep-0604", "pep-0619"]),
        ('{"filters": [{"field": "python_version", "op": "==", "value": "1.5"}]}', []),
    ],
)
def test_milvus_filters_and_the_sort_in_code_find_the_documents(peps, reply: str, expected: list[str]) -> None:
    assert _ids(peps, reply) == expected


def test_documents_without_the_sort_field_are_set_aside(peps) -> None:
    _, _, index, catalog = peps
    lookup = find_documents(index.vector_store, catalog, MetadataInstruction(sort_by="python_version", order="asc"))
    assert lookup.documents[0]["doc_id"] == "pep-3000" and lookup.unsorted == 2


def _ask(peps, reply: str, question: str):
    _, _, index, catalog = peps
    llm = ScriptedReplies(answer=reply)
    with recording() as clock:
        response = MetadataQueryEngine(index.as_query_engine(llm=llm), index.vector_store, catalog, llm).query(QueryBundle(question))
    return response, clock


def test_a_sort_question_is_answered_with_titles_and_the_values_that_placed_them(peps) -> None:
    reply = '{"filters": [{"field": "type", "op": "==", "value": "Process"}], "sort_by": "created", "order": "asc", "limit": 1, "count": false}'
    response, clock = _ask(peps, reply, "Which is the oldest Process PEP?")
    assert (
        response.response == "2 documents match, by created, lowest first: Style Guide for Python Code (pep-0008), created 2001-07-05, type Process."
    )
    record = response.metadata[RESULT].metadata_query.model_dump()
    assert record["matched"] == 2 and record["expression"] == "type in ['Process']" and record["documents"][0]["doc_id"] == "pep-0008"
    assert [n.node.metadata["doc_id"] for n in response.source_nodes] == ["pep-0008"]
    assert "metadata instruction" in clock.ms and "metadata lookup" in clock.ms


def test_counts_and_nothing_matching_are_said_in_the_questions_language(peps) -> None:
    count, _ = _ask(peps, '{"filters": [{"field": "status", "op": "==", "value": "Final"}], "count": true}', "How many Final PEPs are there?")
    assert count.response == "4 documents match status == Final."
    none, _ = _ask(peps, '{"filters": [{"field": "created", "op": ">", "value": "2030"}]}', "2030 年之后的 PEP 有哪些？")
    assert none.response.startswith("没有文档符合条件") and none.metadata[RESULT].metadata_query.matched == 0


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("The newest one is PEP 703.", "not a JSON instruction"),
        ('{"sort_by": "length", "order": "desc"}', "field 'length'"),
        ('{"filters": [], "sort_by": null, "count": false}', "found no sort, count or filter"),
    ],
)
def test_an_instruction_that_cannot_be_applied_is_a_note_and_retrieval_answers(peps, reply: str, why: str) -> None:
    response, clock = _ask(peps, reply, "Which PEP is the newest?")
    assert getattr((response.metadata or {}).get(RESULT), "metadata_query", None) is None and response.response == reply
    assert any(why in n and "answered by retrieval" in n for n in clock.notes)


def test_a_question_without_sort_or_filter_words_costs_no_instruction(peps) -> None:
    response, clock = _ask(peps, '{"sort_by": "created"}', "What does the Zen of Python say about errors?")
    assert response.response == '{"sort_by": "created"}' and "metadata instruction" not in clock.ms and not clock.notes
