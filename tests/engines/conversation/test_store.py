"""The conversation store: turns kept with their traces, titles, deletion that touches nothing else, and clear
errors for a corrupt or locked file."""

import sqlite3
from pathlib import Path

import pytest

from engines.conversation.store import ConversationIdError, ConversationStore, ConversationStoreError, check_conversation_id
from engines.trace import RouteRecord, Trace


def _turn(question: str, source: str = "shop") -> Trace:
    return Trace(
        question=question, standalone_question=question, answer="7", route=RouteRecord(chosen=source, candidates=[], reason="r", selector="embedding")
    )


def test_turns_come_back_with_their_traces_newest_conversation_first(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "state" / "conversations.sqlite")
    first = store.create()
    store.add_turn(first, _turn("How many customers are older than 30?"))
    store.add_turn(first, _turn("What about Beijing?"))
    second = store.create()
    store.add_turn(second, _turn("年假有几天？", "handbook"))
    assert [t.question for t in store.turns(first)] == ["How many customers are older than 30?", "What about Beijing?"]
    assert store.turns(first)[0].route.chosen == "shop"
    recent = store.recent()
    assert [c.id for c in recent] == [second, first] and [c.turns for c in recent] == [1, 2]
    assert recent[1].title == "How many customers are older than 30?"  # titled by its first question


def test_rename_and_delete_touch_only_that_conversation(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite")
    kept, gone = store.create(), store.create()
    store.add_turn(kept, _turn("kept question"))
    store.add_turn(gone, _turn("deleted question"))
    assert store.rename(kept, "Customers") and next(c for c in store.recent() if c.id == kept).title == "Customers"
    assert store.delete(gone) and not store.delete(gone)
    assert not store.exists(gone) and store.turns(gone) == []
    assert [t.question for t in store.turns(kept)] == ["kept question"]
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM turns").fetchone() == (1,)
    with pytest.raises(ConversationIdError, match="empty"):
        store.rename(kept, "  ")


@pytest.mark.parametrize("bad", ["", "a b", "../x", "x" * 65, "id;drop"])
def test_a_malformed_id_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ConversationIdError, match="not a conversation id"):
        check_conversation_id(bad)


def test_a_corrupt_store_is_a_clear_error_and_stays_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    before = path.read_bytes()
    with pytest.raises(ConversationStoreError, match=str(path)):
        ConversationStore(path).recent()
    assert path.read_bytes() == before


def test_a_locked_store_is_an_error_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite"
    store = ConversationStore(path)
    conversation = store.create()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ConversationStoreError, match="locked"):
            store.add_turn(conversation, _turn("a question"))
    finally:
        holder.rollback()
        holder.close()
    assert store.turns(conversation) == []
