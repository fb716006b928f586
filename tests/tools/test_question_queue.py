"""The app's question queue on the demo sources with the local model: questions sent back to back are answered
in the order sent, each saved as its turn (the second a follow-up of the first), and one cancelled while it waits
is saved as cancelled and never condensed over."""

import threading
from pathlib import Path

import pytest

from engines.conversation.condense import Condenser
from engines.conversation.store import ConversationStore
from tools.chat import Chat, condense_llm
from tools.question_queue import JobState, QuestionQueue

pytestmark = pytest.mark.slow


@pytest.fixture()
def chat(router, tmp_path: Path) -> Chat:
    condenser = Condenser(lambda: condense_llm(router.settings, router.llm), router.settings.history_tokens)
    return Chat(router, ConversationStore(tmp_path / "conversations.sqlite"), condenser)


def test_questions_sent_back_to_back_are_answered_in_order_and_both_saved(chat: Chat) -> None:
    queue = QuestionQueue(threading.Lock())
    conversation = chat.store.create()
    first = queue.submit(chat, conversation, "How many customers are older than 30?")
    second = queue.submit(chat, conversation, "What about Beijing?")
    assert second.state is JobState.WAITING and [j.question for j in queue.unsaved(conversation, 0)] == [first.question, second.question]
    assert first.finished.wait(300) and second.finished.wait(300)
    assert first.state is JobState.DONE and second.state is JobState.DONE
    assert second.trace.conversation.turn == 2 and second.trace.conversation.follow_up and "Beijing" in second.trace.standalone_question
    saved = chat.store.turns(conversation)
    assert [t.question for t in saved] == [first.question, second.question]
    assert queue.unsaved(conversation, len(saved)) == []  # once saved, a page shows them from the store only


def test_a_question_cancelled_while_it_waits_is_saved_as_cancelled_and_skipped(chat: Chat) -> None:
    model = threading.Lock()
    queue = QuestionQueue(model)
    conversation = chat.store.create()
    with model:  # another tab holds the model: both questions wait
        first = queue.submit(chat, conversation, "How many customers are older than 30?")
        second = queue.submit(chat, conversation, "How many orders are there?")
        assert queue.cancel(second) and second.state is JobState.CANCELLED
    assert first.finished.wait(300) and second.finished.wait(60) and first.state is JobState.DONE
    assert second.trace.conversation.cancelled and not queue.cancel(second)
    saved = chat.store.turns(conversation)  # in the order sent, the cancelled one in its place
    assert [(t.question, t.conversation.cancelled) for t in saved] == [(first.question, False), (second.question, True)]
    follow_up = chat.ask("What about Beijing?", conversation)  # condensed over the answered turn, not the cancelled one
    assert follow_up.conversation.turn == 3 and "30" in follow_up.standalone_question


def test_a_failing_question_ends_its_job_and_the_next_one_is_still_answered(chat: Chat) -> None:
    queue = QuestionQueue(threading.Lock())
    conversation = chat.store.create()
    too_long = queue.submit(chat, conversation, "x" * (chat.router.settings.max_question_chars + 1), (ValueError,))
    after = queue.submit(chat, conversation, "How many orders are there?")
    assert after.finished.wait(300) and too_long.state is JobState.FAILED and "characters" in too_long.error
    assert after.state is JobState.DONE and [t.question for t in chat.store.turns(conversation)] == ["How many orders are there?"]
