"""Feedback on a kept trace, from the app, the CLI or the API: checked against the sources, stored, and taken in.

A route corrected to another source must name a configured one; SQL feedback is for answers from a database,
and a corrected SQL must be one that database's guard would run. A running router takes feedback in at once
(`take_in`); one started later reads it all when it is built.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

from engines.conversation.store import ConversationStoreError
from engines.feedback.cases import confirmed_sql, route_corrections
from engines.feedback.store import ASPECTS, DOWN, UP, Feedback, FeedbackStore
from engines.routing.router import RagRouter
from engines.sources import Source, SqlSource
from engines.sql.database import GuardedSQLDatabase, open_engine
from engines.sql.knowledge import example_node
from engines.trace import Trace
from tools.build import built_sources

log = logging.getLogger(__name__)
RATINGS = {"up": UP, "down": DOWN, None: None}
FEEDBACK_ORIGIN = "feedback"  # the SQL knowledge's entries from confirmed and corrected SQL


class FeedbackError(ValueError):
    """Feedback that cannot be taken as given; the message says what to change."""


class UnknownTraceError(LookupError):
    """No kept answer has this trace id."""


@dataclass
class Verdict:
    """What a person says about one aspect of an answer: 👍/👎 (or nothing), the right source or SQL, a comment."""

    aspect: str = "answer"
    rating: str | None = None
    correction: str | None = None
    comment: str | None = None


def give_feedback(
    store: FeedbackStore, trace_id: str, verdicts: list[Verdict], origin: str, sources: list[Source], sql_timeout_s: float
) -> list[Feedback | None]:
    """Check every verdict on the kept trace, then store them all (none when one is wrong)."""
    trace = store.conversations.trace(trace_id)
    if trace is None:
        raise UnknownTraceError(f"no kept answer has the trace id '{trace_id}'")
    for verdict in verdicts:
        _check(verdict, trace, sources, sql_timeout_s)
    return [store.give(trace, v.aspect, RATINGS[v.rating], _stripped(v.correction), _stripped(v.comment), origin) for v in verdicts]


def _stripped(text: str | None) -> str | None:
    return (text or "").strip() or None


def _check(verdict: Verdict, trace: Trace, sources: list[Source], sql_timeout_s: float) -> None:
    if verdict.aspect not in ASPECTS:
        raise FeedbackError(f"'{verdict.aspect}' is not an aspect of an answer: use one of {', '.join(ASPECTS)}")
    if verdict.rating not in RATINGS:
        raise FeedbackError(f"'{verdict.rating}' is not a rating: use up, down or none (to take feedback back)")
    correction = _stripped(verdict.correction)
    names = {s.name: s for s in sources}
    if verdict.aspect == "route" and correction and correction not in names:
        raise FeedbackError(f"'{correction}' is not a source; the sources are {', '.join(names)}")
    if verdict.aspect == "sql":
        source = names.get(trace.route.chosen if trace.route else "")
        if not isinstance(source, SqlSource) or not trace.sql_attempts:
            raise FeedbackError("this answer did not come from a database: SQL feedback is for answers a query made")
        if correction:
            database = GuardedSQLDatabase(open_engine(source, sql_timeout_s), row_limit=1)
            try:
                database.guarded(correction)  # only SQL the guard would run is worth keeping
            except ValueError as err:
                raise FeedbackError(f"the corrected SQL was not kept: {err}") from err
            finally:
                database.engine.dispose()


def take_in(router: RagRouter, store: FeedbackStore) -> None:
    """Route by every route correction, and give each database the SQL confirmed or corrected for it as examples."""
    try:
        items = store.all()
    except ConversationStoreError as err:  # answering goes on without what feedback taught
        log.warning("feedback not taken in: %s", err)
        return
    corrections = route_corrections(items)
    router.embedding_selector.learn(corrections.examples, corrections.negatives)
    examples = defaultdict(list)
    for item, sql in confirmed_sql(items):
        examples[item.source].append(example_node(item.question, sql, FEEDBACK_ORIGIN))
    for tool in built_sources(router):
        if tool.knowledge is not None:
            tool.knowledge.sync(FEEDBACK_ORIGIN, examples.get(tool.source.name, []))
