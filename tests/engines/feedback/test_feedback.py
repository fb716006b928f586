"""Feedback kept beside the conversations, and the regression cases and corrections made of it."""

import uuid
from pathlib import Path

import pytest

from engines.conversation.store import ConversationStore, ConversationStoreError
from engines.feedback.cases import route_corrections, router_cases, sql_cases, triage
from engines.feedback.store import DOWN, UP, FeedbackStore
from engines.trace import RouteRecord, SqlAttempt, Trace


def _trace(question: str, source: str, sql: str | None = None) -> Trace:
    attempts = [SqlAttempt(sql=sql)] if sql else []
    return Trace(
        trace_id=uuid.uuid4().hex,
        question=question,
        standalone_question=question,
        route=RouteRecord(chosen=source, candidates=[], reason="", selector="embedding"),
        sql_attempts=attempts,
    )


@pytest.fixture()
def store(tmp_path: Path) -> FeedbackStore:
    return FeedbackStore(ConversationStore(tmp_path / "conversations.db"))


def test_a_new_verdict_replaces_the_old_one_and_nothing_takes_it_back(store: FeedbackStore) -> None:
    trace = _trace("How many orders?", "shop", "SELECT COUNT(*) FROM orders")
    store.give(trace, "answer", DOWN, None, None, "app")
    store.give(trace, "answer", UP, None, "right after all", "cli")
    [kept] = store.of_trace(trace.trace_id)
    assert (kept.rating, kept.comment, kept.origin, kept.sql) == (UP, "right after all", "cli", "SELECT COUNT(*) FROM orders")
    assert store.give(trace, "answer", None, None, None, "api") is None
    assert store.of_trace(trace.trace_id) == []


def test_only_what_a_person_vouched_for_becomes_a_case_and_a_bare_thumbs_down_waits_in_triage(store: FeedbackStore) -> None:
    liked, misrouted, wrong_sql, vague = (
        _trace("How many customers?", "shop", "SELECT COUNT(*) FROM customers"),
        _trace("Who won the 2022 World Cup?", "shop", "SELECT 1"),
        _trace("Average order value?", "shop", "SELECT AVG(quantity) FROM orders"),
        _trace("Tell me about leave", "handbook"),
    )
    store.give(liked, "answer", UP, None, None, "app")
    store.give(liked, "sql", UP, None, None, "app")
    store.give(misrouted, "route", DOWN, "web", None, "cli")
    store.give(misrouted, "answer", DOWN, None, None, "cli")  # explained by the route correction: not for triage
    store.give(wrong_sql, "sql", DOWN, "SELECT AVG(total) FROM orders", None, "api")
    store.give(vague, "answer", DOWN, None, "too vague", "app")
    items = store.all()
    assert sorted(router_cases(items), key=lambda c: c["question"]) == [
        {"question": "How many customers?", "expected_source": "shop", "group": "feedback"},
        {"question": "Who won the 2022 World Cup?", "expected_source": "web", "group": "feedback"},
    ]
    assert sorted(sql_cases(items), key=lambda c: c["question"]) == [
        {"question": "Average order value?", "db": "shop", "gold_sql": "SELECT AVG(total) FROM orders"},
        {"question": "How many customers?", "db": "shop", "gold_sql": "SELECT COUNT(*) FROM customers"},
    ]
    assert [(t["question"], t["comment"]) for t in triage(items)] == [("Tell me about leave", "too vague")]
    corrections = route_corrections(items)
    assert dict(corrections.examples) == {"web": ["Who won the 2022 World Cup?"]}
    assert dict(corrections.negatives) == {"shop": ["Who won the 2022 World Cup?"]}


def test_a_store_that_cannot_be_opened_is_an_error_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "conversations.db"
    broken.write_text("not a database", encoding="utf-8")
    with pytest.raises(ConversationStoreError, match="conversations.db"):
        FeedbackStore(ConversationStore(broken)).all()
