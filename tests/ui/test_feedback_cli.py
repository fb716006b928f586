"""`ragrouter feedback` on a kept trace: no model loads; every bad input is one line and exit 2, and nothing is kept."""

import json
import os
import uuid
from pathlib import Path

import pytest

from engines.conversation.store import ConversationStore
from engines.feedback.store import FeedbackStore
from engines.trace import RouteRecord, Trace
from tests.ui.test_api import _sources
from tests.ui.test_cli import run


@pytest.fixture()
def kept(tmp_path: Path) -> tuple[dict, str, FeedbackStore]:
    """A state folder holding one answer from the web, and the CLI's environment on it."""
    store = ConversationStore(tmp_path / "state" / "conversations.sqlite")
    route = RouteRecord(chosen="web", candidates=[], reason="", selector="embedding")
    trace = Trace(trace_id=uuid.uuid4().hex, question="How many orders are there?", standalone_question="How many orders are there?", route=route)
    store.keep(trace)
    env = {**os.environ, "RAGROUTER_STATE_DIR": str(tmp_path / "state"), "RAGROUTER_SOURCES_FILE": str(_sources(tmp_path))}
    return env, trace.trace_id, FeedbackStore(store)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["maybe"], "'maybe' is not a rating"),
        (["down", "--source", "nowhere"], "'nowhere' is not a source"),
        (["up", "--aspect", "tone"], "'tone' is not an aspect"),
        (["up", "--aspect", "sql"], "did not come from a database"),
    ],
)
def test_bad_feedback_exits_2_with_what_to_fix_and_keeps_nothing(kept, args: list[str], message: str) -> None:
    env, trace_id, store = kept
    result = run(env, "feedback", trace_id, *args)
    assert result.returncode == 2 and message in result.stderr
    assert store.all() == []


def test_a_route_correction_is_kept_taken_back_and_exported(kept, tmp_path: Path) -> None:
    env, trace_id, store = kept
    assert store.conversations.path.is_file()
    given = run(env, "feedback", trace_id, "down", "--source", "shop", "--comment", "a database question")
    assert given.returncode == 0 and "route: kept" in given.stderr
    [item] = store.all()
    assert (item.aspect, item.rating, item.correction, item.comment, item.origin) == ("route", -1, "shop", "a database question", "cli")
    run(env, "feedback", "export", "--out", str(tmp_path / "out"))
    cases = [json.loads(line) for line in (tmp_path / "out" / "router.jsonl").read_text(encoding="utf-8").splitlines()]
    assert cases == [{"question": "How many orders are there?", "expected_source": "shop", "group": "feedback"}]
    assert run(env, "feedback", trace_id, "none", "--aspect", "route").returncode == 0
    assert store.all() == []
