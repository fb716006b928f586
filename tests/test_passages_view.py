"""The line under each cited passage says only what its trace holds."""

from engines.trace import Passage
from ui.passages import passage_facts


def test_rank_and_compression_are_shown_when_known() -> None:
    moved = Passage(source="docs", id="a.md", score=0.8123, text="x" * 640, retrieved_rank=3, retrieved_chars=1200)
    assert passage_facts(moved) == " · score 0.812 · retrieved #3 · compressed 1,200 → 640 chars"
    whole = Passage(source="docs", id="a.md", score=None, text="short", retrieved_rank=1, retrieved_chars=5)
    assert passage_facts(whole) == " · retrieved #1"
    assert passage_facts(Passage(source="web", id="u", text="t", url="http://127.0.0.1/")) == ""
