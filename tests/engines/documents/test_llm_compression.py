"""LLM extract and LLM filter: what they keep of a given reply (ScriptedText, a scripted LLM double, writes it), and that an unreadable reply or one that keeps nothing leaves the passages standing."""

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from engines.documents.llm_compression import LLMExtract, LLMFilter, copied_sentences
from engines.settings import Settings
from engines.tracing.recorder import recording
from tests.scripted_llm import ScriptedText

PASSAGES = [
    "The cafeteria opens at 11:30. Employees receive 28 days of paid annual leave per year. Parking is free.",
    "Passwords must be at least 14 characters long.",
]


def _run(compressor_class, reply: str) -> tuple[list[str], list[str]]:
    nodes = [NodeWithScore(node=TextNode(text=t), score=0.0) for t in PASSAGES]
    with recording() as clock:
        kept = compressor_class(llm=ScriptedText(reply=reply)).postprocess_nodes(nodes, QueryBundle("How much annual leave?"))
    return [n.node.get_content() for n in kept], clock.notes


def test_extract_keeps_the_sentences_the_model_copies_and_drops_passages_with_none() -> None:
    assert copied_sentences(PASSAGES[0], "Employees receive 28 days of paid annual leave per year.") == [
        "Employees receive 28 days of paid annual leave per year."
    ]
    assert copied_sentences(PASSAGES[1], "NO_OUTPUT") == [] and copied_sentences(PASSAGES[1], "Leave is 28 days.") is None
    kept, notes = _run(LLMExtract, "employees receive 28 days of paid annual leave per year")
    # The second passage's reply copies none of its sentences: unreadable, so it stands whole.
    assert kept == ["Employees receive 28 days of paid annual leave per year.", PASSAGES[1]]
    assert any("1 of 2 replies could not be read" in n for n in notes)


def test_a_reply_that_keeps_nothing_leaves_every_passage_standing() -> None:
    kept, notes = _run(LLMExtract, "NO_OUTPUT")
    assert kept == PASSAGES and any("kept nothing" in n for n in notes)
    kept, notes = _run(LLMFilter, "no")
    assert kept == PASSAGES and any("kept nothing" in n for n in notes)


def test_filter_keeps_the_passages_the_model_says_yes_to_and_stands_on_a_garbled_reply() -> None:
    assert _run(LLMFilter, "yes")[0] == PASSAGES
    kept, notes = _run(LLMFilter, "Maybe, it depends.")
    assert kept == PASSAGES and any("2 of 2 replies could not be read" in n for n in notes)


@pytest.mark.parametrize(("value", "expected"), [("true", "embedding"), ("false", "off"), ("llm_extract", "llm_extract")])
def test_compress_keeps_its_old_true_and_false(value: str, expected: str) -> None:
    assert Settings(compress=value).compress == expected


def test_an_unknown_compression_is_refused() -> None:
    with pytest.raises(ValueError, match="llm_filter"):
        Settings(compress="llm")
