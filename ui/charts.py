"""The app's charts, built from a trace: pure functions, so they are tested without a browser or a model."""

from __future__ import annotations

import altair as alt
import pandas as pd

from engines.trace import Trace

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


# The documents and web paths' stages, in the order they run (engines/answers/citations.py).
ANSWER_STAGES = ("web", "retrieve", "rerank", "compress", "generate")


def stages(trace: Trace) -> pd.DataFrame:
    """Where the time went: the route, then each step of the path that answered (or the answer as one stage)."""
    rows = [("route", trace.timings_ms.get("route", 0.0))]
    if trace.crag:
        rows += [(step["action"], step["ms"]) for step in trace.crag.steps]
    elif trace.sql_attempts:
        rows += [(f"SQL attempt {n}", a.ms) for n, a in enumerate(trace.sql_attempts, 1)]
    elif timed := [(name, trace.timings_ms[name]) for name in ANSWER_STAGES if name in trace.timings_ms]:
        rows += timed
    else:
        rows.append(("answer", trace.timings_ms.get("answer", 0.0)))
    return pd.DataFrame(rows, columns=["stage", "ms"])


def stage_chart(trace: Trace) -> alt.Chart:
    timeline = stages(trace)
    chart = alt.Chart(timeline).mark_bar().encode(x="ms:Q", y=alt.Y("stage:N", sort=None, title=None), tooltip=["stage", "ms"])
    return chart.properties(height=_height(len(timeline)))


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
