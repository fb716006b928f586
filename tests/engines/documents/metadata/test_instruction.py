import pytest

from engines.documents.metadata.cues import may_ask_metadata
from engines.documents.metadata.fields import Catalog
from engines.documents.metadata.instruction import InstructionError, MetadataInstruction
from engines.documents.metadata.writer import instruction_schema, parse_instruction
from engines.documents.store import IngestReport, load_documents
from engines.sources import load_sources
from tests.engines.documents.metadata.peps_like import write_peps


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    report = IngestReport("peps")
    load_documents(load_sources(write_peps(tmp_path_factory.mktemp("peps")))[0], report)
    return report.catalog


def test_a_well_formed_reply_becomes_a_checked_instruction(catalog: Catalog) -> None:
    reply = 'Sure: {"filters": [{"field": "status", "op": "==", "value": "final"}, {"field": "created", "op": "==", "value": "2019"}], "sort_by": "number", "order": "asc", "limit": 99, "count": false}'
    instruction, _ = parse_instruction(reply, catalog)
    assert [(c.field, c.op, c.value) for c in instruction.filters] == [
        ("status", "==", "final"),
        ("created", ">=", "2019-01-01"),
        ("created", "<", "2020-01-01"),
    ]
    assert instruction.limit == 20 and instruction.sort_by == "number"


@pytest.mark.parametrize(
    ("value", "op", "bounds"),
    [
        ("2019-08", ">", [(">=", "2019-09-01")]),
        ("2019-12", "<=", [("<", "2020-01-01")]),
        ("2019-08-28", "==", [(">=", "2019-08-28"), ("<", "2019-08-29")]),
    ],
)
def test_partial_dates_become_ranges(catalog: Catalog, value: str, op: str, bounds: list) -> None:
    reply = f'{{"filters": [{{"field": "created", "op": "{op}", "value": "{value}"}}]}}'
    assert [(c.op, c.value) for c in parse_instruction(reply, catalog)[0].filters] == bounds


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("The newest PEP is PEP 8.", "not a JSON instruction"),
        ('{"filters": [{"field": "status"}]}', "malformed"),
        ('{"sort_by": "created", "order": "newest"}', "malformed"),
        ('{"filters": [], "sort_by": "length"}', "field 'length', which this source does not have"),
        ('{"filters": [{"field": "status", "op": "==", "value": "Lost"}]}', "no document has status 'Lost' .*Accepted, Active, Final"),
        ('{"filters": [{"field": "words", "op": ">", "value": "many"}]}', "'many' is not a number"),
        ('{"filters": [{"field": "created", "op": ">", "value": "last spring"}]}', "'last spring' is not a date"),
        ('{"filters": [{"field": "status", "op": ">", "value": "Final"}]}', "cannot compare the text field 'status'"),
        ('{"filters": [], "sort_by": "authors"}', "cannot be sorted by the list field 'authors'"),
    ],
)
def test_a_reply_that_cannot_be_applied_says_why(catalog: Catalog, reply: str, message: str) -> None:
    with pytest.raises(InstructionError, match=message):
        parse_instruction(reply, catalog)


def test_an_empty_instruction_means_an_ordinary_question() -> None:
    assert MetadataInstruction().is_empty() and not MetadataInstruction(count=True).is_empty()


def test_the_local_grammar_offers_only_the_sources_fields(catalog: Catalog) -> None:
    schema = instruction_schema(catalog)
    assert schema["properties"]["filters"]["items"]["properties"]["field"]["enum"][:3] == ["number", "title", "status"]
    assert "authors" not in schema["properties"]["sort_by"]["anyOf"][0]["enum"]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Which is the newest PEP?", True),
        ("How many Final PEPs are there?", True),
        ("Which PEPs did Guido van Rossum write before 2005?", True),
        ("最早的 PEP 是哪一篇？", True),
        ("Which is the longest one?", True),
        ("有多少个 PEP 的目标版本是 Python 3.10？", True),
        ("How many days of leave do employees get?", False),
        ("What does the Zen of Python say about errors?", False),
    ],
)
def test_only_questions_with_sort_count_or_filter_words_cost_a_model_call(catalog: Catalog, question: str, asks: bool) -> None:
    assert may_ask_metadata(question, catalog) is asks


@pytest.mark.parametrize(
    ("question", "reply", "kept", "change"),
    [
        (
            "What is the oldest PEP?",
            '{"filters": [{"field": "type", "op": "==", "value": "Process"}], "sort_by": "created"}',
            [],
            "does not name 'Process'",
        ),
        (
            "Which is the newest PEP?",
            '{"filters": [{"field": "type", "op": "==", "value": "PEP"}], "sort_by": "created"}',
            [],
            "names the documents themselves",
        ),
        (
            "The three oldest Process PEPs?",
            '{"filters": [{"field": "topic", "op": "==", "value": "Process"}]}',
            [("type", "Process")],
            "moved the filter topic == Process to the field type",
        ),
        (
            "How many standards-track PEPs?",
            '{"filters": [{"field": "type", "op": "==", "value": "Standards Track"}], "count": true}',
            [("type", "Standards Track")],
            None,
        ),
        ("PEPs longer than 5,000 words?", '{"filters": [{"field": "words", "op": ">", "value": 5000}]}', [("words", 5000)], None),
        (
            "2019 年的 PEP 有哪些？",
            '{"filters": [{"field": "created", "op": "==", "value": "2019"}]}',
            [("created", "2019-01-01"), ("created", "2020-01-01")],
            None,
        ),
    ],
)
def test_filters_are_kept_to_what_the_question_names(catalog: Catalog, question: str, reply: str, kept: list, change: str | None) -> None:
    instruction, notes = parse_instruction(reply, catalog, question)
    assert [(c.field, c.value) for c in instruction.filters] == kept
    assert (change is None and not notes) or any(change in n for n in notes)
