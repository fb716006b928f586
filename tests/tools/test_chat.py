"""Questions in a conversation on the demo sources, with the local model: follow-ups condensed and routed, a new
topic left alone, and the failure modes of the conversation id and the history store."""

from pathlib import Path

import pytest

from engines.conversation.condense import Condenser
from engines.conversation.store import ConversationIdError, ConversationStore
from engines.routing.router import QuestionError
from tools.chat import Chat, condense_llm

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def condenser(router) -> Condenser:
    return Condenser(lambda: condense_llm(router.settings, router.llm), router.settings.history_tokens)


@pytest.fixture()
def chat(router, condenser: Condenser, tmp_path: Path) -> Chat:
    return Chat(router, ConversationStore(tmp_path / "conversations.sqlite"), condenser)


def test_a_sql_follow_up_is_condensed_and_builds_on_the_last_query(chat: Chat) -> None:
    first = chat.ask("How many customers are older than 30?", None)
    assert first.standalone_question == first.question and first.conversation.turn == 1 and first.conversation.follow_up is None
    follow_up = chat.ask("What about Beijing?", first.conversation.id)
    assert follow_up.conversation.turn == 2 and follow_up.conversation.follow_up and follow_up.conversation.rewritten
    assert "Beijing" in follow_up.standalone_question and follow_up.standalone_question != follow_up.question
    assert follow_up.route.chosen == "shop" and "beijing" in follow_up.sql.lower() and "30" in follow_up.sql
    assert "condense" in follow_up.timings_ms and follow_up.question == "What about Beijing?"
    assert [t.question for t in chat.store.turns(first.conversation.id)] == ["How many customers are older than 30?", "What about Beijing?"]


def test_a_chinese_follow_up_to_an_english_turn_stays_on_the_database(chat: Chat) -> None:
    first = chat.ask("How many customers are older than 30?", None)
    follow_up = chat.ask("按城市统计呢？", first.conversation.id)
    assert follow_up.conversation.follow_up and follow_up.route.chosen == "shop"
    assert "city" in follow_up.sql.lower()


def test_a_new_topic_is_asked_as_it_stands(chat: Chat) -> None:
    first = chat.ask("How many customers are older than 30?", None)
    new_topic = chat.ask("Now tell me about the weather in Berlin.", first.conversation.id)
    assert new_topic.standalone_question == "Now tell me about the weather in Berlin."
    assert new_topic.conversation.follow_up is None and new_topic.llm_calls >= 1 and new_topic.route.chosen == "web"


def test_an_unknown_id_starts_that_conversation_and_says_so(chat: Chat) -> None:
    trace = chat.ask("How many orders are there?", "no-such-chat")
    assert trace.conversation.id == "no-such-chat" and trace.conversation.turn == 1
    assert any("There was no conversation 'no-such-chat'" in n for n in trace.notes)
    assert chat.store.exists("no-such-chat")


def test_a_bad_id_or_an_empty_follow_up_is_refused_and_changes_nothing(chat: Chat) -> None:
    first = chat.ask("How many orders are there?", None)
    with pytest.raises(ConversationIdError):
        chat.ask("How many orders are there?", "../../etc")
    for empty in ("", "   "):
        with pytest.raises(QuestionError, match="empty"):
            chat.ask(empty, first.conversation.id)
    assert len(chat.store.turns(first.conversation.id)) == 1 and len(chat.store.recent()) == 1


def test_a_corrupt_history_store_still_answers_and_is_left_as_it_was(router, condenser: Condenser, tmp_path: Path) -> None:
    path = tmp_path / "conversations.sqlite"
    path.write_bytes(b"not a database" * 64)
    before = path.read_bytes()
    trace = Chat(router, ConversationStore(path), condenser).ask("How many orders are there?", "c1")
    assert trace.route.chosen == "shop" and trace.rows == [[60]]
    assert any("without the conversation's history" in n and str(path) in n for n in trace.notes)
    assert path.read_bytes() == before


def test_a_chinese_follow_up_that_edits_a_query_stays_on_the_database(chat: Chat) -> None:
    first = chat.ask("How many customers are older than 30?", None)
    follow_up = chat.ask("其中有多少人在北京？", first.conversation.id)
    assert follow_up.conversation.follow_up and follow_up.route.chosen == "shop" and "beijing" in follow_up.sql.lower()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in follow_up.answer)  # answered in the language it was asked in
