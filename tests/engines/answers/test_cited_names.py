"""An answer that cites a passage names it, once, unless it already does."""

from engines.answers.cited_names import name_citations

NAMES = ["annual-leave.md", "remote-work.md", "travel.md"]


def test_a_bare_citation_gets_the_passage_name() -> None:
    assert name_citations("The most recent one is [3].", NAMES) == "The most recent one is [3] (travel.md)."


def test_each_passage_is_named_once_and_not_when_the_answer_names_it() -> None:
    answer = "Employees get 15 days [1]; after five years 20 [1]. remote-work.md allows two days [2]."
    assert (
        name_citations(answer, NAMES) == "Employees get 15 days [1] (annual-leave.md); after five years 20 [1]. remote-work.md allows two days [2]."
    )


def test_a_mark_with_no_such_passage_is_left_alone() -> None:
    assert name_citations("See [7] and [0].", NAMES) == "See [7] and [0]."
