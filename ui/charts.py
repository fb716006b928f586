"""The app's charts, built from a trace: pure functions, so they are tested without a browser or a model."""

from __future__ import annotations

import altair as alt
import pandas as pd

from engines.trace import SpanRecord, Trace
from engines.tracing.recorder import STEP_PREFIX, is_stage, outermost

CHOSEN, OTHER = "#e4572e", "#9db4c0"


def _height(rows: int) -> int:
    return 50 + 34 * rows


def route_chart(trace: Trace) -> alt.Chart:
    """Every candidate's score, the chosen source highlighted."""
    scores = pd.DataFrame([c.model_dump() for c in trace.route.candidates])
    scores["chosen"] = scores["name"] == trace.route.chosen
    # Cosines sit close together (0.7-0.9): an axis from zero would hide the differences the route turned on.
    domain = [round(scores["score"].min() - 0.05, 2), round(scores["score"].max() + 0.01, 2)]
    return (
        alt.Chart(scores)
        .mark_bar(clip=True)
        .encode(
            x=alt.X("score:Q", scale=alt.Scale(domain=domain)),
            y=alt.Y("name:N", sort="-x", title=None),
            color=alt.Color("chosen:N", scale=alt.Scale(domain=[True, False], range=[CHOSEN, OTHER]), legend=None),
            tooltip=["name", "score"],
        )
        .properties(height=_height(len(scores)))
    )


def _stage_of(record: SpanRecord, lanes: dict[str, str], by_id: dict[str, SpanRecord]) -> str:
    """The lane of the stage a model call ran in (its nearest stage ancestor), or "model" outside any stage."""
    parent = by_id.get(record.parent or "")
    while parent is not None and parent.id not in lanes:
        parent = by_id.get(parent.parent or "")
    return lanes[parent.id] if parent is not None else "model"


def waterfall(trace: Trace) -> pd.DataFrame:
    """Every stage on a time axis (a lane each, in the order they started) and the model calls inside them."""
    stages = sorted(outermost(trace.spans, is_stage), key=lambda s: s.start_ms)
    lanes, attempts = {}, 0
    for n, record in enumerate(stages, 1):
        attempts += record.name == "sql"
        label = f"SQL attempt {attempts}" if record.name == "sql" else record.name.replace(STEP_PREFIX, "crag ")
        lanes[record.id] = f"{n:02d} {label}"
    rows = [(lanes[s.id], "stage", s.start_ms, s.start_ms + s.duration_ms, s.duration_ms, 0) for s in stages]
    by_id = {s.id: s for s in trace.spans}
    for call in (s for s in trace.spans if s.kind == "llm"):
        tokens = call.attributes.get("model_call", {}).get("prompt_tokens_evaluated", 0)
        rows.append((_stage_of(call, lanes, by_id), "model call", call.start_ms, call.start_ms + call.duration_ms, call.duration_ms, tokens))
    return pd.DataFrame(rows, columns=["lane", "kind", "start", "end", "ms", "prompt tokens read"])


def stage_chart(trace: Trace) -> alt.Chart:
    """The waterfall: stages as grey bars, the model calls inside them drawn over them."""
    timeline = waterfall(trace)
    lanes = sorted(set(timeline["lane"]), key=lambda lane: (lane == "model", lane))
    chart = (
        alt.Chart(timeline)
        .mark_bar()
        .encode(
            x=alt.X("start:Q", title="ms from the question"),
            x2="end:Q",
            y=alt.Y("lane:N", sort=lanes, title=None),
            color=alt.Color("kind:N", scale=alt.Scale(domain=["stage", "model call"], range=[OTHER, CHOSEN])),
            tooltip=["lane", "kind", "start", "ms", "prompt tokens read"],
        )
    )
    return chart.properties(height=_height(len(lanes)))


def result_chart(trace: Trace) -> alt.Chart | None:
    """A bar per row when the SQL result is a label and a number, in either order (a count per city, revenue
    per month: the model writes `COUNT(*), city` as often as `city, COUNT(*)`); else None."""
    frame = pd.DataFrame(trace.rows, columns=trace.columns or None)
    if len(frame) < 2 or frame.shape[1] != 2:
        return None
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    if numeric.count(True) != 1:
        return None
    label, value = frame.columns[::-1] if numeric[0] else frame.columns
    # Renamed because SQL column names like COUNT(*) or o.total are not valid Altair field names.
    data = frame[[label, value]].set_axis(["label", "value"], axis=1)
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(x=alt.X("value:Q", title=str(value)), y=alt.Y("label:N", sort="-x", title=str(label)), tooltip=["label", "value"])
        .properties(height=_height(min(len(data), 30)))
    )
