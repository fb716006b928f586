"""What feedback teaches: regression cases in the formats `ragrouter eval router|sql --questions` read, the
triage list of bare 👎s, and the corrections the router and the SQL knowledge take in.

Only what a person vouched for becomes an expected answer: a 👍 on an answer or a route (its source was right),
a route corrected to another source, a SQL confirmed or corrected. A 👎 without a correction says something is
wrong but not what is right; it waits in the triage list.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from engines.feedback.store import DOWN, Feedback


@dataclass
class RouteCorrections:
    """Questions a person routed elsewhere: each enters the right source's examples and, as a negative, the
    probe of the source it wrongly went to."""

    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    negatives: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def _latest(items: list[Feedback]) -> list[Feedback]:
    """One verdict per question and aspect: the newest (feedback comes oldest first)."""
    return list({(f.question, f.aspect): f for f in items}.values())


def router_cases(items: list[Feedback]) -> list[dict]:
    vouched = [f for f in _latest(items) if f.aspect in ("route", "answer") and f.confirmed]
    expected = {f.question: f.correction if f.aspect == "route" and f.correction else f.source for f in vouched}
    return [{"question": q, "expected_source": s, "group": "feedback"} for q, s in expected.items()]


def sql_cases(items: list[Feedback]) -> list[dict]:
    return [{"question": f.question, "db": f.source, "gold_sql": gold} for f, gold in confirmed_sql(items)]


def confirmed_sql(items: list[Feedback]) -> list[tuple[Feedback, str]]:
    """Each SQL verdict a person vouched for, with the SQL it vouches for (the correction, else the SQL run)."""
    vouched = [(f, f.correction or f.sql) for f in _latest(items) if f.aspect == "sql" and f.confirmed]
    return [(f, sql) for f, sql in vouched if sql]


def triage(items: list[Feedback]) -> list[dict]:
    """Each 👎 that names nothing right (on no aspect of its answer), for a person to look into."""
    corrected = {f.trace_id for f in items if f.correction}
    return [
        {"trace_id": f.trace_id, "aspect": f.aspect, "question": f.question, "source": f.source, "comment": f.comment, "created": f.created}
        for f in items
        if f.rating == DOWN and f.trace_id not in corrected
    ]


def route_corrections(items: list[Feedback]) -> RouteCorrections:
    corrections = RouteCorrections()
    for f in _latest(items):
        if f.aspect == "route" and f.correction and f.correction != f.source:
            corrections.examples[f.correction].append(f.question)
            corrections.negatives[f.source].append(f.question)
    return corrections
