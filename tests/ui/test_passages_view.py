"""The line under each cited passage says only what its trace holds; the sentences compression kept are marked."""

from engines.trace import Passage
from ui.passages import highlighted, kept_sentences, passage_facts


def test_rank_and_compression_are_shown_when_known() -> None:
    moved = Passage(source="docs", id="a.md", score=0.8123, text="x" * 640, retrieved_rank=3, retrieved_chars=1200)
    assert passage_facts(moved) == " · score 0.812 · retrieved #3 · compressed 1,200 → 640 chars"
    whole = Passage(source="docs", id="a.md", score=None, text="short", retrieved_rank=1, retrieved_chars=5)
    assert passage_facts(whole) == " · retrieved #1"
    assert passage_facts(Passage(source="web", id="u", text="t", url="http://127.0.0.1/")) == ""


def test_the_sentences_compression_kept_are_highlighted() -> None:
    retrieved = "Remote work is allowed 3 days a week.\nThe office opens at 8.\n远程办公需经理批准。"
    passage = Passage(
        source="docs",
        id="a.md",
        text="Remote work is allowed 3 days a week. 远程办公需经理批准。",
        retrieved_chars=len(retrieved),
        retrieved_text=retrieved,
    )
    sentences = kept_sentences(passage)
    assert sentences == [("Remote work is allowed 3 days a week.", True), ("The office opens at 8.", False), ("远程办公需经理批准。", True)]
    assert highlighted(sentences) == (
        ":green-background[Remote work is allowed 3 days a week\\.] :gray[The office opens at 8\\.] :green-background[远程办公需经理批准。]"
    )
    assert kept_sentences(Passage(source="docs", id="a.md", text="whole")) == []
