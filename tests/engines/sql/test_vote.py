"""Execution-guided voting: which of several queries' rows win (the engine's side is in test_engine.py)."""

from __future__ import annotations

from engines.sql.vote import elect


def rows(*values: int) -> dict:
    return {"result": [(v,) for v in values]}


def test_two_queries_that_agree_outvote_the_greedy_one() -> None:
    assert elect([rows(1), rows(2), rows(2)]) == (1, 2)


def test_a_tie_goes_to_the_greedy_query() -> None:
    assert elect([rows(1), rows(2), rows(3)]) == (0, 1)


def test_rows_in_another_order_are_the_same_vote() -> None:
    assert elect([rows(1), rows(2, 3), rows(3, 2)]) == (1, 2)


def test_rows_beat_no_rows_and_failed_queries_do_not_vote() -> None:
    assert elect([rows(), None, rows(4)]) == (2, 1)
    assert elect([None, rows(), None]) == (1, 1)
    assert elect([None, None]) == (0, 0)
